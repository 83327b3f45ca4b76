"""Overload (issue 16, seed 000 §4.3): 4× the admitted capacity (slots + queue) for 60 s gives
0 crashes and 0 responses other than 200/429; median rejection latency < 20 ms.

Clients loop back to back in a process of their own, each sending its next request as soon as
the last one answered, so the offered load stays at 4× capacity for the whole run. Rejection
latency is read by a probe in this process, one request at a time, so it is the server's answer
time under that load rather than the load generator's own event-loop backlog (16 clients at
~300 requests/s in one Python process); the load clients' own figure is printed beside it.
Tiny model, 32 generated tokens.
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


def _load(url: str, out) -> None:
    out.put(asyncio.run(run(url)))


def probe(url: str, until: float, statuses: Counter, reject_ms: list[float]) -> None:
    body = {"model": "x", "max_tokens": 32, "ignore_eos": True,
            "messages": [{"role": "user", "content": "Say something."}]}
    with httpx.Client(timeout=120) as c:
        while time.monotonic() < until:
            t0 = time.perf_counter()
            r = c.post(url + "/v1/chat/completions", json=body)
            statuses[r.status_code] += 1
            if r.status_code == 429:
                reject_ms.append((time.perf_counter() - t0) * 1000)
            time.sleep(0.02)


def main() -> int:
    import multiprocessing as mp

    from edgepick.assets.bundled import tiny_f16

    with edgepick_serve(["-m", str(tiny_f16()), "--slots", str(SLOTS), "--queue", str(QUEUE),
                         "--ctx", "512", "--threads", threads()]) as (url, proc):
        ctx = mp.get_context("spawn")
        out = ctx.Queue()
        load = ctx.Process(target=_load, args=(url, out))
        load.start()
        probe_statuses: Counter = Counter()
        probe_ms: list[float] = []
        probe(url, time.monotonic() + SECONDS, probe_statuses, probe_ms)
        statuses, reject_ms, errors = out.get(timeout=SECONDS + 300)
        load.join(timeout=60)
        crashes = metric(url, "edgepick_engine_restarts_total")
        alive = proc.poll() is None
    statuses.update(probe_statuses)
    other = {k: v for k, v in statuses.items() if k not in (200, 429)}
    med = statistics.median(probe_ms) if probe_ms else float("nan")
    print(f"{CLIENTS} clients (+1 probe) against {SLOTS} slots + {QUEUE} queue for "
          f"{SECONDS:.0f} s: {dict(statuses)}")
    print(f"engine restarts {crashes:.0f}, server alive {alive}; other statuses {other or 'none'}"
          f"{'; transport errors ' + str(Counter(errors)) if errors else ''}")
    if probe_ms:
        q = statistics.quantiles(probe_ms, n=100)
        print(f"rejection latency (probe): median {med:.2f} ms, P99 {q[98]:.2f} ms "
              f"(n={len(probe_ms)}) target median < {TARGET_REJECT_MS} ms")
    if reject_ms:
        print(f"rejection latency seen by the load clients (their own backlog included): "
              f"median {statistics.median(reject_ms):.2f} ms (n={len(reject_ms)})")
    ok = alive and crashes == 0 and not other and statuses[200] > 0 and statuses[429] > 0 \
        and med < TARGET_REJECT_MS
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
