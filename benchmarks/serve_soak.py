"""Soak (issue 16, seed 000 §5.3: never assume the framework has no leaks): 2,000 requests; the
engine's RssAnon + VmSwap grows < 5% from request 100 to request 2,000.

Two clients on two slots, tiny model, 16 generated tokens, prompts varied so that no two
consecutive requests share a prefix. The edgepick process's own RSS is printed beside it.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import httpx
import psutil

from benchmarks._serve_common import edgepick_serve, engine_pid_port, metric, threads

N = int(os.environ.get("EDGEPICK_BENCH_SOAK_N", "2000"))
BASELINE_AT = 100
TARGET_GROWTH = 0.05


def main() -> int:
    from edgepick.assets.bundled import tiny_f16
    from edgepick.serve.engine.llama_server import tree_memory_bytes

    statuses: dict[int, int] = {}
    with edgepick_serve(["-m", str(tiny_f16()), "--slots", "2", "--queue", "4", "--ctx", "512",
                         "--threads", threads()]) as (url, proc):
        pid, _ = engine_pid_port(proc)
        front = psutil.Process(proc.pid)

        def one(i: int) -> int:
            body = {"model": "x", "max_tokens": 16, "messages": [
                {"role": "user", "content": f"Request {i}: name {i % 37} colours and {i % 11} fruits."}]}
            with httpx.Client(timeout=120) as c:
                return c.post(url + "/v1/chat/completions", json=body).status_code

        with ThreadPoolExecutor(2) as pool:
            for code in pool.map(one, range(BASELINE_AT)):
                statuses[code] = statuses.get(code, 0) + 1
            mem0, front0 = tree_memory_bytes(pid), front.memory_info().rss
            for code in pool.map(one, range(BASELINE_AT, N)):
                statuses[code] = statuses.get(code, 0) + 1
        mem1, front1 = tree_memory_bytes(pid), front.memory_info().rss
        restarts = metric(url, "edgepick_engine_restarts_total")
        same_engine = engine_pid_port(proc)[0] == pid
    growth = (mem1 - mem0) / mem0
    print(f"{N} requests: statuses {statuses}; engine restarts {restarts:.0f}, same engine "
          f"process {same_engine}")
    print(f"engine RssAnon+VmSwap at request {BASELINE_AT}: {mem0 / 2**20:.1f} MiB, at {N}: "
          f"{mem1 / 2**20:.1f} MiB, growth {growth:+.2%} (target < {TARGET_GROWTH:.0%})")
    print(f"edgepick process RSS: {front0 / 2**20:.1f} → {front1 / 2**20:.1f} MiB "
          f"({(front1 - front0) / front0:+.2%})")
    ok = growth < TARGET_GROWTH and same_engine and set(statuses) == {200}
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
