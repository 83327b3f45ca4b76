"""ONNX Runtime GenAI INT4 against llama.cpp Q4_0 on the same model, measured side by side.

SmolLM2-135M: the bundled F16 converted by `edgepick convert` (INT4, k_quant, block 32; the
build is cached) and quantized to Q4_0 by llama.cpp's own quantizer. Both run in process through
edgepick's backends, each in its own worker process (so peak RSS is the engine's alone), with the
same workload: 2 threads (EDGEPICK_BENCH_THREADS), a 512-token prompt, 128 greedy tokens, n_ctx 640, F16 KV on llama.cpp
(og keeps its KV cache in fp32). Rounds alternate the order (ABBA); the verdicts are the medians of
the paired ratios og ÷ llama.cpp, since a shared host drifts more than the gap being measured.
Also prints each build's KLD against the F16 reference (edgepick fidelity, same tokenizer).
No target: this is the engine comparison's evidence, reported as measured (docs/engines.md).
"""

from __future__ import annotations

import os
import statistics
import sys

N_PROMPT, N_GEN = 512, 128
# 1 thread on a host shared with other jobs: llama.cpp's spinning thread barriers collapse when
# the cores are oversubscribed, which would measure the host, not the engine (docs/engines.md)
THREADS = int(os.environ.get("EDGEPICK_BENCH_THREADS", "2"))
REPEATS = int(os.environ.get("EDGEPICK_BENCH_REPEATS", "3"))
ROUNDS = int(os.environ.get("EDGEPICK_BENCH_ROUNDS", "4"))
METRICS = ("prefill_tps", "decode_tps", "peak_rss_mib")


def figures(ref) -> dict[str, float]:
    from benchmarks._point import point_figures
    from edgepick.records import Candidate, RuntimeSettings

    settings = RuntimeSettings(threads=THREADS, n_ctx=N_PROMPT + N_GEN, kv_type="f16")
    return point_figures(Candidate(ref=ref, settings=settings), N_PROMPT, N_GEN, REPEATS)


# The block-size sweep of seed 001 §4 (EDGEPICK_ENGINES_SWEEP=1): k_quant packs only an even
# number of blocks per row, so on SmolLM2 (width 576) only block 32 builds; RTN builds them all.
SWEEP = [("k_quant", 32, 4), ("k_quant", 32, 8), ("default", 32, 4), ("default", 64, 4),
         ("default", 128, 4), ("default", 256, 4)]


def sweep() -> None:
    """Each block size's fidelity against the same F16 reference, with its size and build time."""
    from edgepick.assets.bundled import smollm2_f16
    from edgepick.convert.cache import converted
    from edgepick.convert.facts import conversion_record
    from edgepick.convert.recipe import ConvertRecipe
    from edgepick.evaluate.fidelity import bundled_text, fidelity
    from edgepick.records.model_ref import ModelRef

    ref = ModelRef.file(smollm2_f16(), label="F16")
    print("| algo | block | lm_head | size | conversion | KLD mean | KLD P99 | same top-1 | "
          "PPL ratio |")
    for algo, block, head in SWEEP:
        folder = converted(ref.path, ConvertRecipe(algo=algo, block_size=block,
                                                   lm_head_bits=head))
        rec = conversion_record(str(folder))
        res = fidelity(ref, ModelRef.file(folder, backend="onnxruntime_genai"),
                       bundled_text("fidelity"), ctx=512, threads=THREADS, max_chunks=4)
        print(f"| {algo} | {block} | INT{head} | {rec.size_bytes / 2**20:.0f} MiB | "
              f"{rec.seconds:.0f} s | {res.kld_mean:.4f} ± {res.kld_mean_unc:.4f} | "
              f"{res.kld_p99:.3f} | {res.same_top1:.1%} | {res.ppl_ratio:.3f} |", flush=True)


def main() -> int:
    from benchmarks.harness_overhead import quantized
    from edgepick.assets import bundled
    from edgepick.convert.facts import conversion_record
    from edgepick.evaluate.fidelity import bundled_text, fidelity
    from edgepick.inputs import resolve_ref
    from edgepick.records.model_ref import ModelRef

    og = resolve_ref("smollm2-og-int4")  # converted on first use, then cached
    q4 = ModelRef.file(quantized("Q4_0"), label="llama.cpp Q4_0")
    rec = conversion_record(og.path)
    print(f"SmolLM2-135M: og {rec.recipe.precision} {rec.recipe.algo} block "
          f"{rec.recipe.block_size} ({rec.size_bytes / 2**20:.0f} MiB on disk, converted in "
          f"{rec.seconds:.0f} s) vs llama.cpp Q4_0 ({os.path.getsize(q4.path) / 2**20:.0f} MiB); "
          f"{THREADS} threads, prompt {N_PROMPT}, gen {N_GEN}, {REPEATS} repetitions, {ROUNDS} "
          f"rounds; load average {os.getloadavg()[0]:.1f}", flush=True)
    samples = {side: {k: [] for k in METRICS} for side in ("og", "llama")}
    for rnd in range(ROUNDS):
        order = [("og", og), ("llama", q4)] if rnd % 2 == 0 else [("llama", q4), ("og", og)]
        got = {side: figures(ref) for side, ref in order}
        for side in got:
            for k in METRICS:
                samples[side][k].append(got[side][k])
        print(f"  round {rnd + 1}: " + " | ".join(
            f"{side} prefill {got[side]['prefill_tps']:.0f} decode {got[side]['decode_tps']:.1f} "
            f"tok/s peak {got[side]['peak_rss_mib']:.0f} MiB" for side in ("og", "llama")),
            flush=True)
    print(f"{'metric':14} {'og INT4':>9} {'llama Q4_0':>11} {'paired og/llama':>16} {'range':>13}")
    for k in METRICS:
        a, b = statistics.median(samples["og"][k]), statistics.median(samples["llama"][k])
        paired = [x / y for x, y in zip(samples["og"][k], samples["llama"][k])]
        print(f"{k:14} {a:9.1f} {b:11.1f} {statistics.median(paired):16.3f} "
              f"{min(paired):6.3f}-{max(paired):5.3f}")
    ref = ModelRef.file(bundled.smollm2_f16(), label="F16")
    for name, cand in (("og INT4", og), ("llama.cpp Q4_0", q4)):
        res = fidelity(ref, cand, bundled_text("fidelity"), ctx=512, threads=THREADS,
                       max_chunks=4)
        print(f"fidelity {name:15} vs F16: KLD mean {res.kld_mean:.4f} ± {res.kld_mean_unc:.4f}, "
              f"P99 {res.kld_p99:.3f}, same top-1 {res.same_top1:.1%}, PPL ratio "
              f"{res.ppl_ratio:.3f}")
    if os.environ.get("EDGEPICK_ENGINES_SWEEP") == "1":
        sweep()
    return 0


if __name__ == "__main__":
    sys.exit(main())
