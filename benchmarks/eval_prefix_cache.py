"""The prefix cache on eval's tool items (issue 37), side by side in one run: the default run's
12 tool-call items (demo-tools, 200-1000 prompt tokens, most of them a toolbox shared with
another item) through `collect_outputs` (model load included, 4 slots, the default budgets), with the llama_cpp engine's prefix cache off and on, alternating, a fresh store each.

Wall and CPU time (the process's, every engine thread): on a shared host the CPU seconds move
less than the wall. Two ways eval hands them over: as the sequential looks of `make run` (the cell's items in
evaluate/looks.task_order, 4 a look, each look one call that loads the model) and as one fixed-N
call of all 12. Printed: seconds of each run, the prompt tokens prefilled, the ratio on/off of the
medians, and how many outputs are the same text. Target: with the cache at most 0.9x the time
in looks (how `make run` evaluates); fixed N is shown beside it (one call: its items go in
token order, so those sharing a toolbox are in the cache together).

`--rounds N` (default 2) off/on pairs; `--threads N` (default 2).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

LOOK = 4


def _eval(cand, looks, reuse: bool) -> tuple[float, float, list[str], int]:
    from edgepick.backends.llama_cpp import LlamaCppBackend
    from edgepick.evaluate.outputs import DEFAULT_MAX_TOKENS, collect_outputs
    from edgepick.store import ResultStore

    counted = []
    orig_unload = LlamaCppBackend.unload

    def unload(self):  # read the prefill counter before each look's model goes
        counted.append(self.prompt_tokens_decoded)
        orig_unload(self)

    LlamaCppBackend.reuse_prefixes, LlamaCppBackend.unload = reuse, unload
    try:
        with tempfile.TemporaryDirectory() as d:
            store = ResultStore(Path(d) / "s.sqlite")
            t0, c0 = time.perf_counter(), time.process_time()
            texts = []
            for look in looks:
                out, _, _ = collect_outputs(cand, look, store, dict(DEFAULT_MAX_TOKENS),
                                            parallel=LOOK)
                texts += [o["text"] for o in out]
            dt, cpu = time.perf_counter() - t0, time.process_time() - c0
            store.close()
    finally:
        LlamaCppBackend.reuse_prefixes, LlamaCppBackend.unload = True, orig_unload
    return dt, cpu, texts, sum(counted)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 2
    threads = int(argv[argv.index("--threads") + 1]) if "--threads" in argv else 2
    from edgepick.evaluate.eval_sets import bundled_set_path, spread
    from edgepick.evaluate.items import load_eval_set
    from edgepick.evaluate.looks import task_order
    from edgepick.inputs import resolve_ref
    from edgepick.records.candidate import Candidate, RuntimeSettings

    items = spread(load_eval_set(bundled_set_path("demo-tools"))[0], 12)
    ordered = [items[i] for i in task_order(items)["tool_call"]]
    ways = {"looks of 4": [ordered[i:i + LOOK] for i in range(0, len(ordered), LOOK)],
            "fixed N": [items]}
    cand = Candidate(ref=resolve_ref("smollm2"),
                     settings=RuntimeSettings(threads=threads, n_ctx=2048))
    worst = 1.0
    for way, looks in ways.items():
        runs: dict[bool, list[float]] = {False: [], True: []}
        cpus: dict[bool, list[float]] = {False: [], True: []}
        texts: dict[bool, list[str]] = {}
        for r in range(rounds):
            for reuse in (False, True) if r % 2 == 0 else (True, False):
                dt, cpu, texts[reuse], prefilled = _eval(cand, looks, reuse)
                runs[reuse].append(dt)
                cpus[reuse].append(cpu)
                print(f"{way:<11} cache {'on ' if reuse else 'off'}  {dt:6.1f} s  CPU {cpu:6.1f} s  "
                      f"{prefilled:5d} prompt tokens prefilled", flush=True)
        ratio = statistics.median(runs[True]) / statistics.median(runs[False])
        cpu_ratio = statistics.median(cpus[True]) / statistics.median(cpus[False])
        same = sum(a == b for a, b in zip(texts[False], texts[True]))
        print(f"{way}: cache on / off = {ratio:.2f}x wall, {cpu_ratio:.2f}x CPU (medians of "
              f"{rounds}); {same} of {len(texts[True])} outputs the same text")
        if way == "looks of 4":
            worst = ratio
    return 0 if worst <= 0.9 else 1


if __name__ == "__main__":
    sys.exit(main())
