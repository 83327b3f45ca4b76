"""What decide reads: the latest run by default, runs combined on purpose with --run, and never
rows of one candidate measured under different settings merged in silence."""

from __future__ import annotations

import pytest
from decide_payloads import (ACCURATE, FAST, TASKS_FAST, bench_rows, cand_eval,
                                  eval_result)

from edgepick.decide.selection import select
from edgepick.decide.summary import build_summaries
from edgepick.errors import EdgepickError
from edgepick.store import ResultStore


def _bench(store, model: str, peak: int, n_ctx: int, run: str) -> int:
    rid = store.begin_run(run)
    for r in bench_rows(model, ttft_ms=90, decode=60, peak=peak, decay_pct=None):
        r.settings["n_ctx"] = n_ctx
        r.key = f"{r.key}-{n_ctx}"  # another context is another stored configuration
        store.put("bench", r.key, r.model_dump(mode="json"))
    return rid


def test_peak_memory_comes_from_the_latest_run_not_the_history(store_path):
    with ResultStore(store_path) as st:
        old = _bench(st, FAST, 900 * 2**20, 8192, "bench --ctx 8192")
        new = _bench(st, FAST, 150 * 2**20, 2048, "bench --ctx 2048")
        (s,) = build_summaries(st)
        assert s.peak_rss_bytes == 151 * 2**20  # this run's own largest prompt, not 900 MiB
        (s,) = build_summaries(st, selection=select(st, [old]))
        assert s.peak_rss_bytes == 901 * 2**20
        with pytest.raises(EdgepickError) as err:
            select(st, [old, new])
    msg = str(err.value)
    assert f"run {old} and run {new}" in msg and "n_ctx 8192 vs 2048" in msg


def test_latest_run_takes_its_candidates_each_figure_from_its_latest_run(store_path):
    with ResultStore(store_path) as st:
        _bench(st, FAST, 150 * 2**20, 2048, "bench fast")
        _bench(st, ACCURATE, 230 * 2**20, 2048, "bench accurate")
        ev = st.begin_run("eval fast")
        st.put("eval", "e1", eval_result([cand_eval(FAST, "smol-q4_0", TASKS_FAST)])
               .model_dump(mode="json"))
        sel = select(st)
        (s,) = build_summaries(st, selection=sel)
        # the eval run names one candidate; its bench figures come from the run that had them
        assert s.candidate == "smol-q4_0" and s.decode_tps == 60 and s.tasks
        assert sel.runs == {"bench": [1], "eval": [ev]}
        with pytest.raises(EdgepickError, match="no run 99"):
            select(st, [99])


def test_runs_measured_alike_combine(store_path):
    with ResultStore(store_path) as st:
        a = _bench(st, FAST, 150 * 2**20, 2048, "bench fast")
        b = st.begin_run("eval fast")
        st.put("eval", "e1", eval_result([cand_eval(FAST, "smol-q4_0", TASKS_FAST)])
               .model_dump(mode="json"))
        c = _bench(st, FAST, 150 * 2**20, 2048, "bench fast again")  # reused rows, same settings
        (s,) = build_summaries(st, selection=select(st, [a, b, c]))
        assert s.decode_tps == 60 and s.tasks


def test_two_evals_with_different_limits_latest_wins_and_combining_is_refused(
        cli, store_path):
    import json

    base = ["eval", "-m", "tiny", "-r", "tiny", "--threads", "1", "--ctx", "512",
            "--store", store_path, "--json"]
    assert cli(*base, "--limit", "2").returncode == 0
    assert cli(*base, "--limit", "3").returncode == 0
    runs = json.loads(cli("runs", "--store", store_path, "--json").stdout)
    assert [r["settings"]["limit"] for r in runs] == [2, 3]
    assert all(r["command"].startswith("edgepick eval") and r["data_sha256"] for r in runs)
    d = cli("decide", "--store", store_path, "--json")
    assert d.returncode == 0, d.stderr
    data = json.loads(d.stdout)
    assert data["runs"] == {"eval": [runs[1]["id"]]}
    (cand,) = data["candidates"]
    assert sum(t["n"] for t in cand["tasks"].values()) == 3  # the latest run's 3 items
    both = cli("decide", "--store", store_path, "--run", str(runs[0]["id"]),
               "--run", str(runs[1]["id"]))
    lines = [ln for ln in both.stderr.splitlines() if ln.strip()]
    assert both.returncode == 2 and len(lines) == 1, both.stderr
    assert f"run {runs[0]['id']} and run {runs[1]['id']}" in lines[0]
    one = cli("decide", "--store", store_path, "--run", str(runs[0]["id"]), "--json")
    (cand,) = json.loads(one.stdout)["candidates"]
    assert sum(t["n"] for t in cand["tasks"].values()) == 2


def test_one_run_under_several_settings_is_kept_and_said(store_path):
    with ResultStore(store_path) as st:
        st.begin_run("bench --threads 1,2")
        for threads in (1, 2):
            for r in bench_rows(FAST, ttft_ms=90, decode=60 + threads, peak=2**27,
                                decay_pct=None):
                r.settings["threads"] = threads
                st.put("bench", f"{r.key}-{threads}", r.model_dump(mode="json"))
        (s,) = build_summaries(st)
    assert s.decode_tps == 62
    assert any(n.startswith("bench: measured under 2 settings in one run (threads 1 vs 2)")
               for n in s.notes), s.notes
