"""What one decoding step costs as its width grows (issue 37): the floor under eval's time.

The bundled SmolLM2 (Q4_1 and, converted from it, whatever `--model` names) is loaded as eval
loads it (8 sequences in the one cache of n_ctx cells); 8 sequences get a 200-token prompt each,
then steps of 1, 2, 4 and 8 tokens (one per sequence, logits for each, as eval's generating
sequences) are timed, each the median of `--repeats`; then a 256-token prompt chunk, as eval's
prefill. A line through the step times gives a fixed cost per step and a marginal cost per
decoded token.

If the marginal cost is most of a wide step's cost, decoding is compute-bound here: more slots
or a better schedule saves the fixed cost of the steps they remove and no more, and eval's time
is close to (tokens decoded x marginal) + (prompt tokens prefilled x prefill cost). Printed:
those costs and the share of a width-8 step that is the marginal part. No target: it is the
measurement docs/default-run.md's floor is computed from.

`--threads N` (default 2), `--repeats N` (default 15), `--model PATH` (a GGUF; default the
bundled Q4_1).
"""

from __future__ import annotations

import statistics
import sys
import time

WIDTHS = (1, 2, 4, 8)
PROMPT = 200


def _steps(backend, repeats: int) -> tuple[dict[int, float], float]:
    import llama_cpp

    from edgepick.backends.llama_cpp_batched import _Batch

    ctx = backend.llm._ctx.ctx
    mem = llama_cpp.llama_get_memory(ctx)
    batch = _Batch(512, 8)
    try:
        for seq in range(8):  # a prompt each: the steps attend over a filled cache, as in eval
            batch.clear()
            for i in range(PROMPT):
                batch.add(100 + (7 * i + seq) % 500, i, seq, i == PROMPT - 1)
            assert llama_cpp.llama_decode(ctx, batch.b) == 0
        cost = {}
        for w in WIDTHS:
            times = []
            for r in range(repeats):
                batch.clear()
                for seq in range(w):
                    batch.add(600 + r, PROMPT, seq, True)
                t0 = time.perf_counter()
                assert llama_cpp.llama_decode(ctx, batch.b) == 0
                times.append(time.perf_counter() - t0)
                for seq in range(w):  # the next repeat decodes the same position again
                    llama_cpp.llama_memory_seq_rm(mem, seq, PROMPT, -1)
            cost[w] = statistics.median(times)
        chunk = []
        for r in range(3):
            batch.clear()
            for i in range(256):
                batch.add(700 + i % 300, PROMPT + i, 0, i == 255)
            t0 = time.perf_counter()
            assert llama_cpp.llama_decode(ctx, batch.b) == 0
            chunk.append((time.perf_counter() - t0) / 256)
            llama_cpp.llama_memory_seq_rm(mem, 0, PROMPT, -1)
        return cost, statistics.median(chunk)
    finally:
        batch.free()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    threads = int(argv[argv.index("--threads") + 1]) if "--threads" in argv else 2
    repeats = int(argv[argv.index("--repeats") + 1]) if "--repeats" in argv else 15
    from edgepick.assets.bundled import smollm2_q4_1
    from edgepick.backends import get_backend
    from edgepick.backends.base import LoadOptions
    from edgepick.inputs import resolve_ref
    from edgepick.records.candidate import Candidate, RuntimeSettings

    model = argv[argv.index("--model") + 1] if "--model" in argv else str(smollm2_q4_1())
    cand = Candidate(ref=resolve_ref(model), settings=RuntimeSettings(threads=threads))
    backend = get_backend(cand.backend)
    backend.load(cand, LoadOptions(n_seq=8, shared_kv=True))
    try:
        cost, prefill = _steps(backend, repeats)
    finally:
        backend.unload()
    slope, fixed = statistics.linear_regression(list(cost), list(cost.values()))
    for w, c in cost.items():
        print(f"step of {w} decoded token(s): {1000 * c:6.1f} ms  ({1000 * c / w:5.1f} ms a token)")
    print(f"fixed per step {1000 * fixed:.1f} ms, marginal per decoded token {1000 * slope:.2f} ms, "
          f"prefill {1000 * prefill:.2f} ms a prompt token")
    print(f"a width-8 step is {8 * slope / cost[8]:.0%} marginal cost: "
          f"{'compute-bound' if 8 * slope > 0.6 * cost[8] else 'fixed-cost-bound'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
