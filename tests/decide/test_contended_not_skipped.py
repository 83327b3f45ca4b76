"""Three rules built apart, checked together (issue 23 item 3): sequential evaluation skips a
candidate that fails a gate no routing avoids; a speed gate failing on a contended measurement
is undetermined, so such a candidate is evaluated, never skipped as failed; and the decision
says why each was or was not evaluated. The same function decides the skip (plan's eval stage)
and the sentence (decide), so they cannot disagree."""

from __future__ import annotations

from types import SimpleNamespace

from edgepick.decide.adapters import bench_adapter
from edgepick.decide.decision import decide
from edgepick.decide.gates import candidate_gates, ruled_out_before_eval
from edgepick.decide.scenarios import validate_scenario
from edgepick.decide.texts import reasons_text
from edgepick.plan.eval_gates import unroutable_failures
from edgepick.records.decision import CandidateSummary, TaskQuality
from edgepick.store import ResultStore


def _scenario(extra=None, **constraints):
    return validate_scenario({"name": "t", **(extra or {}),
                              "constraints": {"peak_memory_max": None, **constraints}}, "test")


def _bench(model: str, contended: bool, sweep="prompt_length", **kw) -> dict:
    load = {"other_cpu_share": 0.7 if contended else 0.02, "steal_share": 0.0}
    metric = {"median": 900.0, "min": 880.0, "max": 950.0, "unit": "ms", "n": 3}
    return {"model": model, "model_path": model, "backend": "llama_cpp", "sweep": sweep,
            "config": "c", "key": f"{model}-{contended}-{sweep}", "status": "ok",
            "settings": {"prompt_tokens": 32, "gen_tokens": 8},
            "metrics": {"ttft_ms": metric, "decode_tps": {**metric, "median": 3.0, "min": 2.9,
                                                          "max": 3.1, "unit": "tok/s"}},
            "host_load": load, "contended": contended, **kw}


def _summary(*payloads) -> CandidateSummary:
    s = CandidateSummary(candidate="c", model=payloads[0]["model_path"])
    for p in payloads:
        bench_adapter(p, lambda *a, **k: s)
    return s


SC = _scenario(ttft_p50_ms_max=500, decode_tps_min=10, unacceptable_rate_max=0.05)


def test_a_quiet_speed_failure_rules_out_a_contended_one_does_not():
    quiet = candidate_gates(_summary(_bench("q.gguf", False)), SC, None)
    assert ruled_out_before_eval(quiet).metric == "ttft_p50_ms"
    busy = candidate_gates(_summary(_bench("b.gguf", True)), SC, None)
    assert {g.verdict for g in busy if g.metric != "unacceptable_rate"} == {"undetermined"}
    assert ruled_out_before_eval(busy) is None


def test_every_speed_gate_follows_the_contended_rule():
    """End-to-end latency is TTFT plus decode; decay comes from a sustained run: both speed."""
    sc = _scenario({"output_tokens": {"p50": 8}}, e2e_p50_ms_max=100, decay_max=0.1)
    sustain = {"duration_s": 10, "window_s": 5, "window_tps": [10.0, 5.0], "decay_pct": 50.0,
               "flagged": True}
    for contended, verdict in ((False, "fail"), (True, "undetermined")):
        s = _summary(_bench("m.gguf", contended), _bench("m.gguf", False, sweep="sustain",
                                                         sustain=sustain))
        assert [g.verdict for g in candidate_gates(s, sc, None)] == [verdict, verdict]
        # the sustained run alone on a busy host: its decay is undetermined too
        s = _summary(_bench("m.gguf", False), _bench("m.gguf", contended, sweep="sustain",
                                                     sustain=sustain))
        assert [g.verdict for g in candidate_gates(s, sc, None)] == [verdict, verdict]


def test_plan_skips_only_the_settled_failure_and_the_decision_says_why(tmp_path):
    with ResultStore(tmp_path / "r.sqlite") as store:
        store.begin_run("test", {})
        for p in (_bench("quiet.gguf", False), _bench("busy.gguf", True)):
            store.put("bench", p["key"], p)
        active = [SimpleNamespace(name=n, ref=SimpleNamespace(locator=f"{n}.gguf"))
                  for n in ("quiet", "busy")]
        st = SimpleNamespace(store=store, device=SimpleNamespace(model_budget_bytes=None))
        assert unroutable_failures(st, active, SC) == {"quiet": "ttft_p50_ms_max"}

    quiet = _summary(_bench("quiet.gguf", False))
    quiet.candidate = "quiet"
    busy = _summary(_bench("busy.gguf", True))
    busy.candidate = "busy"
    busy.tasks["qa"] = TaskQuality(n=20, unacceptable_rate=0.0)  # evaluated: it was not skipped
    by = {r.candidate: r for r in decide([quiet, busy], SC).ranking}
    assert "quality not evaluated: TTFT P50 at 32 tokens fails, which no routing avoids" in by["quiet"].reasons
    assert any(r.startswith("quality evaluated: TTFT P50") and "contended" in r
               for r in by["busy"].reasons)
    assert any(r.startswith("未评测质量") for r in reasons_text(by["quiet"], "zh"))
