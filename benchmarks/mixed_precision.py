"""Mixed precision vs uniform quantization on the bundled SmolLM2-135M (issue #5).

Reference: the exact F16 dequantization of the bundled model (smollm2_f16()). Builds, with
llama.cpp's own quantizer: uniform Q8_0, Q4_0, Q4_K_M (llama.cpp's standard mixtures) and the
automatic recipe (--low Q4_0 --high Q8_0 --budget 1.15x, i.e. ≤ 1.15 × the uniform Q4_0 file),
whose sensitivity analysis runs on the bundled *calibration* text. Every file is then judged on
the bundled *fidelity* text, which the recipe never saw: size, KLD mean / P99, top-1 agreement,
and decode tokens/s measured side by side in this run. A second table shows whether an
importance matrix (from the calibration text) helps Q4_0 / Q3_K_M / Q2_K.

Run: .venv/bin/python -m benchmarks.mixed_precision [--chunks N] [--sens-chunks N] [--no-speed]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path


def _kld(ref: str, path: str, text: Path, ctx: int, chunks: int | None, threads: int) -> dict:
    from edgepick.evaluate.fidelity import fidelity
    from edgepick.records.model_ref import ModelRef

    r = fidelity(ModelRef.file(ref), ModelRef.file(path), text, ctx=ctx, threads=threads,
                 max_chunks=chunks)
    return {"kld_mean": r.kld_mean, "kld_p99": r.kld_p99, "same_top1": r.same_top1,
            "ppl_ratio": r.ppl_ratio, "n_scored": r.n_scored}


def _decode_tps(path: str, threads: int) -> float | None:
    """Median decode tok/s over 3 runs (1 warm-up), in a worker process of its own."""
    from edgepick.bench.measure import measure_point
    from edgepick.launch import run_isolated
    from edgepick.bench.workload import Workload
    from edgepick.records.candidate import Candidate, RuntimeSettings

    cand = Candidate(model=path, settings=RuntimeSettings(threads=threads, n_ctx=512))
    wl = Workload(prompt_tokens=64, gen_tokens=64, warmup=1, repeats=3)
    out = run_isolated(measure_point, cand.model_dump(), wl.model_dump(), timeout=600)
    if not out.ok:
        print(f"  speed of {path} failed: {out.error}", file=sys.stderr)
        return None
    tps = []
    for run in out.value["runs"]:
        t = run["requests"][0]["token_times"]
        if len(t) > 1 and t[-1] > t[0]:
            tps.append((len(t) - 1) / (t[-1] - t[0]))  # tokens after the first / time after it
    return statistics.median(tps) if tps else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--chunks", type=int, default=None, help="fidelity-text chunks (default all)")
    ap.add_argument("--sens-chunks", type=int, default=4, help="calibration chunks per unit")
    ap.add_argument("--budget", default="1.15x")
    ap.add_argument("--by", default="class", choices=["block", "class"],
                    help="sensitivity units (block: 31 units on SmolLM2, ~4x the cost)")
    ap.add_argument("--imatrix-chunks", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-speed", action="store_true")
    ap.add_argument("--no-imatrix", action="store_true")
    ap.add_argument("--json", dest="json_out", default=None, help="also write figures here")
    args = ap.parse_args(argv)

    from edgepick.assets.bundled import cache_dir, smollm2_f16
    from edgepick.evaluate.fidelity import bundled_text
    from edgepick.quantize.imatrix import compute_imatrix
    from edgepick.quantize.ladder import build, build_ladder
    from edgepick.quantize.recipe import auto_recipe, budget_bytes, build_recipe
    from edgepick.quantize.sensitivity import analyze
    from edgepick.store.results import ResultStore

    ref = str(smollm2_f16())
    calib, held_out = bundled_text("calibration"), bundled_text("fidelity")
    work = cache_dir() / "bench-mixed-precision"
    work.mkdir(parents=True, exist_ok=True)
    store = ResultStore(work / "results.sqlite")
    t0 = time.perf_counter()

    print(f"reference {ref}\nrecipe chosen on {calib}\njudged on {held_out}", flush=True)
    uniform = build_ladder(ref, ["Q8_0", "Q4_0", "Q4_K_M"], work, threads=args.threads)
    limit = budget_bytes(ref, args.budget, "Q4_0", args.threads)
    report = analyze(ref, low="Q4_0", high="Q8_0", text=str(calib), by=args.by, ctx=args.ctx,
                     chunks=args.sens_chunks, threads=args.threads, store=store)
    recipe = auto_recipe(ref, report, args.budget, limit)
    mixed = build_recipe(ref, recipe, work, threads=args.threads)
    kept = [u.unit for u in recipe.units if u.type == "Q8_0"]
    print(f"sensitivity top 5: {', '.join(report.ranked_units()[:5])}")
    print(f"recipe keeps at Q8_0: {', '.join(kept)}")

    rows = []
    for f, name in [(uniform[0], "uniform Q8_0"), (uniform[1], "uniform Q4_0"),
                    (uniform[2], "uniform Q4_K_M"), (mixed, f"auto by {args.by} ≤{args.budget}")]:
        m = _kld(ref, f.path, held_out, args.ctx, args.chunks, args.threads)
        tps = None if args.no_speed else _decode_tps(f.path, args.threads)
        rows.append({"build": name, "path": f.path, "size_bytes": f.size_bytes, "bpw": f.bpw,
                     **m, "decode_tps": tps})

    q4 = rows[1]
    print(f"\n{'build':28} {'size MiB':>9} {'×Q4_0':>6} {'bpw':>5} {'KLD mean':>9} {'KLD P99':>8} "
          f"{'top-1':>6} {'tok/s':>7} {'×Q4_0':>6}")
    for r in rows:
        tps = f"{r['decode_tps']:7.1f}" if r["decode_tps"] else "      -"
        rel = f"{r['decode_tps'] / q4['decode_tps']:6.2f}" if r["decode_tps"] and \
            q4["decode_tps"] else "     -"
        print(f"{r['build']:28} {r['size_bytes'] / 2**20:9.2f} {r['size_bytes'] / q4['size_bytes']:6.3f} "
              f"{r['bpw']:5.2f} {r['kld_mean']:9.5f} {r['kld_p99']:8.4f} {r['same_top1']:6.3f} "
              f"{tps} {rel}")
    auto = rows[3]
    ok = auto["size_bytes"] <= limit and auto["kld_mean"] < q4["kld_mean"]
    print(f"\ndone-when: auto size {auto['size_bytes'] / q4['size_bytes']:.3f}× Q4_0 (budget "
          f"{args.budget}), KLD mean {auto['kld_mean']:.5f} vs Q4_0 {q4['kld_mean']:.5f} "
          f"({(1 - auto['kld_mean'] / q4['kld_mean']) * 100:+.1f}% lower) on held-out text: "
          f"{'PASS' if ok else 'FAIL'}")

    imat_rows = []
    if not args.no_imatrix:
        im = compute_imatrix(ref, str(calib), str(work / "smollm2-f16.imatrix.gguf"),
                             ctx=args.ctx, chunks=args.imatrix_chunks, threads=args.threads)
        print(f"\nimportance matrix from {calib}: {im.chunks} chunks")
        print(f"{'type':8} {'KLD mean plain':>15} {'with imatrix':>13} {'change':>8} "
              f"{'P99 plain':>10} {'with':>8}")
        for ftype in ["Q4_0", "Q3_K_M", "Q2_K"]:
            plain = build(ref, work / f"plain.{ftype}.gguf", ftype, threads=args.threads)
            withm = build(ref, work / f"imatrix.{ftype}.gguf", ftype, imatrix=im.path,
                          threads=args.threads)
            a = _kld(ref, plain.path, held_out, args.ctx, args.chunks, args.threads)
            b = _kld(ref, withm.path, held_out, args.ctx, args.chunks, args.threads)
            imat_rows.append({"type": ftype, "plain": a, "imatrix": b})
            print(f"{ftype:8} {a['kld_mean']:15.5f} {b['kld_mean']:13.5f} "
                  f"{(b['kld_mean'] / a['kld_mean'] - 1) * 100:+7.1f}% {a['kld_p99']:10.4f} "
                  f"{b['kld_p99']:8.4f}")
    print(f"\n(total {time.perf_counter() - t0:.0f} s)")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(
            {"rows": rows, "imatrix": imat_rows, "recipe_units_high": kept,
             "sensitivity_top5": report.ranked_units()[:5], "budget_bytes": limit, "pass": ok},
            indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
