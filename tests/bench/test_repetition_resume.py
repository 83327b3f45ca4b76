"""Gated points in a sweep: which configuration gets a stopping rule, when a stored row serves a
rerun, what the stored row says about its repetitions, and the plan's limits by length."""

from __future__ import annotations

import itertools

from edgepick.bench import runner
from edgepick.bench.measure import repeat_runs
from edgepick.bench.metrics import aggregate
from edgepick.bench.stopping import Limit
from edgepick.bench.sweeps import BenchRequest, expand
from edgepick.records.bench import BenchResult, Repetitions
from edgepick.records.model_ref import ModelRef
from edgepick.store import ResultStore

DECODE = Limit(gate="decode_tps_min", metric="decode_tps", direction="min", limit=10)


def _req(limit: float = 10, most: int = 12) -> BenchRequest:
    lim = DECODE.model_copy(update={"limit": limit})
    return BenchRequest(models=[ModelRef.endpoint("http://127.0.0.1:9/v1")],
                        prompt_lengths=[16, 64], gen_tokens=9, repeats=5, max_repeats=most,
                        concurrency=[1, 2], limits={16: [lim]})


def test_only_the_gated_concurrency_1_point_gets_a_rule():
    rules = {(c.sweep, c.workload.prompt_tokens, c.workload.concurrency): c.rule
             for c in expand(_req())}
    assert rules[("prompt_length", 16, 1)].limits[0].gate == "decode_tps_min"
    assert rules[("prompt_length", 16, 1)].most == 12
    assert rules[("prompt_length", 64, 1)] is None  # no limit at this length: fixed count
    assert rules[("concurrency", 16, 2)] is None
    # a maximum no larger than the count: the fixed count (a plan's way to keep one repeat)
    assert all(c.rule is None for c in expand(_req(most=5)))


def test_the_key_does_not_change_with_limits_or_maximum():
    plain = BenchRequest(models=_req().models, prompt_lengths=[16, 64], gen_tokens=9,
                         repeats=5, concurrency=[1, 2])
    assert [c.key for c in expand(plain)] == [c.key for c in expand(_req(limit=3, most=40))]


def _fake_measure(calls: list, speeds):
    """measure_config without a worker: the scripted speeds through the real loop."""
    def fake(cfg, req, *, worker=None):
        calls.append(cfg.label)
        it = itertools.cycle(speeds)
        from edgepick.backends.base import Generation

        def one_run():
            tps = next(it)
            return [Generation(text="", prompt_tokens=16, generated_tokens=9,
                               token_times=[0.1 + i / tps for i in range(9)])]
        raw = repeat_runs(one_run, cfg.workload.repeats, cfg.rule)
        return BenchResult(model=cfg.model, model_path=cfg.model, backend=cfg.backend,
                           sweep=cfg.sweep, config=cfg.label, key=cfg.key, settings={},
                           status="ok", metrics=aggregate(raw, None, None),
                           repetitions=Repetitions.model_validate(raw["repetitions"]))
    return fake


def _gated(results):
    return next(r for r in results if r.config.endswith("prompt=16"))


def test_a_rerun_reuses_what_is_settled_and_measures_again_what_is_not(monkeypatch, tmp_path):
    calls: list = []
    monkeypatch.setattr(runner, "measure_config", _fake_measure(calls, [20, 21, 22]))
    with ResultStore(tmp_path / "s.sqlite") as store:
        first = runner.run_bench(_req(), store)
        assert _gated(first).repetitions.model_dump()["stopped"] == "settled"
        assert _gated(first).repetitions.ran == 5
        n = len(calls)
        # the same limits: every row is served from the store (resumable as before)
        again = runner.run_bench(_req(), store)
        assert len(calls) == n and all(r.cached for r in again)
        # a limit the stored five repetitions cannot settle: that point alone runs again
        moved = runner.run_bench(_req(limit=21), store)
        assert len(calls) == n + 1 and calls[-1].endswith("prompt=16")
        assert _gated(moved).repetitions.stopped == "max" and _gated(moved).repetitions.ran == 12
        # ...and once it ran the maximum it is not run again for the same rule
        runner.run_bench(_req(limit=21), store)
        assert len(calls) == n + 1


def test_rows_stored_before_repetitions_were_recorded_still_load():
    old = {"model": "m", "model_path": "m", "backend": "llama_cpp", "sweep": "prompt_length",
           "config": "threads=1 prompt=16", "key": "k", "settings": {}, "status": "ok",
           "metrics": {"decode_tps": {"median": 20.0, "min": 19.0, "max": 21.0, "unit": "tok/s",
                                      "n": 5}}}
    res = BenchResult.model_validate(old)
    assert res.repetitions is None and res.metrics["decode_tps"].median_low is None
    assert res.summary()["repetitions"] is None


def test_the_plan_puts_each_limit_on_the_length_decide_reads_it_at():
    from edgepick.decide.scenarios import Scenario
    from edgepick.plan.bench_limits import bench_limits

    sc = Scenario.model_validate({
        "name": "t", "context_tokens": {"p50": 128, "p95": 512},
        "output_tokens": {"p50": 40, "p95": 90},
        "constraints": {"ttft_p50_ms_max": 800, "decode_tps_min": 15, "e2e_p50_ms_max": 3000,
                        "e2e_p95_ms_max": 6000, "ttft_p99_ms_max": 2000,
                        "peak_memory_max": "1GiB"}})
    got = {n: [(lim.gate, lim.metric, lim.out_tokens) for lim in lims]
           for n, lims in bench_limits(sc, [128, 512, 1024]).items()}
    # tails and memory are not medians: more repetitions do not settle them
    assert got == {128: [("ttft_p50_ms_max", "ttft_ms", None),
                         ("decode_tps_min", "decode_tps", None),
                         ("e2e_p50_ms_max", "answer_ms", 40)],
                   512: [("e2e_p95_ms_max", "answer_ms", 90)]}
    # no context percentiles: the shortest prompt; no answer length: no end-to-end limit
    plain = Scenario.model_validate({"name": "t", "constraints": {
        "decode_tps_min": 15, "e2e_p50_ms_max": 3000}})
    assert {n: [x.gate for x in v] for n, v in bench_limits(plain, [512, 128]).items()} == \
        {128: ["decode_tps_min"]}


def test_a_real_engine_far_from_its_limits_stops_at_five(tiny_model):
    """The tiny model through its worker: any decode speed beats 0.001 tok/s and none reaches
    a TTFT of one nanosecond, so both limits settle at the minimum, one pass and one fail."""
    from edgepick.inputs import resolve_ref

    lims = [DECODE.model_copy(update={"limit": 0.001}),
            Limit(gate="ttft_p50_ms_max", metric="ttft_ms", direction="max", limit=1e-6)]
    req = BenchRequest(models=[resolve_ref(tiny_model)], prompt_lengths=[16], gen_tokens=8,
                       warmup=1, repeats=5, max_repeats=9, threads=[1], limits={16: lims})
    res = runner.measure_config(expand(req)[0], req)
    assert res.status == "ok", res.error
    assert (res.repetitions.ran, res.repetitions.stopped) == (5, "settled")
    assert [j.verdict for j in res.repetitions.limits] == ["pass", "fail"]
    m = res.metrics["decode_tps"]
    assert m.n == 5 and (m.median_low, m.median_high) == (m.min, m.max)  # five: [min, max]
    assert res.summary()["repetitions"]["ran"] == 5


def test_a_run_says_which_point_ran_the_maximum_undetermined(monkeypatch):
    from types import SimpleNamespace

    from edgepick.plan.stages import _bench_group

    calls: list = []
    fake = _fake_measure(calls, [9.5, 10.5])
    cfg = next(c for c in expand(_req(most=7)) if c.rule is not None)
    res = fake(cfg, None)
    st = SimpleNamespace(notes=[])
    _bench_group(st, [res], {})
    assert res.repetitions.stopped == "max"
    assert len(st.notes) == 1 and "ran the most repetitions (7" in st.notes[0]
    assert "decode_tps_min still undetermined" in st.notes[0]


def test_a_plan_below_five_repeats_is_a_smoke_run_unless_it_sets_a_maximum():
    """repeats < 5 without max_repeats: the fixed count (no interval settles before five);
    the default plan's 5 repeats may go on to 20; an explicit maximum always wins."""
    from edgepick.plan.model import BenchSection

    assert BenchSection(repeats=1).repeat_cap == 1
    assert BenchSection(repeats=5).repeat_cap == 20
    assert BenchSection(repeats=1, max_repeats=12).repeat_cap == 12
    assert BenchSection(repeats=5, max_repeats=5).repeat_cap == 5
