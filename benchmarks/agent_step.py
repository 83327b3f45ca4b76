"""End-to-end latency of one agent step (issue 18; seed 004 §4.1: one tool, one step) and what
the guard, the tool and the step record add to it.

SmolLM2-135M Q4_1 (bundled), 2 threads, the built-in tools in a temporary sandbox, the
JSON-call format (SmolLM2's template takes no tools), `max_steps=1`: each request is exactly one
step = proposal (generation) + guard + confirmation + tool + record. Two engines, side by side in
this run: in process (llama_cpp) and through `edgepick serve` (OpenAI-compatible HTTP).
`ROUNDS` rounds of three requests (a tool request, one that needs no tool, a Chinese one).
Printed: median step latency with min/max, median generation time, and the share of the step
that is not generation (guard + tool + record), per step. Target: that share ≤ 5% (median).
"""

from __future__ import annotations

import os
import statistics
import tempfile
from pathlib import Path

ROUNDS = int(os.environ.get("EDGEPICK_BENCH_ROUNDS", "5"))
REQUESTS = ["Convert 5 km to miles.", "What is the capital of France?", "把 10 公里换算成英里。"]
TARGET_OVERHEAD_SHARE = 0.05


def _measure(model, sandbox: Path) -> dict:
    from edgepick.agent import Agent, ToolSet

    agent = Agent(model, ToolSet.builtin(sandbox), max_steps=1, max_tokens=64)
    agent.run(REQUESTS[0])  # warm-up, not counted
    steps = []
    for _ in range(ROUNDS):
        for req in REQUESTS:
            steps += agent.run(req).steps
    step = [s.step_s * 1000 for s in steps]
    gen = [s.generate_s * 1000 for s in steps]
    share = [(s.step_s - s.generate_s) / s.step_s for s in steps if s.step_s > 0]
    return {"n": len(steps), "step_ms": statistics.median(step), "min": min(step),
            "max": max(step), "gen_ms": statistics.median(gen),
            "overhead_share": statistics.median(share),
            "calls": sum(s.validation == "call" for s in steps),
            "refused": sum(s.validation not in ("call", "answer") for s in steps)}


def main() -> int:
    from benchmarks._serve_common import edgepick_serve, threads
    from edgepick.agent.model import BackendModel
    from edgepick.assets.bundled import smollm2_q4_1
    from edgepick.records.candidate import Candidate, RuntimeSettings
    from edgepick.inputs import resolve_ref

    path = str(smollm2_q4_1())
    settings = RuntimeSettings(threads=int(threads()), n_ctx=2048)
    rows = {}
    with tempfile.TemporaryDirectory() as box:
        with BackendModel(Candidate(ref=resolve_ref(path), settings=settings)) as m:
            rows["in process"] = _measure(m, Path(box))
        with edgepick_serve(["-m", path, "--slots", "1", "--ctx", "2048",
                             "--threads", threads()]) as (url, _proc):
            with BackendModel(Candidate(ref=resolve_ref(f"{url}/v1"), settings=settings)) as m:
                rows["edgepick serve"] = _measure(m, Path(box))
    print(f"{'engine':16} {'steps':>5} {'step ms (min-max)':>22} {'gen ms':>8} "
          f"{'not generation':>15} {'calls':>5} {'refused':>7}")
    for name, r in rows.items():
        print(f"{name:16} {r['n']:5d} {r['step_ms']:8.0f} ({r['min']:.0f}-{r['max']:.0f})".ljust(45)
              + f"{r['gen_ms']:8.0f} {r['overhead_share']:14.1%} {r['calls']:5d} {r['refused']:7d}")
    worst = max(r["overhead_share"] for r in rows.values())
    print(f"guard + tool + record share of a step (median, worst engine): {worst:.1%} "
          f"(target ≤ {TARGET_OVERHEAD_SHARE:.0%})")
    return 0 if worst <= TARGET_OVERHEAD_SHARE else 1


if __name__ == "__main__":
    raise SystemExit(main())
