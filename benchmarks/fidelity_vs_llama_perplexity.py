"""Fidelity figures from `edgepick.evaluate.fidelity` vs llama.cpp's own `llama-perplexity
--kl-divergence`, side by side, on SmolLM2-135M Q4_0 against its F16, the bundled fidelity text
and the same context (issue #4's done-when: kld_mean, ppl_cand, same_top1 within 3% relative,
kld_p99 within 5%).

    python -m benchmarks.fidelity_vs_llama_perplexity [--ctx 512] [--chunks N] [--threads 2]

Both sides see the same GGUF files (Q4_0 made by llama-quantize from the F16) and the same text
file; llama-perplexity tokenizes it itself, so tokenization, BOS handling, chunking and the
scored positions are checked too, not only the arithmetic.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# metric: (our field, llama-perplexity output pattern, scale to our unit, tolerance)
METRICS = {
    "ppl_ref": (r"Mean PPL\(base\)\s*:\s*([-\d.]+)", 1.0, 0.03),
    "ppl_cand": (r"Mean PPL\(Q\)\s*:\s*([-\d.]+)", 1.0, 0.03),
    "ppl_ratio": (r"Mean PPL\(Q\)/PPL\(base\)\s*:\s*([-\d.]+)", 1.0, 0.03),
    "kld_mean": (r"Mean\s+KLD:\s*([-\d.]+)", 1.0, 0.03),
    "kld_median": (r"Median\s+KLD:\s*([-\d.]+)", 1.0, 0.05),
    "kld_p99": (r"99\.0%\s+KLD:\s*([-\d.]+)", 1.0, 0.05),
    "kld_max": (r"Maximum KLD:\s*([-\d.]+)", 1.0, None),
    "same_top1": (r"Same top p:\s*([-\d.]+)", 0.01, 0.03),
    "rms_dp": (r"RMS Δp\s*:\s*([-\d.]+)", 0.01, 0.03),
}


def _run(argv: list[str]) -> str:
    p = subprocess.run(argv, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({p.returncode}):\n{p.stderr[-2000:]}")
    return p.stdout + p.stderr


def llama_side(ref: str, cand: str, text: Path, ctx: int, chunks: int | None, threads: int,
               work: Path) -> tuple[dict[str, float], str]:
    from edgepick.llama_tools import tool_path

    exe = tool_path("llama-perplexity")
    base = work / "base.kld"
    common = ["-c", str(ctx), "-t", str(threads)] + (["--chunks", str(chunks)] if chunks else [])
    base_log = _run([exe, "-m", ref, "-f", str(text), "--kl-divergence-base", str(base), *common])
    log = _run([exe, "-m", cand, "--kl-divergence-base", str(base), "--kl-divergence", *common])
    out = {}
    for name, (pattern, scale, _) in METRICS.items():
        m = re.search(pattern, log)
        if m:
            out[name] = float(m.group(1)) * scale
    chunks_m = re.search(r"computing over (\d+) chunks", log)
    out["n_chunks"] = float(chunks_m.group(1)) if chunks_m else float("nan")
    # The base run goes through the plain perplexity path (full-precision log-softmax).
    final = re.search(r"Final estimate: PPL = ([\d.]+) \+/- ([\d.]+)", base_log)
    if final:
        out["ppl_ref_perplexity_path"] = float(final.group(1))
        out["ppl_ref_unc"] = float(final.group(2))
    return out, base_log


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--chunks", type=int, default=None, help="default: the whole text")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv if argv is not None else [])

    from edgepick.assets.bundled import smollm2_f16
    from edgepick.evaluate.fidelity import bundled_text, fidelity
    from edgepick.inputs import resolve_ref
    from edgepick.llama_tools import tool_path

    ref = str(smollm2_f16())
    text = bundled_text("fidelity")
    with tempfile.TemporaryDirectory(prefix="fidelity-bench-") as tmp:
        work = Path(tmp)
        cand = str(work / "smollm2-135m-q4_0.gguf")
        _run([tool_path("llama-quantize"), ref, cand, "Q4_0", str(args.threads)])

        t0 = time.perf_counter()
        theirs, _ = llama_side(ref, cand, text, args.ctx, args.chunks, args.threads, work)
        t_llama = time.perf_counter() - t0
        t0 = time.perf_counter()
        ours = fidelity(resolve_ref(ref), resolve_ref(cand), text, ctx=args.ctx,
                        threads=args.threads,
                        max_chunks=args.chunks, cache_dir=work / "cache")
        t_ours = time.perf_counter() - t0

    print(f"SmolLM2-135M Q4_0 vs F16, {text.name}, ctx {args.ctx}: edgepick scored "
          f"{ours.n_chunks} chunks / {ours.n_scored} positions of {ours.n_tokens_text} tokens; "
          f"llama-perplexity {theirs.get('n_chunks', float('nan')):.0f} chunks")
    print(f"{'metric':<11}{'edgepick':>14}{'llama.cpp':>14}{'rel diff':>11}{'tolerance':>11}  verdict")
    missed = []
    for name, (_, _, tol) in METRICS.items():
        mine = float(getattr(ours, name))
        other = theirs.get(name)
        if other is None:
            print(f"{name:<11}{mine:>14.6f}{'(absent)':>14}")
            missed.append(name)
            continue
        rel = abs(mine - other) / abs(other) if other else (0.0 if mine == 0 else float("inf"))
        ok = tol is None or rel <= tol
        verdict = "-" if tol is None else ("ok" if ok else "MISSED")
        print(f"{name:<11}{mine:>14.6f}{other:>14.6f}{100 * rel:>10.3f}%"
              f"{'' if tol is None else f'{100 * tol:.0f}%':>11}  {verdict}")
        if not ok:
            missed.append(name)
    if "ppl_ref_perplexity_path" in theirs:
        print(f"reference PPL, llama-perplexity's perplexity path: "
              f"{theirs['ppl_ref_perplexity_path']:.6f} ± {theirs['ppl_ref_unc']:.6f}; edgepick "
              f"{ours.ppl_ref:.6f} ± {ours.ppl_ref_unc:.6f}")
    print(f"wall time: edgepick {t_ours:.0f} s (reference + candidate), llama-perplexity "
          f"{t_llama:.0f} s (base + kl-divergence); ratio {t_ours / t_llama:.2f}")
    if missed:
        print(f"outside tolerance: {', '.join(missed)}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
