"""A real bench of the tiny model through the CLI: curves, concurrency, sustain, JSON, CSV,
store."""

from __future__ import annotations

import csv
import json

from edgepick.store import ResultStore

METRICS = {"ttft_ms", "prefill_tps", "decode_tps", "itl_ms", "e2e_ms", "load_ms",
           "peak_rss_bytes", "peak_rss_swap_bytes"}


def test_sweep_reports_each_curve_and_reruns_from_the_store(cli, tiny_model, store_path, tmp_path):
    csv_path = tmp_path / "bench.csv"
    args = ["bench", "--model", tiny_model, "--prompt-lengths", "16,48", "--gen", "8",
            "--warmup", "1", "--repeats", "2", "--concurrency", "1,2", "--sustain", "2",
            "--threads", "1", "--store", store_path,
            "--quiet-wait", "0",  # waiting for a quiet host is tested in test_host_load.py
            "--json"]
    proc = cli(*args, "--csv", str(csv_path))
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert [(r["sweep"], r["settings"]["prompt_tokens"], r["settings"]["concurrency"])
            for r in rows] == [("prompt_length", 16, 1), ("prompt_length", 48, 1),
                               ("concurrency", 16, 2), ("sustain", 16, 1)]
    for r in rows:
        assert {"model", "settings", "status", "error", "metrics"} <= set(r)
        assert r["status"] == "ok" and r["error"] is None and not r["cached"]
        assert METRICS <= set(r["metrics"])
        for m in r["metrics"].values():
            assert {"median", "min", "max", "p99", "unit"} <= set(m)
            assert m["min"] <= m["median"] <= m["max"]
        s = r["settings"]
        assert (s["threads"], s["n_ctx"], s["kv_type"], s["seed"]) == (1, 2048, "f16", 42)
        assert s["engine_version"].startswith("llama-cpp-python")
        assert r["machine"]["load_avg_before"]
    p16, p48, conc, sus = rows
    # Each run generates exactly --gen tokens: 7 inter-token gaps per run, 2 runs.
    assert p16["metrics"]["itl_ms"]["n"] == 2 * 7
    assert p16["metrics"]["ttft_ms"]["n"] == 2 and p16["metrics"]["ttft_ms"]["p99"] is None
    # Two concurrent requests per run: twice the per-request samples, plus the aggregate.
    assert conc["metrics"]["ttft_ms"]["n"] == 4
    assert conc["metrics"]["throughput_tps"]["n"] == 2
    assert sus["sustain"]["window_s"] == 1.0 and len(sus["sustain"]["window_tps"]) == 2
    assert all(v > 0 for v in sus["sustain"]["window_tps"])
    assert sus["sustain"]["decay_pct"] is not None
    with open(csv_path, newline="") as fh:
        flat = list(csv.DictReader(fh))
    assert len(flat) == 4 and float(flat[1]["ttft_ms_median"]) > 0
    assert flat[2]["concurrency"] == "2" and flat[3]["sustain_decay_pct"] != ""
    with ResultStore(store_path) as st:
        assert st.count("bench") == 4
    # The same command again measures nothing: every row comes back from the store.
    again = cli(*args)
    assert again.returncode == 0, again.stderr
    rerun = json.loads(again.stdout)
    assert all(r["cached"] for r in rerun)
    assert [r["metrics"]["ttft_ms"]["median"] for r in rerun] == \
        [r["metrics"]["ttft_ms"]["median"] for r in rows]
    # The human table shows the curves.
    human = cli(*args[:-1])
    assert human.returncode == 0, human.stderr
    assert "vs prompt length" in human.stdout and "concurrent requests" in human.stdout
    assert "decay first→last" in human.stdout


def test_bad_sweep_values_are_one_line_errors(cli, tiny_model, store_path):
    proc = cli("bench", "--model", tiny_model, "--threads", "two", "--store", store_path)
    assert proc.returncode == 2
    assert "--threads" in proc.stderr and "Traceback" not in proc.stderr
    proc = cli("bench", "--model", tiny_model, "--mem-limit", "lots", "--store", store_path)
    assert proc.returncode == 2 and "--mem-limit" in proc.stderr


def test_concurrent_sequences_decode_like_single_ones(tiny_model):
    """Batched multi-sequence decoding must compute what one sequence alone computes."""
    from edgepick.backends import LoadOptions, get_backend
    from edgepick.bench.workload import prompt_of_length
    from edgepick.records.candidate import Candidate, RuntimeSettings

    b = get_backend("llama_cpp")
    b.load(Candidate(model=tiny_model, settings=RuntimeSettings(n_ctx=256)), LoadOptions(n_seq=3))
    try:
        prompts = [prompt_of_length(b.tokenize, n, variant=i) for i, n in enumerate((20, 33, 7))]
        assert len({tuple(p) for p in prompts}) == 3
        alone = [b.generate(p, 12, ignore_eos=True) for p in prompts]
        together = b.generate_concurrent(prompts, 12, ignore_eos=True)
        assert [g.text for g in together] == [g.text for g in alone]
        assert all(g.generated_tokens == 12 and len(g.token_times) == 12 for g in together)
        # Each sequence holds its own 256 cells: a prompt over that is refused clearly.
        too_long = prompt_of_length(b.tokenize, 300)
        try:
            b.generate_concurrent([too_long, prompts[0]], 4)
        except Exception as exc:  # noqa: BLE001
            assert "does not fit the context of 256" in str(exc)
        else:
            raise AssertionError("an over-long prompt was accepted")
    finally:
        b.unload()
