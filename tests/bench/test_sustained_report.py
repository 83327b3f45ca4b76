"""A sustained run stores its timeline and the report draws it (speed, with temperature and
power on a second axis where the device has them). The run on SmolLM2 is `slow`; its length
is a parameter the checks do not depend on (ten windows from 10 s up, the memory slope over
every request), so the suite runs 10 s of it (ten 1-s windows, the fewest a window may last)
and the 2-minute run is one variable away:

    EDGEPICK_SUSTAIN_S=120 .venv/bin/python -m pytest tests/bench/test_sustained_report.py -m slow

and the same path runs for a few seconds on the tiny model in the default suite."""

from __future__ import annotations

import json
import os

import pytest

from edgepick.store import ResultStore


def _sustain_and_report(cli, model: str, seconds: float, store_path: str, out) -> dict:
    # one timed run of the prompt sweep beside the sustained run: the report's sustained
    # section is drawn from the sustained run alone, and five repeats on SmolLM2 cost seconds
    proc = cli("bench", "--model", model, "--prompt-lengths", "64", "--gen", "32",
               "--repeats", "1",
               "--sustain", f"{seconds:g}", "--threads", "1", "--quiet-wait", "0",
               "--store", store_path, "--json")  # in this process: no time limit, no new Python
    assert proc.returncode == 0, proc.stderr
    assert "power: no power counter here" in proc.stderr or "power: " in proc.stderr
    sus = [r for r in json.loads(proc.stdout) if r["sweep"] == "sustain"][0]
    with ResultStore(store_path) as st:
        stored = st.get("bench", sus["key"])
    timeline = stored["sustain"]["timeline"]
    assert len(timeline) == len(stored["sustain"]["window_tps"]) >= 2
    assert all(p["decode_tps"] >= 0 and p["anon_swap_bytes"] for p in timeline), timeline
    rep = cli("report", "--store", store_path, "--out", str(out), "--lang", "en")
    assert rep.returncode == 0, rep.stderr
    html = (out / "report.en.html").read_text(encoding="utf-8")
    md = (out / "report.en.md").read_text(encoding="utf-8")
    assert "Sustained run: speed" in html and "<svg" in html
    assert "Throttling onset" in md and "Memory growth" in md and "Average power" in md
    return stored


def test_tiny_sustained_timeline_drawn(cli, tiny_model, store_path, tmp_path):
    stored = _sustain_and_report(cli, tiny_model, 3, store_path, tmp_path / "report")
    assert stored["energy"]["power_w"] is None  # no counter here: unmeasured, not 0


@pytest.mark.slow
def test_sustained_run_on_smollm2(cli, smollm2_q4_1, store_path, tmp_path):
    seconds = float(os.environ.get("EDGEPICK_SUSTAIN_S", "10"))
    stored = _sustain_and_report(cli, smollm2_q4_1, seconds, store_path, tmp_path / "report")
    s = stored["sustain"]
    assert s["duration_s"] == seconds and len(s["timeline"]) == 10
    assert s["memory_growth_mib_per_1k"] is not None and not s["memory_growth_flagged"]
