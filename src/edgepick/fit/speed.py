"""Decode and prefill speed bounds from memory bandwidth and compute.

Decoding one token reads every matmul weight once plus the KV cache filled so far, so
bound = bandwidth ÷ bytes read per token (the seeds' rule). The estimate multiplies the bound by
an efficiency: how much of the bandwidth the engine turns into tokens. It depends on the weight
type (dequantising Q4 costs more compute per byte than F16) and was calibrated on an x86-64 AVX2
CPU by benchmarks/fit_accuracy.py; elsewhere the seeds' default of 0.65 (0.6-0.7) applies. A
device probed with the engine (devices/engine_probe.py) scales each term to what it measured.
"""

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

from edgepick.fit.memory import AttentionLoad
from edgepick.models.moe import expert_share
from edgepick.models.quant_types import QUANT_FACTS, PlannedTensor
from edgepick.records.device import DecodeCalibration, DeviceProfile

DEFAULT_EFFICIENCY = 0.65
# Weight streaming speed per weight type on the AVX2 host (how it was fitted: QUANT_FACTS).
AVX2_EFFICIENCY = {t: f.avx2_efficiency for t, f in QUANT_FACTS.items()
                   if f.avx2_efficiency is not None}
CONSTANTS_THREADS = 2  # the thread count every measurement behind the constants ran with
PREFILL_EFFICIENCY = 0.35  # share of the device's FP32 matmul throughput a prompt batch reaches
# Attention over the cached tokens, per cached position × layer: each KV head's K and V rows are
# loaded (a fixed part plus a part per element) and each query head does its dot product and V
# sum (per element). From decode times at fills of 32, 1072 and 4144 tokens on 16 F16 models: 13
# synthetic shapes with 1-16 KV heads and 4-16 query heads of 64, SmolLM2, its 2-block cut, and
# Gemma-3 (1 KV head of 256). Counting KV heads alone was 1.4× too fast on 16 query heads sharing
# one KV head; counting query heads alone, 1.8× off on 8 KV heads.
ATTENTION_S_PER_KV_HEAD = 62e-9
ATTENTION_S_PER_KV_DIM = 0.21e-9  # times (K + V head size), per position × layer × KV head
ATTENTION_S_PER_QUERY_DIM = 0.112e-9  # times (K + V head size), per position × layer × query head
# Fixed cost of each matrix multiplication per token (thread hand-offs), same fit as the table.
MATMUL_OVERHEAD_S = 4.8e-6


def weights_read_per_token(tensors: list[PlannedTensor], n_experts: int = 0,
                           n_experts_used: int = 0) -> list[PlannedTensor]:
    """What a decode step reads of each tensor: all but an untied token embedding (one row), and
    of a routed-expert tensor only the experts the token is sent to (models/moe.py)."""
    names = {t.name for t in tensors}
    tied = "output.weight" not in names
    out = []
    for t in tensors:
        if not tied and t.name == "token_embd.weight":
            continue
        share = expert_share(t.name, n_experts, n_experts_used)
        out.append(t if share == 1.0 else replace(t, n_bytes=int(t.n_bytes * share), share=share))
    return out


def efficiency_for(read: list[PlannedTensor], device: DeviceProfile,
                   override: float | None = None) -> float:
    if override is not None:
        return override
    table = AVX2_EFFICIENCY if "avx2" in device.cpu_features else {}
    total = sum(t.n_bytes for t in read)
    if not total:
        return DEFAULT_EFFICIENCY
    # time-weighted: each tensor's bytes move at its own efficiency
    return total / sum(t.n_bytes / table.get(t.type, DEFAULT_EFFICIENCY) for t in read)


def attention_time_s(load: AttentionLoad) -> float:
    return (load.kv_position_heads * (ATTENTION_S_PER_KV_HEAD
                                      + ATTENTION_S_PER_KV_DIM * load.head_dims)
            + load.query_position_heads * ATTENTION_S_PER_QUERY_DIM * load.head_dims)


MATMUL = "matmul"  # the compute_s key of the fixed per-matmul cost


class DecodeTerms(NamedTuple):
    """One token's decode time split the way an engine probe can scale it."""
    weight_bytes: int  # streamed from memory
    # dequantisation and dot products beyond the streaming, seconds per weight type, and the
    # matmul hand-offs under MATMUL
    compute_s: dict[str, float]
    attention_s: float  # over the cached positions

    @property
    def compute_total_s(self) -> float:
        return sum(self.compute_s.values())


def decode_terms(read: list[PlannedTensor], bandwidth_gbps: float,
                 attention: AttentionLoad) -> DecodeTerms:
    """The AVX2 constants' decode time as streaming + compute + attention, at `bandwidth_gbps`:
    a type with efficiency e spends (1/e - 1) of its streaming time on compute."""
    bw = bandwidth_gbps * 1e9
    compute: dict[str, float] = {}
    for t in read:
        extra = t.n_bytes * (1 / AVX2_EFFICIENCY.get(t.type, DEFAULT_EFFICIENCY) - 1) / bw
        compute[t.type] = compute.get(t.type, 0.0) + extra
    compute[MATMUL] = sum(1 for t in read if len(t.shape) >= 2) * MATMUL_OVERHEAD_S
    return DecodeTerms(sum(t.n_bytes for t in read), compute, attention_time_s(attention))


def decode_time_s(read: list[PlannedTensor], device: DeviceProfile, attention: AttentionLoad,
                  efficiency: float | None = None, kv_bytes: int = 0) -> float:
    """Seconds per decoded token: weights streamed at the type's efficiency, a fixed cost per
    matmul, and attention over the cache. The constants were measured on an AVX2 CPU; a device
    probed with the engine (devices/engine_probe.py) carries its own scale for each term, and a
    device with neither streams the weights and the `kv_bytes` read from the cache at the seeds'
    efficiency (the bytes the bound counts, seed 001 §3.1)."""
    cal = device.decode_calibration
    if efficiency is None and cal is None and not device.measured:
        return spec_decode_time_s(read, device, kv_bytes)  # a catalog device: its own figures
    if efficiency is None and (cal is not None or "avx2" in device.cpu_features):
        terms = decode_terms(read, device.bandwidth_gbps, attention)
        # the constants alone are the calibration that scales nothing
        cal = cal or DecodeCalibration(stream_gbps=device.bandwidth_gbps, attention_scales={1: 1.0})
        return (terms.weight_bytes / (cal.stream_gbps * 1e9)
                + sum(cal.compute_scale_for(f) * s for f, s in terms.compute_s.items())
                + cal.attention_scale(attention.kv_row_bytes) * terms.attention_s)
    eff = efficiency_for(read, device, efficiency)
    weights = sum(t.n_bytes for t in read) / (device.bandwidth_gbps * 1e9 * eff)
    if "avx2" not in device.cpu_features:
        return weights + kv_bytes / (device.bandwidth_gbps * 1e9 * eff)
    matmuls = sum(1 for t in read if len(t.shape) >= 2)
    return weights + matmuls * MATMUL_OVERHEAD_S + attention_time_s(attention)


# Share of a device's compute (its profile's compute_gflops, all cores) a decode step's matrix-
# vector products reach per thread used: the roofline's compute side for a catalog device.
DECODE_COMPUTE_SHARE = 0.5


def device_threads(device: DeviceProfile) -> int | None:
    return device.threads_default or device.cores


def spec_decode_time_s(read: list[PlannedTensor], device: DeviceProfile, kv_bytes: int) -> float:
    """A catalog device from its own figures: the weights and KV read at its bandwidth × the
    seeds' efficiency, or its compute (the threads it runs with, of its cores), whichever is
    slower. Nothing measured on this host enters."""
    stream = (sum(t.n_bytes for t in read) + kv_bytes) / (device.bandwidth_gbps * 1e9
                                                           * DEFAULT_EFFICIENCY)
    if not device.compute_gflops:
        return stream
    used = min(1.0, (device_threads(device) or 1) / (device.cores or device_threads(device) or 1))
    flops = 2.0 * matmul_params(read)
    return max(stream, flops / (device.compute_gflops * 1e9 * used * DECODE_COMPUTE_SHARE))


def bound_bandwidth_gbps(device: DeviceProfile) -> float:
    """The bandwidth the bound divides: the probe's, or the rate the engine was seen streaming
    weights at when that is higher (a probe is one reading of a host whose bandwidth swings, and
    an engine cannot stream faster than the memory)."""
    cal = device.decode_calibration
    return max(device.bandwidth_gbps, cal.stream_gbps) if cal is not None else device.bandwidth_gbps


# Predicted ÷ measured decode speed on a shape no constant was fitted on (benchmarks/fit_heldout.py:
# a 768-wide, 12-layer Llama with 4 KV heads at Q5_K_M, Q6_K and Q4_K_M, ctx 2048 and 8192, in
# two opposite-order passes). Over the fitted shapes the target is ±20%
# (benchmarks/fit_accuracy.py). The seeds' bare efficiency has no validation: no band.
HELDOUT_RATIOS = {"engine probe": (0.83, 1.03), "AVX2 constants": (0.92, 1.10)}


def decode_band(estimate: float, bound: float, basis: str) -> tuple[float, float] | None:
    """The measured speed the held-out check says to expect around `estimate`, capped at the bound."""
    ratios = HELDOUT_RATIOS.get(basis)
    if ratios is None:
        return None
    low, high = estimate / ratios[1], min(bound, estimate / ratios[0])
    return round(low, 2), round(max(low, high), 2)


def band_text(basis: str) -> str:
    ratios = HELDOUT_RATIOS.get(basis)
    if basis == DEVICE_SPEC:
        return ("no validated error band for this device class: the estimate is its spec sheet's "
                f"bandwidth × {DEFAULT_EFFICIENCY} (the seeds' rule) and compute, never measured "
                "here")
    if ratios is None:
        return "no validated error band for this basis (the seeds' 0.6-0.7 efficiency, unchecked here)"
    return (f"band = the spread predicted ÷ measured {ratios[0]:.2f}-{ratios[1]:.2f} that "
            f"benchmarks/fit_heldout.py measured on a shape the constants were not fitted on "
            f"(target over fitted shapes: ±20%)")


DEVICE_SPEC = "device spec"


def decode_basis(device: DeviceProfile, efficiency: float | None = None) -> str:
    if efficiency is not None:
        return "--efficiency"
    if device.decode_calibration is not None:
        return "engine probe"
    if not device.measured:
        return DEVICE_SPEC
    return "AVX2 constants" if "avx2" in device.cpu_features else f"efficiency {DEFAULT_EFFICIENCY}"


def matmul_params(read: list[PlannedTensor]) -> int:
    """Matrix parameters one token multiplies with: a routed expert tensor counts its share."""
    n = 0.0
    for t in read:
        if len(t.shape) >= 2:
            k = 1
            for d in t.shape:
                k *= d
            n += k * t.share
    return int(n)


# Prefill of an MoE model: a batch of n_ubatch tokens routes to nearly every expert, so all
# expert weights are streamed once per batch, a small cost beside the compute of the batch; the
# estimate counts each token's FLOPs through its active experts only.
PREFILL_MOE_ASSUMPTION = ("prefill counts each token's FLOPs through its active experts; the "
                          "batch touches every expert, whose weights stream once per batch")


def prefill_estimate(read: list[PlannedTensor], device: DeviceProfile, attn_flops: float) -> float | None:
    if not device.compute_gflops:
        return None
    flops_per_token = 2.0 * matmul_params(read) + attn_flops
    return device.compute_gflops * 1e9 * PREFILL_EFFICIENCY / flops_per_token
