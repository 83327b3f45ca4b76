"""edgepick's measuring harness against llama.cpp's own `llama-bench`, same file, same settings.

For SmolLM2-135M at Q8_0 and Q4_0 (quantized here from the F16 reference with llama.cpp's own
quantizer), 2 threads, flash attention on, n_batch = n_ubatch = 512, F16 KV cache:
- prefill: edgepick's prefill_tps median over a 512-token prompt vs `llama-bench -p 512 -n 0`;
- decode: edgepick's decode_tps median over 128 tokens generated after that prompt vs
  `llama-bench -p 0 -n 128 -d 512` (generation at the same depth of 512 tokens).
Both sides are measured in this run, alternating, `ROUNDS` times. A shared 2-core host drifts by
±15% over minutes, which is larger than the gap being measured, so each round pairs the two
sides back to back and the verdict uses the median over rounds of that paired ratio
edgepick ÷ llama-bench; the medians of all samples are printed next to it. Targets (issue 3):
decode ≥ 0.95, prefill ≥ 0.90.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

N_PROMPT, N_GEN, THREADS, BATCH, UBATCH = 512, 128, 2, 512, 512
REPEATS = int(os.environ.get("EDGEPICK_BENCH_REPEATS", "5"))
ROUNDS = int(os.environ.get("EDGEPICK_BENCH_ROUNDS", "5"))
TARGETS = {"decode_tps": 0.95, "prefill_tps": 0.90}
FTYPES = {"Q8_0": 7, "Q4_0": 2}  # llama_ftype values (LLAMA_FTYPE_MOSTLY_*)


def quantized(ftype: str) -> Path:
    """SmolLM2 F16 → `ftype` with llama.cpp's quantizer (in-process, the engine's own code)."""
    import llama_cpp

    from edgepick.assets import bundled

    dst = bundled.cache_dir() / f"SmolLM2-135M-Instruct.{ftype}-from-F16.gguf"
    if dst.exists():
        return dst
    src = bundled.smollm2_f16()
    tmp = dst.with_suffix(f".tmp{os.getpid()}")
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = FTYPES[ftype]
    params.nthread = THREADS
    rc = llama_cpp.llama_model_quantize(str(src).encode(), str(tmp).encode(), params)
    if rc != 0:
        tmp.unlink(missing_ok=True)
        raise SystemExit(f"llama_model_quantize {ftype} failed with code {rc}")
    tmp.replace(dst)
    return dst


def edgepick_figures(path: Path) -> dict[str, float]:
    from benchmarks._point import point_figures
    from edgepick.records import Candidate, RuntimeSettings

    settings = RuntimeSettings(threads=THREADS, n_ctx=N_PROMPT + N_GEN, n_batch=BATCH,
                               n_ubatch=UBATCH, kv_type="f16", flash_attn=True)
    return point_figures(Candidate(model=str(path), settings=settings), N_PROMPT, N_GEN, REPEATS)


def llama_bench(path: Path, extra: list[str]) -> dict:
    from edgepick.llama_tools import tool_path

    argv = [tool_path("llama-bench"), "-m", str(path), "-t", str(THREADS), "-b", str(BATCH),
            "-ub", str(UBATCH), "-fa", "1", "-ctk", "f16", "-ctv", "f16",
            "-r", str(REPEATS), "-o", "json", *extra]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise SystemExit(f"llama-bench failed ({proc.returncode}): {proc.stderr.strip()[-400:]}")
    (test,) = json.loads(proc.stdout)
    return test


def llama_bench_figures(path: Path) -> dict[str, float]:
    pp = llama_bench(path, ["-p", str(N_PROMPT), "-n", "0"])
    tg = llama_bench(path, ["-p", "0", "-n", str(N_GEN), "-d", str(N_PROMPT)])
    assert pp["n_prompt"] == N_PROMPT and tg["n_gen"] == N_GEN and tg["n_depth"] == N_PROMPT
    return {"prefill_tps": statistics.median(pp["samples_ts"]),
            "decode_tps": statistics.median(tg["samples_ts"]),
            "build": f"{pp.get('build_commit', '?')} ({pp.get('build_number', '?')})"}


def main() -> int:
    files = {ft: quantized(ft) for ft in FTYPES}
    print(f"SmolLM2-135M, {THREADS} threads, flash-attn on, n_batch {BATCH}, n_ubatch {UBATCH}, "
          f"KV f16, prompt {N_PROMPT}, gen {N_GEN}, {REPEATS} repetitions, {ROUNDS} alternating "
          f"rounds; load average {os.getloadavg()[0]:.1f}", flush=True)
    ours: dict[str, dict[str, list[float]]] = {ft: {k: [] for k in TARGETS} for ft in files}
    theirs: dict[str, dict[str, list[float]]] = {ft: {k: [] for k in TARGETS} for ft in files}
    build = "?"
    for rnd in range(ROUNDS):
        for ft, path in files.items():
            # ABBA order: a steady drift over the run then favours neither side
            if rnd % 2 == 0:
                e, b = edgepick_figures(path), llama_bench_figures(path)
            else:
                b, e = llama_bench_figures(path), edgepick_figures(path)
            build = b["build"]
            for k in TARGETS:
                ours[ft][k].append(e[k])
                theirs[ft][k].append(b[k])
            print(f"  round {rnd + 1} {ft}: edgepick prefill {e['prefill_tps']:.1f} decode "
                  f"{e['decode_tps']:.1f} | llama-bench prefill {b['prefill_tps']:.1f} decode "
                  f"{b['decode_tps']:.1f} tok/s", flush=True)
    print(f"llama-bench build {build}")
    print(f"{'file':8} {'metric':12} {'edgepick':>10} {'llama-bench':>12} {'pooled':>7} "
          f"{'paired':>7} {'range':>13} {'target':>7}  verdict")
    missed = 0
    for ft in files:
        for k, target in TARGETS.items():
            a, b = statistics.median(ours[ft][k]), statistics.median(theirs[ft][k])
            paired = [x / y for x, y in zip(ours[ft][k], theirs[ft][k])]
            ratio = statistics.median(paired)
            ok = ratio >= target
            missed += not ok
            print(f"{ft:8} {k:12} {a:10.1f} {b:12.1f} {a / b:7.3f} {ratio:7.3f} "
                  f"{min(paired):6.3f}-{max(paired):5.3f} {target:7.2f}  "
                  f"{'ok' if ok else 'BELOW TARGET'}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
