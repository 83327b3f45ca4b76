"""decide treats a speed gate that fails on a contended measurement as undetermined, naming the
load, and keeps fail for a quiet one; the contended bench is real (two busy processes beside it,
started here, bounded, killed after)."""

from __future__ import annotations

import subprocess
import sys

from edgepick.bench.runner import measure_config
from edgepick.bench.sweeps import BenchRequest, expand
from edgepick.decide.adapters import bench_adapter
from edgepick.decide.gates import candidate_gates
from edgepick.decide.scenarios import validate_scenario
from edgepick.decide.texts import gate_phrase
from edgepick.inputs import resolve_ref
from edgepick.records.decision import CandidateSummary, Figure

BUSY = "import time\nend = time.monotonic() + 120\nwhile time.monotonic() < end:\n    pass\n"


def _scenario(**constraints):
    return validate_scenario({"name": "t", "constraints": {"peak_memory_max": None,
                                                           **constraints}}, "test")


def _summary(payload: dict) -> CandidateSummary:
    s = CandidateSummary(candidate="c", model=payload["model_path"])
    bench_adapter(payload, lambda *a, **k: s)
    return s


def test_failing_speed_gate_is_undetermined_only_when_contended():
    sc = _scenario(decode_tps_min=100.0, ttft_p50_ms_max=10.0)
    quiet = CandidateSummary(candidate="q", model="m", decode_tps=2.6, ttft_p50_ms=900.0,
                             figures={"decode_tps": Figure(value=2.6)})
    assert [g.verdict for g in candidate_gates(quiet, sc, None)] == ["fail", "fail"]
    busy = quiet.model_copy(update={"contended_share": 0.62})
    gates = candidate_gates(busy, sc, None)
    assert [g.verdict for g in gates] == ["undetermined", "undetermined"]
    assert "other work used 62% of the CPUs" in gate_phrase(gates[0], "en")
    assert "62%" in gate_phrase(gates[0], "zh")


def test_bench_beside_busy_processes_leaves_the_speed_gate_undetermined(tiny_model):
    procs = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(2)]
    try:
        req = BenchRequest(models=[resolve_ref(tiny_model)], prompt_lengths=[32],
                           gen_tokens=32, warmup=1, repeats=3, threads=[1])
        res = measure_config(expand(req)[0], req)
    finally:
        for p in procs:
            p.kill()
            p.wait()
    assert res.status == "ok" and res.contended, res.host_load
    s = _summary(res.model_dump(mode="json"))
    assert s.contended_share > 0.25
    # far above anything this host decodes: fails on speed, but the load may be why
    (gate,) = candidate_gates(s, _scenario(decode_tps_min=1e6), None)
    assert gate.verdict == "undetermined" and gate.contended_share == s.contended_share
    assert s.power_source.startswith("no power counter here")
    assert s.energy_per_token_j is None and "energy_per_token_j" not in s.figures
