"""Decode with the engine on this device and scale the speed model's terms to what it measures.

The decode-time constants of fit/speed.py were fitted on one AVX2 CPU. On another CPU, or on a
shared host in a slower phase, the kernels' compute per byte and the attention cost move by tens
of percent while a bandwidth probe does not see it (docs/fit.md). So the probe decodes six
synthetic models (assets/synthetic.py) through llama-cpp-python in a worker process:

- a 1024-wide, 8-layer model at F16 and quantized --pure to Q4_K, Q4_0 and Q8_0 (352, 95, 100
  and 187 MB: past any L3 cache), after a few cached tokens: the streaming rate, and the compute
  each of those kernels adds per byte (they need not agree with the constants or each other:
  over two runs on this host the probes put Q4_K's compute at a median of 0.75-0.79 of the
  constants', Q4_0's at 0.86-0.93 and Q8_0's at 1.04-1.05);
- two models after 16, 1024 and 2048 cached tokens, for the attention cost: an 8-layer one
  shaped like SmolLM2 (9 query heads on 3 KV heads: K+V rows of 768 bytes per position and
  layer) and a 4-layer one with 16 KV heads (4096 bytes). On this host the attention cost per
  head moved with the row width, and by different amounts at different times, so it is measured
  at both widths and interpolated between them.

Each decode time is written as x·bytes + Σ c(type)·compute + a(width)·attention, the terms the
constants predict, and the scales are solved by least squares on relative error, the compute
scales pulled toward 1 (solve says why). The files are built once into the cache (about a
minute); a probe takes 20-30 s.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from edgepick.assets.synthetic import quantized_pure, synthetic_llama
from edgepick.backends import get_backend
from edgepick.errors import EdgepickError
from edgepick.fit.memory import attention_load
from edgepick.fit.planner import plan_tensors
from edgepick.fit.speed import DecodeTerms, decode_terms, weights_read_per_token
from edgepick.launch import run_isolated
from edgepick.models.gguf_info import gguf_spec
from edgepick.records import Candidate, RuntimeSettings
from edgepick.records.device import DecodeCalibration, DeviceProfile
from edgepick.records.model import ModelSpec
from edgepick.records.model_ref import DEFAULT_ENGINE

WEIGHT_SHAPE = (1024, 4096, 8, 16, 8)
# The weight types whose compute the probe scales, each with the llama-quantize type that makes a
# --pure file of it: the most used type of each kernel family. Other types keep the constants'.
PROBE_TYPES = {"Q4_K": "Q4_K_M", "Q4_0": "Q4_0", "Q8_0": "Q8_0"}
ATTENTION_SHAPES = ((576, 1536, 8, 9, 3), (1024, 768, 4, 16, 16))
SHORT_FILL = 16
# Decode times wiggle by ±15% from one fill to the next on this host, so the attention scale is
# fitted over two longer fills rather than read off one.
ATTENTION_FILLS = (SHORT_FILL, 1024, 2048)
N_CTX = 4096
TOKENS, REPEATS = 16, 5
# A solved scale outside this range means the probe decodes were too noisy to split the terms.
_PLAUSIBLE = (0.25, 4.0)
# Weight of the pull of each probed type's compute scale toward 1, in units of relative error: a
# type whose compute is 40% of its probe decode (Q4_K) moves about two thirds as far as that
# decode alone would take it, one at 15% (Q8_0) about a fifth.
RIDGE = 0.3


def probe_files() -> list[tuple[Path, tuple[int, ...]]]:
    weights = synthetic_llama(*WEIGHT_SHAPE)
    return [(weights, (SHORT_FILL,)),
            *[(quantized_pure(weights, ftype), (SHORT_FILL,)) for ftype in PROBE_TYPES.values()],
            *[(synthetic_llama(*shape), ATTENTION_FILLS) for shape in ATTENTION_SHAPES]]


def time_decode(path: str, fills: list[int], threads: int) -> dict[int, float]:
    """Seconds per token over TOKENS single-token decodes after `fill` cached positions, the
    fastest of REPEATS after a warm-up, through the engine's DECODE_TIMING capability. Runs in
    the worker process."""
    backend = get_backend(DEFAULT_ENGINE)
    backend.load(Candidate(model=path, settings=RuntimeSettings(n_ctx=N_CTX, threads=threads)))
    try:
        n_vocab = backend.vocabulary().n_vocab
        rng = np.random.default_rng(0)
        tokens = [int(t) for t in rng.integers(100, min(n_vocab, 30000), max(fills) + TOKENS)]
        try:
            return backend.time_decode(tokens, list(fills), TOKENS, REPEATS)
        except (RuntimeError, ValueError) as exc:
            raise RuntimeError(f"{path}: {exc}") from None
    finally:
        backend.unload()


def _time_all(jobs: list[tuple[str, list[int]]], threads: int) -> list[dict[int, float]]:
    return [time_decode(path, fills, threads) for path, fills in jobs]


def terms_for(spec: ModelSpec, fill: int, bandwidth_gbps: float) -> tuple[DecodeTerms, float]:
    """What the constants predict for one probe decode (fill = cached positions before it),
    and the K+V row width its attention works on."""
    read = weights_read_per_token(plan_tensors(spec, None)[0])
    load = attention_load(spec, N_CTX, fill + TOKENS // 2)
    return decode_terms(read, bandwidth_gbps, load), load.kv_row_bytes


def solve(device: DeviceProfile, timings: list[dict]) -> DecodeCalibration:
    """Scales with measured ≈ x·weight bytes + Σ c(type)·compute + a(width)·attention, each
    row weighted by 1/measured so every decode counts by its relative error. The compute scale
    of each probed type is pulled toward the constants' (1) by a prior row of weight RIDGE: one
    decode per type leaves it loosely pinned, and unpulled it swung 0.3-1.0 from probe to probe
    (docs/fit.md). F16 compute and the matmul hand-offs stay at 1: every file has them in
    proportion to its bytes, so the stream rate carries them. The attention scale is
    solved at the widths of the decodes with a longer fill. Falls back to one scale for every
    term when the split is implausible (a noisy probe, or too few decodes)."""
    bw = device.bandwidth_gbps
    widths = sorted({round(t["row_bytes"]) for t in timings if t["fill"] > SHORT_FILL}) \
        or [round(timings[0]["row_bytes"])]
    shape = DecodeCalibration(stream_gbps=1, attention_scales={w: 1.0 for w in widths})
    terms = [DecodeTerms(*t["terms"]) for t in timings]
    types = sorted({k for tr in terms for k, v in tr.compute_s.items()
                    if k in PROBE_TYPES and v > 0})
    rows, fixed, totals = [], [], []
    for t, tr in zip(timings, terms):
        rows.append([tr.weight_bytes / (bw * 1e9)]
                    + [tr.compute_s.get(k, 0.0) for k in types]
                    + [tr.attention_s * w for w in shape.attention_weights(t["row_bytes"])])
        fixed.append(sum(v for k, v in tr.compute_s.items() if k not in types))
        totals.append(tr.weight_bytes / (bw * 1e9) + tr.compute_total_s + tr.attention_s)
    m = np.array([t["seconds"] for t in timings])
    a = np.array(rows) / m[:, None]
    b = 1 - np.array(fixed) / m
    prior = np.zeros((len(types), a.shape[1]))
    prior[np.arange(len(types)), 1 + np.arange(len(types))] = RIDGE
    solved, *_ = np.linalg.lstsq(np.vstack([a, prior]), np.concatenate([b, prior.sum(1)]),
                                 rcond=None)
    compute_scale, method = 1.0, "per term"
    if not all(_PLAUSIBLE[0] <= v <= _PLAUSIBLE[1] for v in solved):
        one = float(np.mean(m / np.array(totals)))
        solved = np.full(len(solved), one)
        compute_scale, method = one, "one scale"
    for t, r, f0, total in zip(timings, rows, fixed, totals):
        t["predicted_default_ms"] = round(1e3 * total, 3)
        t["predicted_ms"] = round(1e3 * float(np.dot(r, solved) + f0 * compute_scale), 3)
        t["measured_ms"] = round(1e3 * t["seconds"], 3)
    clean = [{k: t[k] for k in ("model", "fill", "measured_ms", "predicted_default_ms",
                                "predicted_ms")} for t in timings]
    n = len(types)
    return DecodeCalibration(
        stream_gbps=round(bw / solved[0], 2), compute_scale=round(compute_scale, 3),
        compute_scales={} if method == "one scale" else
        {k: round(float(v), 3) for k, v in zip(types, solved[1:1 + n])},
        attention_scales={w: round(float(v), 3) for w, v in zip(widths, solved[1 + n:])},
        method=method, timings=clean)


def engine_probe(device: DeviceProfile, threads: int | None = None) -> DeviceProfile:
    """`device` (a probe of this machine) with the engine's decode calibration added."""
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
    cal = solve(device, timings).model_copy(update={"threads": threads})
    return device.model_copy(update={"decode_calibration": cal})
