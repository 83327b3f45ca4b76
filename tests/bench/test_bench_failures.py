"""Candidates that cannot run become failed results with their cause; the sweep goes on."""

from __future__ import annotations

import pytest

from edgepick.bench.runner import run_bench
from edgepick.bench.sweeps import BenchRequest
from edgepick.errors import EdgepickError
from edgepick.records.candidate import RuntimeSettings
from edgepick.inputs import resolve_ref
from edgepick.store import ResultStore


def test_truncated_file_and_memory_limit_fail_while_the_others_complete(
        tiny_model, smollm2_q4_1, tmp_path, store_path):
    truncated = tmp_path / "truncated.gguf"
    with open(tiny_model, "rb") as src:
        truncated.write_bytes(src.read(20 * 2**20))  # header intact, tensor data cut short
    # At 8192 tokens of context SmolLM2's 30-layer KV cache alone is ~190 MB: over a 260 MiB
    # budget once weights and runtime are in, while the 2-block model needs ~160 MB in all.
    # A name that resolves to nothing fails where it is given, before any measuring starts.
    with pytest.raises(EdgepickError, match="no such file"):
        resolve_ref("no-such-model.gguf")
    refs = [resolve_ref(m) for m in (str(truncated), smollm2_q4_1, tiny_model)]
    req = BenchRequest(models=refs, settings=RuntimeSettings(n_ctx=8192), prompt_lengths=[16],
                       gen_tokens=4, warmup=0, repeats=1, mem_limit=260 * 2**20, timeout_s=300,
                       threads=[1])
    with ResultStore(store_path) as st:
        results = run_bench(req, st)
        by_model = {r.model: r for r in results}
        bad = by_model[str(truncated)]
        assert bad.status == "failed" and "could not load" in bad.error
        oom = by_model[smollm2_q4_1]
        assert oom.status == "failed" and "exceeded the memory limit of 260 MiB" in oom.error
        good = by_model[tiny_model]
        assert good.status == "ok" and good.error is None
        assert good.metric("peak_rss_swap_bytes") < 260 * 2**20
        assert good.metric("decode_tps") > 0
        # Failures are stored too.
        assert st.count("bench") == 3
        stored = st.get("bench", oom.key)
        assert stored["status"] == "failed" and stored["error"] == oom.error
    # With room to spare, the model that was over budget runs: failures are retried.
    req2 = req.model_copy(update={"models": [refs[1]], "mem_limit": None})
    with ResultStore(store_path) as st:
        (again,) = run_bench(req2, st)
        assert again.status == "ok" and not again.cached, again.error
        assert st.get("bench", oom.key)["status"] == "ok" and st.count("bench") == 3


def test_a_worker_timeout_is_a_failed_result(tiny_model, store_path):
    # A sustained run gets --timeout on top of its duration; its startup alone overruns 0.01 s.
    req = BenchRequest(models=[resolve_ref(tiny_model)], prompt_lengths=[16], gen_tokens=4, warmup=0,
                       repeats=1, sustain_s=3, timeout_s=0.01, threads=[1])
    with ResultStore(store_path) as st:
        results = run_bench(req, st)
    assert [r.sweep for r in results] == ["prompt_length", "sustain"]
    assert all(r.status == "failed" and "timed out after 3 s" in r.error for r in results[1:])
