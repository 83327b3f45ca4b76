"""Does the block ranking choose better than chance? Rank a bundled model's blocks on the
calibration text (`edgepick prune rank`), then on the held-out fidelity text measure the KLD of
the model without the ranking's first N blocks (by KLD and by influence) against the median of
random choices of N blocks; PASS when the KLD ranking's choice beats that median at every N.

    python -m benchmarks.prune_ranking [--model smollm2|gemma3|PATH] [--counts 2,4]
        [--random 5] [--ctx 256] [--chunks 4] [--seed 0] [--json FILE]

The random choices are seeded; every KLD is llama.cpp's logits compared by
edgepick.evaluate.fidelity (same rules as llama-perplexity --kl-divergence).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path


def _model(name: str) -> str:
    from edgepick.assets.bundled import gemma3_270m_q4_k_m, smollm2_q4_1

    return str({"smollm2": smollm2_q4_1, "gemma3": gemma3_270m_q4_k_m}.get(name, lambda: name)())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--counts", default="2,4")
    ap.add_argument("--random", type=int, default=5)
    ap.add_argument("--ctx", type=int, default=256)
    ap.add_argument("--chunks", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv if argv is not None else [])

    from edgepick.evaluate.fidelity import bundled_text
    from edgepick.prune.rank import rank_blocks, removal_kld
    from edgepick.store.results import ResultStore

    src = _model(args.model)
    calib, held = str(bundled_text("calibration")), str(bundled_text("fidelity"))
    rng = random.Random(args.seed)
    rows = []
    with tempfile.TemporaryDirectory(prefix="prune-bench-") as tmp:
        t0 = time.perf_counter()
        r = rank_blocks(src, calib, ctx=args.ctx, chunks=args.chunks, threads=args.threads,
                        store=ResultStore(Path(tmp) / "results.sqlite"), work_dir=tmp)
        t_rank = time.perf_counter() - t0
        n = len(r.blocks)

        def kld(blocks: list[int]) -> float:
            return removal_kld(src, sorted(blocks), held, ctx=args.ctx, chunks=args.chunks,
                               threads=args.threads, work=Path(tmp))["kld_mean"]

        for count in (int(c) for c in args.counts.split(",")):
            by_kld, by_inf = sorted(r.by_kld[:count]), sorted(r.by_influence[:count])
            randoms = [sorted(rng.sample(range(n), count)) for _ in range(args.random)]
            row = {"count": count, "kld_choice": by_kld, "kld_choice_kld": kld(by_kld),
                   "influence_choice": by_inf,
                   "influence_choice_kld": kld(by_inf) if by_inf != by_kld else None,
                   "random": [{"blocks": b, "kld": kld(b)} for b in randoms]}
            if row["influence_choice_kld"] is None:
                row["influence_choice_kld"] = row["kld_choice_kld"]
            row["random_median"] = statistics.median(x["kld"] for x in row["random"])
            row["pass"] = row["kld_choice_kld"] < row["random_median"]
            rows.append(row)

    print(f"{Path(src).name}: {n} blocks, ranked on {Path(calib).name} ({r.n_tokens} tokens, "
          f"{t_rank:.0f} s), judged on {Path(held).name}; ctx {args.ctx} × {args.chunks} chunks")
    rho = "undetermined" if r.spearman is None else f"{r.spearman:+.3f}"
    print(f"Spearman(influence, KLD) over the blocks: {rho}")
    print(f"least important by KLD: {r.by_kld[:8]}; by influence: {r.by_influence[:8]}")
    print(f"{'N':>2} {'KLD choice':>18} {'KLD':>8} {'infl. choice':>18} {'KLD':>8} "
          f"{'random median':>14} {'random min–max':>16}  verdict")
    for row in rows:
        ks = [x["kld"] for x in row["random"]]
        print(f"{row['count']:>2} {str(row['kld_choice']):>18} {row['kld_choice_kld']:>8.4f} "
              f"{str(row['influence_choice']):>18} {row['influence_choice_kld']:>8.4f} "
              f"{row['random_median']:>14.4f} {min(ks):>7.4f}–{max(ks):<8.4f}  "
              f"{'PASS' if row['pass'] else 'FAIL'}")
    if args.json:
        Path(args.json).write_text(json.dumps({"model": src, "spearman": r.spearman,
                                               "ranking": r.model_dump(mode="json"),
                                               "rows": rows}, indent=2))
    return 0 if all(row["pass"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
