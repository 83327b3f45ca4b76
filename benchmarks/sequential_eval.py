"""Sequential evaluation against fixed N (issue 27), side by side on two eval sets: the bundled
demo set and a held-out set made here (templated sums, comparisons and sentiments that no
design choice saw). Each set runs twice in fresh stores, `eval.sequential: false` then `true`,
with the same candidates (the bundled SmolLM2 Q4_1 and the 2-block tiny model, which fails
fast), the SmolLM2 F16 reference and the realtime-chat scenario; bench and fidelity are off, so
the wall time is the evaluation's.

Printed per set: generations and items per model, wall time, and whether the decision (status,
winner, per-task routes) is the same. Target: the same decision with fewer generations.

`--threads N` sets the runtime threads (default 2; on a loaded host 1 is often faster).

`--replay STORE [PLAN]` instead replays a plan's evaluation (default: the default job) on a
store that already holds its fixed-N outputs (a run of the plan with `eval.sequential: false`):
on a copy of the store, fixed N and then sequential looks, with the candidates and reference of
the store's latest fixed-N eval row (their settings are part of the output keys), and `decide`
on each run's eval rows alone. It generates nothing the store lacks, so it measures the share
of generations and tokens, not wall time.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import yaml

DEMO_LIMIT = 48  # 8 per text task: enough for the tiny model's cells to settle, minutes not hours


def heldout(path: Path) -> str:
    """48 items in three tasks, answers computed, en only."""
    rows = []
    for i in range(16):
        a, b = 7 + 3 * i, 11 + 5 * i
        rows.append({"id": f"h-sum{i}", "task": "math", "reference": a + b,
                     "prompt": f"What is {a} + {b}? Answer with the number.",
                     "difficulty": "easy" if i % 2 else "medium", "tags": ["en"]})
        rows.append({"id": f"h-cmp{i}", "task": "yes_no", "reference": "yes" if a > b - 6 else "no",
                     "prompt": f"Is {a} greater than {b - 6}? Answer yes or no.",
                     "difficulty": "easy", "tags": ["en"]})
        good = i % 2 == 0
        text = ("The food was wonderful and the staff were kind." if good
                else "The room was dirty and nobody answered the phone.")
        rows.append({"id": f"h-sent{i}", "task": "classification", "labels": ["positive", "negative"],
                     "reference": "positive" if good else "negative",
                     "prompt": f"Classify the sentiment as positive or negative: {text}",
                     "difficulty": "easy", "tags": ["en"]})
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return str(path)


THREADS = 2  # `--threads N`: on a loaded host 1 is often much faster (docs/evaluate.md)


def plan(folder: Path, data, limit, sequential: bool, tiny: str) -> Path:
    p = {"name": "seqbench", "device": "local", "output": str(folder / "out"),
         "candidates": [{"model": "smollm2", "label": "smollm2-Q4_1"},
                        {"model": tiny, "label": "tiny"}],
         "runtime": {"threads": THREADS, "n_ctx": 2048, "seed": 42},
         "bench": {"enabled": False}, "fidelity": {"enabled": False},
         "eval": {"data": data, "reference": "smollm2-f16", "limit": limit,
                  "sequential": sequential},
         "scenario": {"name": "realtime_chat"}, "report": {"enabled": False}}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "plan.yaml"
    path.write_text(yaml.safe_dump(p, sort_keys=False), encoding="utf-8")
    return path


def one_run(path: Path):
    from edgepick.evaluate.eval_result import EVAL_KIND
    from edgepick.plan.loader import load_plan
    from edgepick.plan.runner import run_plan
    from edgepick.records.evaluation import EvalResult
    from edgepick.store import ResultStore

    lp = load_plan(str(path))
    t0 = time.perf_counter()
    res = run_plan(lp)
    wall = time.perf_counter() - t0
    with ResultStore(lp.store_path) as st:
        evals = [EvalResult.model_validate(p) for _, p in st.items(EVAL_KIND)]
    ev = evals[-1]
    gens = ev.reference.generated + sum(c.generated for c in ev.candidates)
    items = {c.name: c.overall.n for c in ev.candidates} | {"reference": ev.reference.overall.n}
    d = res.decision
    routes = {r.task: r.route for r in (d.hybrid.routes if d.hybrid else [])}
    return {"wall_s": wall, "generations": gens, "items": items,
            "decision": (d.status, d.recommendation, routes)}


def _decision(d) -> tuple:
    routes = {r.task: r.route for r in (d.hybrid.routes if d.hybrid else [])}
    return d.status, d.recommendation, routes


def replay(store_path: str, plan_name: str = "default") -> int:
    """Fixed N and sequential on a copy of `store_path`; prints generations, tokens, decisions."""
    import shutil

    from edgepick.decide.decision import decide
    from edgepick.decide.selection import select
    from edgepick.decide.summary import build_summaries
    from edgepick.evaluate.eval_result import EVAL_KIND
    from edgepick.evaluate.savings import savings_lines
    from edgepick.evaluate.stage import EvalRequest, run
    from edgepick.plan.eval_gates import eval_gates, scenario_of
    from edgepick.plan.loader import load_plan
    from edgepick.records.evaluation import EvalResult
    from edgepick.store import ResultStore

    lp = load_plan(plan_name)
    sc = scenario_of(lp)
    with tempfile.TemporaryDirectory(prefix="edgepick-seqreplay-") as tmp:
        copy = str(Path(tmp) / "replay.sqlite")
        shutil.copy(store_path, copy)
        with ResultStore(copy) as st:
            fixed_rows = [EvalResult.model_validate(p) for _, p in st.items(EVAL_KIND)
                          if p.get("sequential") is None]
            if not fixed_rows:
                print(f"{store_path}: no fixed-N eval row to replay", file=sys.stderr)
                return 2
            last = fixed_rows[-1]
            ref, cands = last.reference.candidate, [c.candidate for c in last.candidates]
            out = {}
            for seq in (False, True):
                rid = st.begin_run(f"replay sequential={seq}", {})
                res = run(EvalRequest(data=lp.eval_specs(), reference=ref, candidates=cands,
                                      limit=lp.plan.eval.limit, max_tokens=lp.plan.eval.max_tokens,
                                      sequential=seq, gates=eval_gates(sc),
                                      look_items=lp.plan.eval.look_items,
                                      max_items=lp.plan.eval.max_items), st)
                models = [res.reference, *res.candidates]
                d = decide(build_summaries(st, selection=select(st, [rid])), sc, None)
                out[seq] = {"generations": sum(len(c.items) for c in models) * res.samples,
                            "tokens": sum(o.generated_tokens for c in models for o in c.items),
                            "new": sum(c.generated for c in models), "decision": _decision(d),
                            "lines": savings_lines(res)}
    f, s = out[False], out[True]
    same = f["decision"] == s["decision"]
    print(f"replay of {plan_name} on {store_path}: generations {s['generations']} sequential vs "
          f"{f['generations']} fixed ({s['generations'] / max(1, f['generations']):.0%}); tokens "
          f"{s['tokens']} vs {f['tokens']} ({s['tokens'] / max(1, f['tokens']):.0%}); decision "
          f"{'same' if same else 'DIFFERENT'}: {s['decision']} vs {f['decision']}; generated "
          f"now {f['new'] + s['new']}")
    for line in s["lines"]:
        print("  " + line)
    return 0 if same and s["generations"] <= f["generations"] / 2 else 1


def main() -> int:
    global THREADS
    if len(sys.argv) > 2 and sys.argv[1] == "--replay":
        return replay(*sys.argv[2:4])
    if len(sys.argv) > 2 and sys.argv[1] == "--threads":
        THREADS = int(sys.argv[2])
    from edgepick.assets.bundled import tiny_f16

    tiny = str(tiny_f16())
    misses = 0
    with tempfile.TemporaryDirectory(prefix="edgepick-seqbench-") as tmp:
        root = Path(tmp)
        sets = {"demo": ("demo", DEMO_LIMIT), "held-out": (heldout(root / "heldout.jsonl"), None)}
        for name, (data, limit) in sets.items():
            out = {}
            for seq in (False, True):
                out[seq] = one_run(plan(root / f"{name}-{seq}", data, limit, seq, tiny))
            f, s = out[False], out[True]
            same = f["decision"] == s["decision"]
            misses += not same or s["generations"] > f["generations"]
            print(f"{name}: generations {s['generations']} sequential vs {f['generations']} fixed "
                  f"({s['generations'] / max(1, f['generations']):.0%}); wall "
                  f"{s['wall_s']:.0f} s vs {f['wall_s']:.0f} s; decision "
                  f"{'same' if same else 'DIFFERENT'}: {s['decision'][0]}", flush=True)
            print(f"  items per model, sequential: {s['items']}; fixed: {f['items']}")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
