"""Overload (issue 16, seed 000 §4.3): 4× the admitted capacity (slots + queue) for 60 s gives
0 crashes and 0 responses other than 200/429; median rejection latency < 20 ms.

Clients loop back to back, each sending its next request as soon as the last one answered, so
the offered load stays at 4× capacity for the whole run. Tiny model, 32 generated tokens.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from collections import Counter

import httpx

from benchmarks._serve_common import edgepick_serve, metric, threads

SLOTS, QUEUE = 2, 2
CLIENTS = 4 * (SLOTS + QUEUE)
SECONDS = float(os.environ.get("EDGEPICK_BENCH_OVERLOAD_S", "60"))
TARGET_REJECT_MS = 20.0


async def client_loop(url: str, until: float, statuses: Counter, reject_ms: list[float],
                      errors: list[str]) -> None:
    body = {"model": "x", "max_tokens": 32, "ignore_eos": True,
            "messages": [{"role": "user", "content": "Say something."}]}
    async with httpx.AsyncClient(timeout=120) as c:
        while time.monotonic() < until:
            t0 = time.perf_counter()
            try:
                r = await c.post(url + "/v1/chat/completions", json=body)
            except httpx.HTTPError as exc:
                errors.append(type(exc).__name__)
                statuses["transport-error"] += 1
                continue
            statuses[r.status_code] += 1
            if r.status_code == 429:
                reject_ms.append((time.perf_counter() - t0) * 1000)
                # a well-behaved client honours Retry-After; this one hammers to keep 4× load
                await asyncio.sleep(0.005)


async def run(url: str) -> tuple[Counter, list[float], list[str]]:
    statuses: Counter = Counter()
    reject_ms: list[float] = []
    errors: list[str] = []
    until = time.monotonic() + SECONDS
    await asyncio.gather(*(client_loop(url, until, statuses, reject_ms, errors)
                           for _ in range(CLIENTS)))
    return statuses, reject_ms, errors


def main() -> int:
    from edgepick.assets.bundled import tiny_f16

    with edgepick_serve(["-m", str(tiny_f16()), "--slots", str(SLOTS), "--queue", str(QUEUE),
                         "--ctx", "512", "--threads", threads()]) as (url, proc):
        statuses, reject_ms, errors = asyncio.run(run(url))
        crashes = metric(url, "edgepick_engine_restarts_total")
        alive = proc.poll() is None
    other = {k: v for k, v in statuses.items() if k not in (200, 429)}
    med = statistics.median(reject_ms) if reject_ms else float("nan")
    print(f"{CLIENTS} clients against {SLOTS} slots + {QUEUE} queue for {SECONDS:.0f} s: "
          f"{dict(statuses)}")
    print(f"engine restarts {crashes:.0f}, server alive {alive}; other statuses {other or 'none'}"
          f"{'; transport errors ' + str(Counter(errors)) if errors else ''}")
    if reject_ms:
        q = statistics.quantiles(reject_ms, n=100)
        print(f"rejection latency: median {med:.2f} ms, P99 {q[98]:.2f} ms "
              f"(n={len(reject_ms)}) target median < {TARGET_REJECT_MS} ms")
    ok = alive and crashes == 0 and not other and statuses[200] > 0 and statuses[429] > 0 \
        and med < TARGET_REJECT_MS
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
