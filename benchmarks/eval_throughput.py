"""Eval throughput against the engine's own server (issue 37), side by side in one run: the
bundled SmolLM2 Q4_1 answers the demo set's items through `collect_outputs` (edgepick's eval,
model load included) one at a time and through 8 slots (eval's default `parallel`), then
llama-server with 8 parallel slots gets the same chat messages with each item's token count from
the batched run (`ignore_eos`, so it makes exactly as many tokens), 8 requests in flight.

Printed: generations, tokens and tokens per second of each, and edgepick's ratio to the server.
Target: batched eval at least 0.9x the server with the same number of slots.

`--items N` (default 24), `--threads N` (default 2) and `--slots N` (default 8) change the
workload.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

SLOTS = 8


def _edgepick(cand, items, parallel: int) -> tuple[list[dict], float]:
    from edgepick.evaluate.outputs import DEFAULT_MAX_TOKENS, collect_outputs
    from edgepick.store import ResultStore

    with tempfile.TemporaryDirectory() as d:
        store = ResultStore(Path(d) / "s.sqlite")
        t0 = time.perf_counter()
        out, _, _ = collect_outputs(cand, items, store, dict(DEFAULT_MAX_TOKENS),
                                    parallel=parallel)
        dt = time.perf_counter() - t0
        store.close()
    return out, dt


def _server(model: str, items, tokens: list[int], threads: int, slots: int) -> float:
    import httpx

    from edgepick.backends.llama_server_client import wait_healthy
    from edgepick.launch import free_port, start, stop
    from edgepick.llama_tools import tool_path

    port = free_port()
    proc = start([tool_path("llama-server"), "-m", model, "--host", "127.0.0.1", "--port",
                  str(port), "-c", str(2048 * slots), "-np", str(slots), "-t", str(threads)],
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(f"{base}/health", lambda: proc.poll() is None, 120, "llama-server")
        with httpx.Client(timeout=600) as client:
            def one(k: int) -> None:
                client.post(f"{base}/v1/chat/completions", json={
                    "messages": items[k].chat_messages(), "max_tokens": max(1, tokens[k]),
                    "temperature": 0, "ignore_eos": True}).raise_for_status()

            t0 = time.perf_counter()
            with ThreadPoolExecutor(slots) as pool:
                list(pool.map(one, range(len(items))))
            return time.perf_counter() - t0
    finally:
        stop(proc, timeout=20)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    n = int(argv[argv.index("--items") + 1]) if "--items" in argv else 24
    threads = int(argv[argv.index("--threads") + 1]) if "--threads" in argv else 2
    slots = int(argv[argv.index("--slots") + 1]) if "--slots" in argv else SLOTS
    from edgepick.assets.bundled import smollm2_q4_1
    from edgepick.evaluate.eval_sets import bundled_set_path, spread
    from edgepick.evaluate.items import load_eval_set
    from edgepick.inputs import resolve_ref
    from edgepick.records.candidate import Candidate, RuntimeSettings

    items = spread(load_eval_set(bundled_set_path("demo"))[0], n)
    items = [it for it in items if not it.tools]
    cand = Candidate(ref=resolve_ref("smollm2"), settings=RuntimeSettings(threads=threads))
    rows = []
    for parallel in (1, slots):
        out, dt = _edgepick(cand, items, parallel)
        toks = [o["generated_tokens"] for o in out]
        rows.append((f"edgepick eval, parallel {parallel}", sum(toks), dt))
    server_s = _server(str(smollm2_q4_1()), items, toks, threads, slots)
    rows.append((f"llama-server, {slots} slots", sum(toks), server_s))
    for name, t, dt in rows:
        print(f"{name:<28} {len(items)} generations  {t:5d} tokens  {dt:6.1f} s  "
              f"{t / dt:6.1f} tok/s")
    ratio = (rows[1][1] / rows[1][2]) / (rows[2][1] / rows[2][2])
    print(f"batched eval / llama-server: {ratio:.2f}x (target >= 0.90)")
    return 0 if ratio >= 0.9 else 1


if __name__ == "__main__":
    sys.exit(main())
