"""The report's predicted-vs-measured decode compares like with like: the fit's estimate read at
the KV fill, threads and micro-batch of the bench measurement beside it (issue 14: fit predicted
at half the context while bench decoded after a 128-token prompt)."""

import pytest

from edgepick.decide.adapters import bench_adapter, fit_adapter
from edgepick.devices.catalog import catalog
from edgepick.fit.planner import fit_one
from edgepick.models.gguf_info import gguf_spec
from edgepick.records.decision import CandidateSummary
from decide_payloads import bench


def _bench(path: str, threads: int = 2, n_ubatch: int = 512):
    return bench(path, settings={"threads": threads, "n_ubatch": n_ubatch, "prompt_tokens": 128,
                                 "gen_tokens": 128, "concurrency": 1},
                 metrics={"decode_tps": dict(median=50.0, min=49.0, max=51.0)})


@pytest.fixture(scope="module")
def fit_payload(smollm2_q4_1):
    # this host (measured here): the AVX2 constants and their band, at the bench's 2 threads
    laptop = next(d for d in catalog().values() if "avx2" in d.cpu_features)
    laptop = laptop.model_copy(update={"measured": True})
    est = fit_one(gguf_spec(smollm2_q4_1), None, 8192, laptop)
    at_bench = fit_one(gguf_spec(smollm2_q4_1), None, 8192, laptop, fill=128 + 64)
    payload = est.model_dump(mode="json")
    payload["model"] = smollm2_q4_1
    return payload, est, at_bench


@pytest.mark.parametrize("fit_first", [True, False])
def test_prediction_is_read_at_the_bench_fill_whatever_the_order(fit_payload, fit_first):
    payload, est, at_bench = fit_payload
    s = CandidateSummary(candidate="c", model=payload["model"])
    steps = [lambda: fit_adapter(payload, lambda *a, **k: s),
             lambda: bench_adapter(_bench(payload["model"]), lambda *a, **k: s)]
    for step in steps if fit_first else steps[::-1]:
        step()
    assert s.predicted_decode_tps == pytest.approx(at_bench.decode_tps_estimate, rel=0.01)
    assert s.predicted_decode_tps > est.decode_tps_estimate * 1.2  # not the half-context figure


def test_no_prediction_for_a_bench_at_another_thread_count(fit_payload):
    payload, _, _ = fit_payload
    s = CandidateSummary(candidate="c", model=payload["model"])
    fit_adapter(payload, lambda *a, **k: s)
    bench_adapter(_bench(payload["model"], threads=4), lambda *a, **k: s)
    assert s.decode_tps == 50.0 and s.predicted_decode_tps is None


def test_the_report_shows_the_prediction_with_its_band(fit_payload):
    from edgepick.records.decision_texts import DecisionTexts, ScenarioFacts
    from edgepick.report.tables import predicted_table

    payload, _, _ = fit_payload
    s = CandidateSummary(candidate="c", model=payload["model"])
    fit_adapter(payload, lambda *a, **k: s)
    bench_adapter(_bench(payload["model"]), lambda *a, **k: s)
    lo, hi = (s.predicted_decode_tps * r for r in s.predicted_decode_band)
    assert lo < s.predicted_decode_tps < hi
    _, rows = predicted_table([s], DecisionTexts(scenario=ScenarioFacts(name="x")), "en")
    assert f"({lo:.0f}-{hi:.0f})" in rows[0][4]
