"""Does speculative decoding pay on this host, per task? (bench/speculation.py measures.)

Target: the bundled SmolLM2-135M-Instruct as F16 (`smollm2-f16`, dequantized from the bundled
Q4_1). Kinds: `ngram-mod` (no second model) and `draft-simple` with the bundled Q4_1 as the
draft: the same weights at 4.5 bits, so the same vocabulary by construction (made by nothing
more than the package's own file; the F16 target is the derived one). Items: the bundled demo
set's held-out spread, `--per-task` items of each `--tasks` kind, at eval's own per-task budgets
(evaluate/outputs.py DEFAULT_MAX_TOKENS). Prints, per task and kind, the speed-up of decoding with
its 95% interval, the acceptance rate with its interval, the mean accepted length, the draft's
share of decode time, the share of items whose greedy text is unchanged, and the largest gap
between the client's decode speed and llama-server's own `timings`.

    python benchmarks/speculation.py [--tasks extraction,summary,qa] [--per-task 8]
                                     [--threads 2] [--n-max 8] [--draft D.gguf] [--json F]

A lower-quant draft of the same model is the same vocabulary by construction:
`llama-quantize SmolLM2-135M-Instruct.F16-from-Q4_1.gguf draft-q4_0.gguf Q4_0` (Q4_0 has
llama.cpp's repacked x86 kernels; Q4_1 has none).

No target: on a 2-core host speculation may lose everywhere, and that is an answer.
"""

from __future__ import annotations

import argparse
import json
import sys

def main(argv: list[str] | None = None) -> int:
    from edgepick.assets.bundled import smollm2_f16, smollm2_q4_1
    from edgepick.bench.speculation import figures, run_requests, timing_agreement
    from edgepick.evaluate.eval_sets import bundled_set_path, spread
    from edgepick.evaluate.items import load_eval_set
    from edgepick.evaluate.outputs import DEFAULT_MAX_TOKENS
    from edgepick.records.candidate import RuntimeSettings
    from edgepick.records.model_ref import ModelRef

    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", default="extraction,summary,qa")
    ap.add_argument("--per-task", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--n-max", type=int, default=8)
    ap.add_argument("--draft", help="the draft GGUF (default: the bundled Q4_1); e.g. a Q4_0 "
                                    "made with llama-quantize F16 OUT Q4_0")
    ap.add_argument("--json")
    a = ap.parse_args(argv)

    items, _ = load_eval_set(bundled_set_path("demo"))
    chosen = []
    for task in a.tasks.split(","):
        chosen += spread([it for it in items if it.task == task], a.per_task)
    base = RuntimeSettings(threads=a.threads, n_ctx=1024)
    draft = a.draft or str(smollm2_q4_1())
    kinds = [base.model_copy(update={"speculative": s}) for s in (
        RuntimeSettings(speculative={"type": "ngram-mod"}).speculative,
        RuntimeSettings(speculative={"type": "draft-simple", "model": draft,
                                     "n_max": a.n_max}).speculative)]
    target = ModelRef.of(str(smollm2_f16()), backend="llama_server")
    reqs = run_requests(target, base, kinds, chosen, DEFAULT_MAX_TOKENS)
    rows = figures(reqs)

    def iv(x, lo, hi, f="{:.2f}"):
        return "-" if x is None else f"{f.format(x)} [{f.format(lo)}, {f.format(hi)}]"

    print(f"{'task':<11}{'kind':<44}{'n':>3}  {'speed-up [95%]':<22}{'acceptance [95%]':<22}"
          f"{'len':>5}{'draft%':>7}{'same':>6}")
    for r in rows:
        print(f"{r.task:<11}{r.setting:<44}{r.items:>3}  "
              f"{iv(r.speedup, r.speedup_low, r.speedup_high):<22}"
              f"{iv(r.acceptance, r.acceptance_low, r.acceptance_high):<22}"
              f"{'-' if r.mean_accepted_len is None else f'{r.mean_accepted_len:.2f}':>5}"
              f"{'-' if r.draft_share is None else f'{100 * r.draft_share:.0f}':>7}"
              f"{r.identical:>3}/{r.items:<2} {r.verdict}")
    gap = timing_agreement(reqs)
    print(f"client vs llama-server timings (summed over each setting's requests): largest gap "
          f"{'-' if gap is None else f'{100 * gap:.1f}%'}")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"figures": [r.model_dump() for r in rows],
                       "requests": [r.model_dump() for r in reqs], "timing_gap": gap}, fh,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
