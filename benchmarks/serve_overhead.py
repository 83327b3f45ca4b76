"""What edgepick serve adds in front of llama-server (issue 16): decode tok/s through edgepick
≥ 0.95× llama-server direct, median added TTFT ≤ 10 ms.

Same file, same settings, same engine process: the direct side talks to the very llama-server
child that edgepick supervises, on its own port, so engine drift cannot separate the two sides.
Requests alternate edgepick / direct, `ROUNDS` pairs, one at a time, streamed, timed at the
client; the verdict uses the median of the paired ratios (decode) and of the paired differences
(TTFT). SmolLM2-135M Q4_1, 128 generated tokens, greedy, ignore_eos.
"""

from __future__ import annotations

import os
import statistics

import httpx

from benchmarks._serve_common import (edgepick_serve, engine_key, engine_pid_port, stream_timing,
                                      threads)

ROUNDS = int(os.environ.get("EDGEPICK_BENCH_ROUNDS", "16"))
N_GEN = 128
TARGET_DECODE_RATIO, TARGET_ADDED_TTFT_MS = 0.95, 10.0


def main() -> int:
    from edgepick.assets.bundled import smollm2_q4_1

    body = {"model": "x", "max_tokens": N_GEN, "temperature": 0, "ignore_eos": True,
            "messages": [{"role": "user", "content": "Tell me about the sea."}]}
    with edgepick_serve(["-m", str(smollm2_q4_1()), "--slots", "1", "--ctx", "1024",
                         "--threads", threads()]) as (url, proc):
        pid, port = engine_pid_port(proc)
        direct = f"http://127.0.0.1:{port}"
        ratios, added, ep_tps, dir_tps = [], [], [], []
        # the engine is locked: the direct side sends its key (edgepick, keyless here, ignores it)
        with httpx.Client(timeout=300, limits=httpx.Limits(keepalive_expiry=1.0),
                          headers={"Authorization": f"Bearer {engine_key(pid)}"}) as client:
            stream_timing(client, url, body)  # warm both paths once
            stream_timing(client, direct, body)
            for i in range(ROUNDS):
                order = [(url, True), (direct, False)] if i % 2 == 0 else [(direct, False), (url, True)]
                got = {}
                for base, is_ep in order:
                    got[is_ep] = stream_timing(client, base, body)
                ratios.append(got[True][1] / got[False][1])
                added.append((got[True][0] - got[False][0]) * 1000)
                ep_tps.append(got[True][1])
                dir_tps.append(got[False][1])
    ratio, ttft = statistics.median(ratios), statistics.median(added)
    print(f"decode tok/s: edgepick median {statistics.median(ep_tps):.1f}, llama-server direct "
          f"{statistics.median(dir_tps):.1f}; paired ratio median {ratio:.3f} "
          f"(min {min(ratios):.3f}, max {max(ratios):.3f}) target ≥ {TARGET_DECODE_RATIO}")
    print(f"added TTFT: median {ttft:.2f} ms (min {min(added):.2f}, max {max(added):.2f}) "
          f"target ≤ {TARGET_ADDED_TTFT_MS} ms; {ROUNDS} pairs")
    return 0 if ratio >= TARGET_DECODE_RATIO and ttft <= TARGET_ADDED_TTFT_MS else 1


if __name__ == "__main__":
    raise SystemExit(main())
