"""The stages run one by one, each as its own command, into one store: decide then has what a
plan run would give it, for the same candidate (issue 14)."""

from __future__ import annotations

import json
from pathlib import Path

from edgepick.llama_tools import tool_path


def _quantizer() -> bool:
    try:
        return Path(tool_path("llama-quantize")).is_file()
    except Exception:  # noqa: BLE001 - not built: the other stages are still tested
        return False


def test_fit_quantize_bench_eval_fidelity_standalone_then_decide(cli, tmp_path):
    store = str(tmp_path / "s.sqlite")
    model = "tiny"
    if _quantizer():
        q = cli("quantize", "-m", "tiny", "--quant", "Q8_0", "--out", str(tmp_path / "q"),
                "--store", store, "--json")
        assert q.returncode == 0, q.stderr
        model = json.loads(q.stdout)[0]["path"]
    steps = [
        ["fit", "-m", model, "--ctx", "512", "--device", "raspberry-pi-5", "--json"],
        ["bench", "-m", model, "--ctx", "512", "--prompt-lengths", "16", "--gen", "4",
         "--warmup", "0", "--repeats", "1", "--threads", "1", "--json"],
        ["eval", "-m", model, "-r", "tiny", "--limit", "2", "--ctx", "512", "--threads", "1",
         "--json"],
        ["fidelity", "-m", model, "-r", "tiny", "--ctx", "64", "--chunks", "1", "--json"],
    ]
    for args in steps:
        r = cli(*args, "--store", store)
        assert r.returncode == 0, (args[0], r.stderr)
    d = cli("decide", "--store", store, "--json")
    assert d.returncode == 0, d.stderr
    data = json.loads(d.stdout)
    (s,) = data["candidates"]
    assert s["predicted_peak_bytes"] and s["fit_verdict"]  # fit
    assert s["decode_tps"] and s["peak_rss_bytes"]  # bench
    assert s["tasks"] and s["quality_overall"] is not None  # eval
    assert s["kld_mean"] is not None  # fidelity
    assert set(data["runs"]) >= {"fit", "bench", "eval", "fidelity"}
    runs = json.loads(cli("runs", "--store", store, "--json").stdout)
    assert len(runs) == len(steps) + _quantizer()
    if _quantizer():
        assert s["quant"] == "Q8_0" and "quantize" in data["runs"]
