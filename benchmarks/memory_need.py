"""The memory a model needs, predicted (fit) vs measured, with the file mapped and without.

For SmolLM2-135M at Q4_0 (repacked on AVX2: its mapped originals are never read again) and Q8_0
(not repacked), under mmap (llama.cpp's default) and use_mmap=False, each in its own worker:

- measured need, mmap: peak RssAnon + the file pages referenced after the load (bench/need.py);
- measured need, no mmap: VmHWM, where every weight is anonymous memory;
- predicted: fit's total (anonymous + file-backed, fit/need.py), on this machine's profile.

Prints predicted ÷ measured per row; target (issue 24): within 10%. RssFile and VmHWM are shown
beside it, to see why the resident set is not the need.
"""

from __future__ import annotations

import sys

from edgepick.assets import bundled
from edgepick.bench.need import measure_need, need_bytes
from edgepick.fit.planner import fit_one
from edgepick.launch import run_isolated
from edgepick.models.gguf_info import gguf_spec

CTX, PROMPT, GEN = 2048, 128, 64
TYPES = ("Q4_0", "Q8_0")
MIB = 2**20


def quantized(src, ftype: str):
    """llama.cpp's own mixture for `ftype`, quantized in-process (no tool build needed). Cached."""
    import gguf
    import llama_cpp
    from llama_cpp._logger import set_verbose

    def build(dst) -> None:
        set_verbose(False)
        params = llama_cpp.llama_model_quantize_default_params()
        params.ftype, params.nthread = int(gguf.LlamaFileType[f"MOSTLY_{ftype}"]), 2
        if llama_cpp.llama_model_quantize(str(src).encode(), str(dst).encode(), params) != 0:
            raise RuntimeError(f"{src}: quantizing to {ftype} failed")

    return bundled.derived(f"memory-need-{src.stem}.{ftype}.gguf", build)


def _device():
    from edgepick.devices.local import local_device

    return local_device()


def main() -> int:
    files = {t: quantized(bundled.smollm2_f16(), t) for t in TYPES}
    dev = _device()
    print(f"{'type':6} {'mmap':5} {'RssAnon':>8} {'RssFile':>8} {'VmHWM':>8} {'read':>8} "
          f"{'need':>8} {'fit':>8} {'fit/need':>8}   (MiB)")
    worst = 0.0
    for qtype in TYPES:
        path = str(files[qtype])
        spec = gguf_spec(path)
        for mmap in (True, False):
            cand = {"model": path, "settings": {"n_ctx": CTX, "threads": 2, "mmap": mmap}}
            out = run_isolated(measure_need, cand, PROMPT, GEN, timeout=300)
            if not out.ok:
                print(f"{qtype} mmap={mmap}: {out.error}")
                return 1
            v = out.value
            anon = max(out.peak_rss_anon_bytes, v["anon"])
            need = need_bytes(anon, v["file_read"], out.peak_rss_bytes, mmap)
            est = fit_one(spec, None, CTX, dev, mmap=mmap, fill=PROMPT + GEN // 2)
            ratio = est.total_bytes / need
            worst = max(worst, abs(ratio - 1))
            print(f"{qtype:6} {str(mmap):5} {anon / MIB:8.1f} {out.peak_rss_file_bytes / MIB:8.1f} "
                  f"{out.peak_rss_bytes / MIB:8.1f} {(v['file_read'] or 0) / MIB:8.1f} "
                  f"{need / MIB:8.1f} {est.total_bytes / MIB:8.1f} {ratio:8.3f}")
    print(f"worst |fit/need - 1| = {worst:.3f} (target 0.10)")
    return 0 if worst <= 0.10 else 1


if __name__ == "__main__":
    sys.exit(main())
