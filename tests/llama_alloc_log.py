"""What llama.cpp allocates for a model and its runtime settings, read from its own log (the
oracle for fit's KV cache and compute buffer): several contexts built one after another in one
worker process, each log cut at a marker."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

MIB = 2**20
KV = re.compile(r"llama_kv_cache: size = +([\d.]+) MiB \( *(\d+) cells, +(\d+) layers.*"
                r"K \((\w+)\): +([\d.]+) MiB, V \((\w+)\): +([\d.]+) MiB")
COMPUTE = re.compile(r"CPU compute buffer size = +([\d.]+) MiB")
REPACK = re.compile(r"CPU_REPACK model buffer size = +([\d.]+) MiB")
CPU_MODEL = re.compile(r"\bCPU model buffer size = +([\d.]+) MiB")  # weights read, not mapped
MARK = "=== edgepick settings "

WORKER = r"""
import json, sys, llama_cpp
for raw in sys.argv[2:]:
    s = json.loads(raw)
    kw = dict(model_path=sys.argv[1], n_threads=1, verbose=True, swa_full=False, flash_attn=True)
    kw.update({k: v for k, v in s.items() if k not in ("kv_type", "kv_type_v")})
    if "kv_type" in s:
        kw["type_k"] = getattr(llama_cpp, "GGML_TYPE_" + s["kv_type"].upper())
        kw["type_v"] = getattr(llama_cpp, "GGML_TYPE_" + s.get("kv_type_v", s["kv_type"]).upper())
    print("=== edgepick settings " + raw, file=sys.stderr, flush=True)
    llm = llama_cpp.Llama(**kw)
    del llm
"""


def allocations(path: str | Path, settings: list[dict], timeout: int = 300) -> list[dict]:
    """Per settings dict (n_ctx, kv_type, kv_type_v, flash_attn (default on, as edgepick
    runs), n_batch, n_ubatch, use_mmap):
    the KV cache, its K and V (MiB, each summed over a sliding-window model's two caches), its cells per
    cache, the CPU compute buffer, the repacked weights and the weights read into memory
    (use_mmap false) llama.cpp logged."""
    r = subprocess.run([sys.executable, "-c", WORKER, str(path)]
                       + [json.dumps(s) for s in settings],
                       capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stderr[-2000:]
    out = []
    for chunk in r.stderr.split(MARK)[1:]:
        kv = KV.findall(chunk)
        compute = COMPUTE.findall(chunk)
        assert kv and compute, chunk[-2000:]
        repack = REPACK.findall(chunk)
        out.append({"kv_mib": sum(float(m[0]) for m in kv),
                    "k_mib": sum(float(m[4]) for m in kv), "v_mib": sum(float(m[6]) for m in kv),
                    "cells": [int(m[1]) for m in kv], "compute_mib": float(compute[-1]),
                    "repack_mib": float(repack[0]) if repack else 0.0,
                    "read_mib": sum(float(m) for m in CPU_MODEL.findall(chunk))})
    assert len(out) == len(settings), r.stderr[-2000:]
    return out


def smollm2_q8_0() -> Path:
    """The bundled SmolLM2 at Q8_0 (llama.cpp's quantizer, in process), built once."""
    from edgepick.assets import bundled

    def build(dst: Path) -> None:
        import llama_cpp

        params = llama_cpp.llama_model_quantize_default_params()
        params.ftype, params.nthread = llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0, 2
        assert llama_cpp.llama_model_quantize(str(bundled.smollm2_f16()).encode(),
                                              str(dst).encode(), params) == 0

    return bundled.derived("SmolLM2-135M-Instruct.Q8_0.gguf", build)
