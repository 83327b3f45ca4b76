"""Decode with the engine on this device and scale the speed model's terms to what it measures.

The decode-time constants of fit/speed.py were fitted on one AVX2 CPU. On another CPU, or on a
shared host in a slower phase, the kernels' compute per byte and the attention cost move by tens
of percent while a bandwidth probe does not see it (docs/fit.md). So the probe decodes four
synthetic models (models/synthetic.py) through llama-cpp-python in a worker process:

- a 1024-wide, 8-layer model at F16 and at Q4_K (352 and 95 MB: past any L3 cache), after a few
  cached tokens: the streaming rate, with and without the compute a K-quant adds per byte;
- two models after 16 and after 2048 cached tokens, for the attention cost: an 8-layer one shaped
  like SmolLM2 (9 query heads on 3 KV heads: K+V rows of 768 bytes per position and layer) and a
  4-layer one with 16 KV heads (4096 bytes). On this host the attention cost per head moved with
  the row width, and by different amounts at different times, so it is measured at both widths
  and interpolated between them.

Each decode time is written as x·bytes + compute + a(width)·attention, the terms the constants
predict, and x and the attention scale at each width are solved by least squares on relative
error; the compute term stays the constants' (solve says why). The files are built once into
the cache (about 40 s); a probe takes 15-25 s.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from edgepick.fit.memory import attention_load
from edgepick.fit.speed import DecodeTerms, decode_terms, weights_read_per_token
from edgepick.records.device import DecodeCalibration, DeviceProfile
from edgepick.records.model import ModelSpec

WEIGHT_SHAPE = (1024, 4096, 8, 16, 8)
ATTENTION_SHAPES = ((576, 1536, 8, 9, 3), (1024, 768, 4, 16, 16))
SHORT_FILL, LONG_FILL = 16, 2048
N_CTX = 4096
TOKENS, REPEATS = 16, 5
# A solved scale outside this range means the probe decodes were too noisy to split the terms.
_PLAUSIBLE = (0.25, 4.0)


def probe_files() -> list[tuple[Path, tuple[int, ...]]]:
    from edgepick.models.synthetic import quantized_pure, synthetic_llama

    weights = synthetic_llama(*WEIGHT_SHAPE)
    return [(weights, (SHORT_FILL,)), (quantized_pure(weights, "Q4_K_M"), (SHORT_FILL,)),
            *[(synthetic_llama(*shape), (SHORT_FILL, LONG_FILL)) for shape in ATTENTION_SHAPES]]


def time_decode(path: str, fills: list[int], threads: int) -> dict[int, float]:
    """Seconds per token over TOKENS single-token decodes after `fill` cached positions, the
    fastest of REPEATS after a warm-up. Runs in the worker process."""
    import llama_cpp

    from edgepick.records import RuntimeSettings

    s = RuntimeSettings()
    llm = llama_cpp.Llama(model_path=path, n_ctx=N_CTX, n_batch=s.n_batch, n_ubatch=s.n_ubatch,
                          n_threads=threads, n_threads_batch=threads, flash_attn=s.flash_attn,
                          verbose=False)
    ctx = llm._ctx.ctx
    memory = llama_cpp.llama_get_memory(ctx)
    rng = np.random.default_rng(0)
    tokens = [int(t) for t in rng.integers(100, min(llm.n_vocab(), 30000), max(fills) + TOKENS)]
    one = llama_cpp.llama_batch_init(1, 0, 1)
    one.n_tokens, one.n_seq_id[0], one.seq_id[0][0], one.logits[0] = 1, 1, 0, True
    out: dict[int, float] = {}
    cached = 0
    try:
        for fill in sorted(fills):
            while cached < fill:
                k = min(s.n_batch, fill - cached)
                arr = (llama_cpp.llama_token * k)(*tokens[cached:cached + k])
                if llama_cpp.llama_decode(ctx, llama_cpp.llama_batch_get_one(arr, k)) != 0:
                    raise RuntimeError(f"{path}: prompt decode failed at {cached} tokens")
                cached += k
            best = float("inf")
            for repeat in range(REPEATS + 1):
                llama_cpp.llama_memory_seq_rm(memory, 0, fill, -1)
                t0 = time.perf_counter()
                for i in range(TOKENS):
                    one.token[0], one.pos[0] = tokens[fill + i], fill + i
                    if llama_cpp.llama_decode(ctx, one) != 0:
                        raise RuntimeError(f"{path}: decode failed at position {fill + i}")
                    llama_cpp.llama_get_logits_ith(ctx, -1)
                if repeat:  # the first pass warms the caches and the repacked weights
                    best = min(best, (time.perf_counter() - t0) / TOKENS)
            llama_cpp.llama_memory_seq_rm(memory, 0, fill, -1)
            out[fill] = best
    finally:
        llama_cpp.llama_batch_free(one)
        llm.close()
    return out


def _time_all(jobs: list[tuple[str, list[int]]], threads: int) -> list[dict[int, float]]:
    return [time_decode(path, fills, threads) for path, fills in jobs]


def terms_for(spec: ModelSpec, fill: int, bandwidth_gbps: float) -> tuple[DecodeTerms, float]:
    """What the constants predict for one probe decode (fill = cached positions before it),
    and the K+V row width its attention works on."""
    from edgepick.fit.planner import plan_tensors

    read = weights_read_per_token(plan_tensors(spec, None)[0])
    load = attention_load(spec, N_CTX, fill + TOKENS // 2)
    return decode_terms(read, bandwidth_gbps, load), load.kv_row_bytes


def solve(device: DeviceProfile, timings: list[dict]) -> DecodeCalibration:
    """Scales with measured ≈ x·weight bytes + compute + a(width)·attention, each row weighted
    by 1/measured so every decode counts by its relative error; the attention scale is solved at
    the widths of the decodes with a long fill. The compute term is kept at the constants':
    solved from the one Q4_K file it swung 0.3-1.0 from probe to probe and, applied to every
    type, moved Q5_0 and Q8_0 estimates the wrong way (docs/fit.md). Falls back to one scale
    for every term when the split is implausible (a noisy probe, or too few decodes)."""
    bw = device.bandwidth_gbps
    widths = sorted({round(t["row_bytes"]) for t in timings if t["fill"] > SHORT_FILL}) \
        or [round(timings[0]["row_bytes"])]
    shape = DecodeCalibration(stream_gbps=1, attention_scales={w: 1.0 for w in widths})
    rows, parts, measured = [], [], []
    for t in timings:
        terms = DecodeTerms(*t["terms"])
        split = shape.attention_weights(t["row_bytes"])
        parts.append([terms.weight_bytes / (bw * 1e9), terms.compute_s, terms.attention_s])
        rows.append([parts[-1][0]] + [terms.attention_s * w for w in split])
        measured.append(t["seconds"])
    m = np.array(measured)
    compute = np.array([p[1] for p in parts])
    solved, *_ = np.linalg.lstsq(np.array(rows) / m[:, None], 1 - compute / m, rcond=None)
    stream, compute_scale, attention, method = solved[0], 1.0, solved[1:], "per term"
    if not all(_PLAUSIBLE[0] <= v <= _PLAUSIBLE[1] for v in solved):
        one = float(np.mean([t / sum(p) for t, p in zip(measured, parts)]))
        stream, compute_scale, attention, method = one, one, np.full(len(widths), one), \
            "one scale"
    for t, r, p in zip(timings, rows, parts):
        t["predicted_default_ms"] = round(1e3 * sum(p), 3)
        t["predicted_ms"] = round(1e3 * float(r[0] * stream + p[1] * compute_scale
                                               + np.dot(r[1:], attention)), 3)
        t["measured_ms"] = round(1e3 * t["seconds"], 3)
    clean = [{k: t[k] for k in ("model", "fill", "measured_ms", "predicted_default_ms",
                                "predicted_ms")} for t in timings]
    return DecodeCalibration(
        stream_gbps=round(bw / stream, 2), compute_scale=round(compute_scale, 3),
        attention_scales={w: round(float(v), 3) for w, v in zip(widths, attention)},
        method=method, timings=clean)


def engine_probe(device: DeviceProfile, threads: int | None = None) -> DeviceProfile:
    """`device` (a probe of this machine) with the engine's decode calibration added."""
    from edgepick.bench.worker import run_isolated
    from edgepick.errors import EdgepickError
    from edgepick.models.gguf_info import gguf_spec

    threads = threads or device.cores or os.cpu_count() or 1
    try:
        files = probe_files()
    except (RuntimeError, OSError, ValueError) as exc:
        raise EdgepickError(f"engine probe: could not build its models: {exc}") from None
    jobs = [(str(path), list(fills)) for path, fills in files]
    outcome = run_isolated(_time_all, jobs, threads)
    if not outcome.ok:
        raise EdgepickError(f"engine probe failed: {outcome.error}")
    timings = []
    for (path, fills), measured in zip(files, outcome.value):
        spec = gguf_spec(str(path))
        for fill in fills:
            terms, row_bytes = terms_for(spec, fill, device.bandwidth_gbps)
            timings.append({"model": path.name, "fill": fill, "seconds": measured[fill],
                            "terms": tuple(terms), "row_bytes": row_bytes})
    return device.model_copy(update={"decode_calibration": solve(device, timings)})
