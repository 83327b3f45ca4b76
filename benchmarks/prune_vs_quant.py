"""Does pruning buy anything quantization does not? Every combination of blocks removed (the
least important by the KLD ranking on the calibration text) and llama.cpp file type, built from
the F16 of a bundled model, judged against that F16 on the held-out fidelity text: file size and
mean KLD on one front, and a sentence saying whether a pruned build is on it.

    python -m benchmarks.prune_vs_quant [--model smollm2|gemma3] [--prune 0,1,2,4]
        [--types F16,Q8_0,Q4_K_M,Q4_0] [--ctx 256] [--chunks 4] [--store FILE] [--json FILE]
        [--order FILE]

A build is on the front when no other build is both smaller (or as small) and closer to the
source (or as close), one of them strictly. The ranking is stored in --store (default: a
temporary one), so a second run with the same store ranks nothing again. `--order FILE` takes
the block order from a `benchmarks.prune_ranking --json` file instead of ranking here (e.g. the
ranking of the bundled Q4_1 the F16 was made from: a 30-block ranking costs 60 passes).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path


def front(rows: list[dict]) -> set[str]:
    """Names of the builds no other build dominates in (size, KLD)."""
    out = set()
    for r in rows:
        if not any(o is not r and o["size"] <= r["size"] and o["kld"] <= r["kld"]
                   and (o["size"] < r["size"] or o["kld"] < r["kld"]) for o in rows):
            out.add(r["name"])
    return out


def verdict(rows: list[dict], on_front: set[str]) -> str:
    pruned = [r for r in rows if r["pruned"] > 0]
    kept = [r for r in pruned if r["name"] in on_front]
    if not pruned:
        return "no pruned build was measured"
    if not kept:
        best = min(pruned, key=lambda r: r["kld"])
        dom = min((r for r in rows if r["pruned"] == 0 and r["size"] <= best["size"]
                   and r["kld"] <= best["kld"]), key=lambda r: r["kld"], default=None)
        return (f"pruning bought nothing here: every pruned build is dominated (the best, "
                f"{best['name']}, KLD {best['kld']:.4f} at {best['size'] / 2**20:.1f} MiB"
                + (f", against {dom['name']}: KLD {dom['kld']:.4f} at "
                   f"{dom['size'] / 2**20:.1f} MiB)" if dom else ")"))
    names = ", ".join(r["name"] for r in kept)
    return (f"pruning reached points quantization did not: {names} on the front (check the "
            f"KLD is acceptable for the task before taking one)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="smollm2", choices=["smollm2", "gemma3"])
    ap.add_argument("--prune", default="0,1,2,4")
    ap.add_argument("--types", default="F16,Q8_0,Q4_K_M,Q4_0")
    ap.add_argument("--ctx", type=int, default=256)
    ap.add_argument("--chunks", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--store", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--order", default=None)
    args = ap.parse_args(argv if argv is not None else [])

    from edgepick.assets.bundled import gemma3_270m_f16, smollm2_f16
    from edgepick.evaluate.fidelity import bundled_text, fidelity
    from edgepick.prune.build import build as prune_build
    from edgepick.prune.rank import rank_blocks
    from edgepick.quantize.ladder import build as quantize
    from edgepick.records.model_ref import ModelRef
    from edgepick.store.results import ResultStore

    src = str({"smollm2": smollm2_f16, "gemma3": gemma3_270m_f16}[args.model]())
    calib, held = str(bundled_text("calibration")), bundled_text("fidelity")
    rows = []
    with tempfile.TemporaryDirectory(prefix="prune-vs-quant-") as tmp:
        work = Path(tmp)
        store = ResultStore(args.store or work / "results.sqlite")
        if args.order:
            order, where = json.loads(Path(args.order).read_text())["ranking"]["by_kld"], \
                f"the KLD ranking in {args.order}"
        else:
            r = rank_blocks(src, calib, ctx=args.ctx, chunks=args.chunks, threads=args.threads,
                            store=store, work_dir=tmp)
            order, where = r.by_kld, f"kld ranking {r.key}"
        for count in (int(c) for c in args.prune.split(",")):
            removed = sorted(order[:count])
            base = src
            if count:
                base = str(work / f"drop{count}.gguf")
                prune_build(src, base, removed, ranking=where)
            for t in args.types.split(","):
                path = base if t == "F16" else str(work / f"drop{count}.{t}.gguf")
                if t != "F16":
                    quantize(base, path, t, threads=args.threads)
                elif not count:
                    continue  # the reference itself
                f = fidelity(ModelRef.file(src), ModelRef.file(path), held, ctx=args.ctx,
                             threads=args.threads, max_chunks=args.chunks)
                rows.append({"name": f"{t}" + (f" −{count} blocks" if count else ""),
                             "type": t, "pruned": count, "removed": removed,
                             "size": Path(path).stat().st_size, "kld": f.kld_mean,
                             "kld_p99": f.kld_p99, "same_top1": f.same_top1})
                if path != base:
                    Path(path).unlink()
            if count:
                Path(base).unlink()
    on = front(rows)
    print(f"{Path(src).name} against itself on {held.name}, ctx {args.ctx} × {args.chunks} "
          f"chunks; blocks by {where}: {order[:8]}")
    print(f"{'build':<22}{'MiB':>9}{'KLD mean':>10}{'KLD P99':>9}{'same top-1':>11}  front")
    for row in sorted(rows, key=lambda x: x["size"]):
        print(f"{row['name']:<22}{row['size'] / 2**20:>9.1f}{row['kld']:>10.4f}"
              f"{row['kld_p99']:>9.3f}{row['same_top1']:>11.3f}  "
              f"{'✓' if row['name'] in on else ''}")
    print(verdict(rows, on))
    if args.json:
        Path(args.json).write_text(json.dumps({"model": src, "ranking": order,
                                               "rows": rows, "front": sorted(on)}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
