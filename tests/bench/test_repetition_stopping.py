"""When a gated point's repetitions stop (bench/stopping.py), with scripted timings: far from
its limits it stops at the minimum, on a limit it runs to the maximum, without limits it runs
its fixed count, and the stored figure gives decide the verdict the loop saw."""

from __future__ import annotations

import itertools

from edgepick.backends.base import Generation
from edgepick.bench import measure
from edgepick.bench.measure import measure_point, repeat_runs
from edgepick.bench.metrics import aggregate
from edgepick.bench.stopping import Limit, StopRule, settles
from edgepick.evaluate.intervals import verdict

GEN = 9  # tokens per scripted run


def gen(ttft_s: float, tps: float) -> Generation:
    return Generation(text="", prompt_tokens=16, generated_tokens=GEN,
                      token_times=[ttft_s + i / tps for i in range(GEN)])


def speeds(*cycle: float):
    """A run function whose decode speed cycles through `cycle` (TTFT 100 ms)."""
    it = itertools.cycle(cycle)
    return lambda: [gen(0.1, next(it))]


def rule(*limits: Limit, most: int = 20) -> StopRule:
    return StopRule(min_repeats=5, max_repeats=most, limits=list(limits))


DECODE_MIN_10 = Limit(gate="decode_tps_min", metric="decode_tps", direction="min", limit=10)
TTFT_MAX_500 = Limit(gate="ttft_p50_ms_max", metric="ttft_ms", direction="max", limit=500)


def test_a_point_clearly_above_its_limit_stops_at_the_minimum():
    out = repeat_runs(speeds(20, 21, 22), 5, rule(DECODE_MIN_10, TTFT_MAX_500))
    rep = out["repetitions"]
    assert (rep["ran"], rep["stopped"]) == (5, "settled")
    assert [j["verdict"] for j in rep["limits"]] == ["pass", "pass"]


def test_a_point_clearly_below_its_limit_stops_at_the_minimum_with_a_fail():
    out = repeat_runs(speeds(4, 5), 5, rule(DECODE_MIN_10))
    assert out["repetitions"]["ran"] == 5
    assert out["repetitions"]["limits"][0]["verdict"] == "fail"


def test_a_point_on_its_limit_runs_to_the_maximum_undetermined():
    out = repeat_runs(speeds(9.5, 10.5), 5, rule(DECODE_MIN_10, most=12))
    rep = out["repetitions"]
    assert (rep["ran"], rep["max"], rep["stopped"]) == (12, 12, "max")
    assert rep["limits"][0]["verdict"] == "undetermined"


def test_one_stray_repetition_is_outvoted_by_more_repetitions():
    # 1 slow run in 10: undetermined at 5 (not all on one side), settled once 9 of 10 agree
    it = iter([20, 20, 5, 20, 20] + [20] * 15)
    out = repeat_runs(lambda: [gen(0.1, next(it))], 5, rule(DECODE_MIN_10))
    rep = out["repetitions"]
    assert rep["stopped"] == "settled" and 5 < rep["ran"] <= 10
    assert rep["limits"][0]["verdict"] == "pass"


def test_every_limit_must_settle_before_the_loop_stops():
    # decode far above its limit, TTFT alternating around 500 ms: the TTFT keeps it going
    it = itertools.cycle([0.45, 0.55])
    out = repeat_runs(lambda: [gen(next(it), 20)], 5, rule(DECODE_MIN_10, TTFT_MAX_500, most=9))
    rep = out["repetitions"]
    assert (rep["ran"], rep["stopped"]) == (9, "max")
    assert [j["verdict"] for j in rep["limits"]] == ["pass", "undetermined"]


def test_without_limits_the_fixed_count_runs():
    for repeats in (5, 7):
        out = repeat_runs(speeds(20, 9.5), repeats, None)
        assert len(out["runs"]) == repeats
        assert out["repetitions"] == {"ran": repeats, "min": repeats, "max": repeats,
                                      "stopped": "fixed", "limits": []}
    assert len(repeat_runs(speeds(20), 5, rule())["runs"]) == 5  # a rule with no limit


def test_end_to_end_limit_combines_ttft_and_decode_as_decide_does():
    answer = Limit(gate="e2e_p50_ms_max", metric="answer_ms", direction="max", limit=2000,
                   out_tokens=50)
    # 100 ms + 50 tokens at 20-22 tok/s ≈ 2.4-2.6 s: clearly over 2 s
    rep = repeat_runs(speeds(20, 21, 22), 5, rule(answer))["repetitions"]
    assert (rep["ran"], rep["limits"][0]["verdict"]) == (5, "fail")
    assert rep["limits"][0]["low"] > 2000


def test_the_stored_figure_gives_decide_the_verdict_the_loop_saw():
    for script in (speeds(20, 21, 22), speeds(9.5, 10.5), iter_speeds([20, 20, 5] + [20] * 17)):
        r = rule(DECODE_MIN_10, TTFT_MAX_500)
        raw = repeat_runs(script, 5, r)
        stored = aggregate(raw, None, None)
        for judged in raw["repetitions"]["limits"]:
            m = stored[judged["metric"]]
            assert (m.median, m.median_low, m.median_high) == \
                (judged["value"], judged["low"], judged["high"])
            assert verdict(m.median, m.median_low, m.median_high, judged["limit"],
                           judged["direction"]) == judged["verdict"]
        assert settles(stored, r) == (raw["repetitions"]["stopped"] == "settled")


def iter_speeds(seq):
    it = iter(seq)
    return lambda: [gen(0.1, next(it))]


class FakeEngine:
    """Just enough of a Backend for measure_point in this process."""

    runs = 0

    @classmethod
    def supports(cls, capability: str) -> bool:
        return False  # not in process: no context check, no memory split

    def load(self, candidate, options=None) -> float:
        return 0.0

    def unload(self) -> None:
        pass

    def engine_version(self) -> str:
        return "fake"

    def server_settings(self):
        return None

    def tokenize(self, text: str, **_):
        return list(range(len(text.split())))

    def generate(self, prompt, max_tokens, **_):
        FakeEngine.runs += 1
        return gen(0.1, 20.0)


def test_measure_point_warms_up_then_repeats_until_settled(monkeypatch):
    from edgepick.records.candidate import Candidate
    from edgepick.records.model_ref import ModelRef
    from edgepick.bench.workload import Workload

    monkeypatch.setattr(measure, "get_backend", lambda name: FakeEngine())
    # an endpoint reference: nothing is read or served, the engine is the fake above
    cand = Candidate(ref=ModelRef.endpoint("http://127.0.0.1:9/v1"))
    wl = Workload(prompt_tokens=16, gen_tokens=GEN, warmup=2, repeats=5)
    FakeEngine.runs = 0
    raw = measure_point(cand.model_dump(), wl.model_dump(), rule(DECODE_MIN_10).model_dump())
    assert FakeEngine.runs == 2 + 5 and len(raw["runs"]) == 5
    assert raw["repetitions"]["stopped"] == "settled"
    FakeEngine.runs = 0
    raw = measure_point(cand.model_dump(), wl.model_dump())  # the call as before: fixed count
    assert FakeEngine.runs == 7 and raw["repetitions"]["stopped"] == "fixed"
