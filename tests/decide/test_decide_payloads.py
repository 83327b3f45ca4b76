"""The adapters over realistic stored payloads (tests/decide_payloads.py)."""

from __future__ import annotations

from decide_payloads import filled_store
from edgepick.records.bench import BenchResult
from edgepick.store import ResultStore


def test_summaries_carry_every_stored_figure(store_path):
    from edgepick.decide.summary import build_summaries

    with filled_store(store_path) as store:
        rows = {s.candidate: s for s in build_summaries(store)}
    fast = rows["smol-q4_0"]
    assert fast.ttft_p50_ms == 90 and fast.ttft_p99_ms == 90 * 1.4
    assert fast.decode_tps == 62
    assert [p.x for p in fast.ttft_curve] == [128, 512]
    assert fast.peak_rss_bytes == 161 * 2**20  # the highest of every configuration
    assert abs(fast.decay - 0.08) < 1e-9 and len(fast.sustained_curve) == 3
    assert fast.tasks["extraction"].score == 0.40
    assert abs(fast.tasks["extraction"].gap_abs - 0.12) < 1e-9
    assert fast.format_compliance == 0.93 and fast.badcases[0]["item_id"] == "ex-007"
    # nothing stored for fidelity or fit: stays None ("not measured"), never invented
    assert fast.kld_mean is None and fast.predicted_peak_bytes is None and fast.params is None


def test_failed_bench_is_kept_as_error(store_path):
    from edgepick.decide.summary import build_summaries

    with ResultStore(store_path) as store:
        bad = BenchResult(model="/m/big.gguf", model_path="/m/big.gguf", backend="llama_cpp",
                          sweep="prompt_length", config="c", key="k", settings={},
                          status="failed", error="killed: out of memory (limit 2 GiB)")
        store.put("bench", "k", bad.model_dump(mode="json"))
        (s,) = build_summaries(store)
    assert s.bench_error == "killed: out of memory (limit 2 GiB)"
