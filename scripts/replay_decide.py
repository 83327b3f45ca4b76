"""Decide replayed over stored stores, for comparing two versions of the code (issue 33: the
decisions must not change when code moves). One JSON line per (store, scenario preset) with the
decision's substance; run it once per version and diff the outputs:

    PYTHONPATH=/path/to/old/src python scripts/replay_decide.py A.sqlite B.sqlite > before.jsonl
    PYTHONPATH=src python scripts/replay_decide.py A.sqlite B.sqlite > after.jsonl

Each store is copied first (decide records its decision in the store it reads)."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile

SCENARIOS = ("realtime_chat", "offline_batch", "structured_extraction", "ar_glasses")


def replay(path: str, scenario: str) -> dict:
    from edgepick.decide.scenarios import load_scenario
    from edgepick.decide.stage import DecideRequest, run
    from edgepick.store import ResultStore

    tmp = tempfile.mkdtemp()
    try:
        copy = os.path.join(tmp, "s.sqlite")
        shutil.copy(path, copy)
        with ResultStore(copy) as store:
            d = run(DecideRequest(scenario=load_scenario(scenario), budget=2 * 2**30,
                                  power_budget_w=10.0), store).decision
        return {"store": path, "scenario": scenario, "recommendation": d.recommendation,
                "status": d.status, "pareto": d.pareto, "runner_up": d.runner_up,
                "ranking": [(r.candidate, None if r.score is None else round(r.score, 6),
                             r.eliminated, [(g.metric, g.verdict) for g in r.gates])
                            for r in d.ranking],
                "hybrid": None if d.hybrid is None else d.hybrid.model_dump(mode="json"),
                "explanation": d.explanation.model_dump()}
    except Exception as exc:  # noqa: BLE001 - a store one version cannot read is a line too
        return {"store": path, "scenario": scenario,
                "error": f"{type(exc).__name__}: {exc}".replace(tmp, "TMP")[:200]}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str]) -> int:
    for path in argv:
        for scenario in SCENARIOS:
            print(json.dumps(replay(path, scenario), sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
