"""Does measuring through a Ray task change the measurement? The same bench job (SmolLM2-135M
Q4_1, 2 threads, a 128-token prompt, 64 generated tokens, 5 repeats) through the local executor
and through the Ray executor on a private Ray on this machine, alternating, `ROUNDS` times.

Both sides measure in a fresh worker process (bench's own isolation), so the engine's figures
should not depend on who launched it. The verdict is the median over rounds of the paired ratio
ray ÷ local for decode tok/s and TTFT; target (issue 19): decode within 5% (≥ 0.95) and TTFT at
most 10% slower (≤ 1.10). Also printed: Ray's start-up time and each job's wall time beside the
time it took to come back, i.e. what dispatch through Ray costs per job.
"""

from __future__ import annotations

import os
import statistics
import time

ROUNDS = int(os.environ.get("EDGEPICK_BENCH_ROUNDS", "3"))
TARGETS = {"decode_tps": ("≥", 0.95), "ttft_ms": ("≤", 1.10)}


def _job():
    from edgepick.bench.sweeps import BenchRequest, expand
    from edgepick.cluster.entries import BenchJobRequest
    from edgepick.cluster.jobs import Job
    from edgepick.records import RuntimeSettings
    from edgepick.inputs import resolve_ref

    req = BenchRequest(models=[resolve_ref("smollm2")], settings=RuntimeSettings(threads=2),
                       prompt_lengths=[128], gen_tokens=64, warmup=1, repeats=5)
    return Job(id="bench/local/smollm2", kind="bench", device="local", candidate="smollm2",
               entry="edgepick.cluster.entries:bench", request=BenchJobRequest(req),
               keys=tuple(("bench", c.key) for c in expand(req)), cpus=2, pin_local=True)


def _measure(executor, job) -> tuple[dict[str, float], float, float]:
    t0 = time.perf_counter()
    (res,) = list(executor.run([job], {}, lambda *_: None))
    back = time.perf_counter() - t0
    if not res.ok:
        raise SystemExit(f"{executor.name}: the bench job failed: {res.error}")
    (row,) = [p for kind, _, p in res.rows if kind == "bench"]
    if row["status"] != "ok":
        raise SystemExit(f"{executor.name}: the measurement failed: {row['error']}")
    m = row["metrics"]
    return {"decode_tps": m["decode_tps"]["median"], "ttft_ms": m["ttft_ms"]["median"]}, \
        res.wall_s, back


def main() -> int:
    from edgepick.cluster.executor import LocalExecutor
    from edgepick.cluster.ray_executor import RayExecutor

    job = _job()
    t0 = time.perf_counter()
    ray_ex = RayExecutor()
    print(f"private Ray started in {time.perf_counter() - t0:.1f} s")
    local_ex = LocalExecutor()
    ratios: dict[str, list[float]] = {k: [] for k in TARGETS}
    overhead = []
    try:
        for r in range(ROUNDS):
            order = [("local", local_ex), ("ray", ray_ex)]
            if r % 2:
                order.reverse()
            got = {}
            for name, ex in order:
                got[name], wall, back = _measure(ex, job)
                if name == "ray":
                    overhead.append(back - wall)
                print(f"round {r + 1} {name:5}: decode {got[name]['decode_tps']:.1f} tok/s, "
                      f"TTFT {got[name]['ttft_ms']:.1f} ms (job {wall:.1f} s, back after "
                      f"{back:.1f} s)")
            for k in TARGETS:
                ratios[k].append(got["ray"][k] / got["local"][k])
    finally:
        ray_ex.close()
    missed = 0
    for k, (op, target) in TARGETS.items():
        med = statistics.median(ratios[k])
        ok = med >= target if op == "≥" else med <= target
        missed += not ok
        print(f"{k}: ray ÷ local median {med:.3f} over {ROUNDS} rounds "
              f"(min {min(ratios[k]):.3f}, max {max(ratios[k]):.3f}); target {op} {target} "
              f"{'ok' if ok else 'MISSED'}")
    print(f"dispatch through Ray: {statistics.median(overhead):.2f} s per job (median), on top of "
          "the job itself")
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
