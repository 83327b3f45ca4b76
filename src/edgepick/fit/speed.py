"""Decode and prefill speed bounds from memory bandwidth and compute.

Decoding one token reads every matmul weight once plus the KV cache filled so far, so
bound = bandwidth ÷ bytes read per token (the seeds' rule). The estimate multiplies the bound by
an efficiency: how much of the bandwidth the engine turns into tokens. It depends on the weight
type (dequantising Q4 costs more compute per byte than F16) and was calibrated on an x86-64 AVX2
CPU by benchmarks/fit_accuracy.py; elsewhere the seeds' default of 0.65 (0.6-0.7) applies.
"""

from __future__ import annotations

from edgepick.models.quant_types import PlannedTensor
from edgepick.records.device import DeviceProfile

DEFAULT_EFFICIENCY = 0.65
# Weight streaming speed per weight type relative to the *probed* bandwidth, 2 threads, x86-64
# AVX2, fitted by benchmarks/fit_accuracy.py (SmolLM2 F16/Q8_0/Q4_0/Q4_K_M and Gemma-3 Q4_K_M at
# two fills). Above 1 means the kernels stream faster than the probe's numpy reads: the probe is
# a conservative bandwidth, and repacked Q4 kernels read less than the file's bytes suggest.
AVX2_EFFICIENCY = {"F16": 0.7, "BF16": 0.6, "F32": 0.7, "Q8_0": 1.0, "Q6_K": 1.1, "Q5_K": 1.1,
                   "Q5_0": 1.1, "Q5_1": 1.1, "Q4_K": 1.1, "Q4_1": 1.0, "Q4_0": 1.1, "Q3_K": 0.9,
                   "Q2_K": 0.9, "IQ4_NL": 1.0, "IQ4_XS": 1.0}
PREFILL_EFFICIENCY = 0.35  # share of the device's FP32 matmul throughput a prompt batch reaches
# Attention over the cached tokens is compute-bound on a CPU: seconds per (cached token × layer ×
# head × (K + V head size)) of one decode step, llama.cpp's flash attention, same machine and fit.
ATTENTION_S_PER_ELEMENT = 0.36e-9
# Fixed cost of each matrix multiplication per token (thread hand-offs), same machine and fit.
MATMUL_OVERHEAD_S = 40e-6


def weights_read_per_token(tensors: list[PlannedTensor]) -> list[PlannedTensor]:
    """Tensors a decode step reads in full: all but an untied token embedding (one row)."""
    names = {t.name for t in tensors}
    tied = "output.weight" not in names
    return [t for t in tensors if tied or t.name != "token_embd.weight"]


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


def decode_time_s(read: list[PlannedTensor], device: DeviceProfile, attn_elements: int,
                  efficiency: float | None = None) -> float:
    """Seconds per decoded token: weights streamed at the type's efficiency, a fixed cost per
    matmul, and attention over the cache. The last two were measured on AVX2 CPUs only."""
    eff = efficiency_for(read, device, efficiency)
    weights = sum(t.n_bytes for t in read) / (device.bandwidth_gbps * 1e9 * eff)
    if "avx2" not in device.cpu_features:
        return weights
    matmuls = sum(1 for t in read if len(t.shape) >= 2)
    return weights + matmuls * MATMUL_OVERHEAD_S + attn_elements * ATTENTION_S_PER_ELEMENT


def matmul_params(read: list[PlannedTensor]) -> int:
    n = 0
    for t in read:
        if len(t.shape) >= 2:
            k = 1
            for d in t.shape:
                k *= d
            n += k
    return n


def prefill_estimate(read: list[PlannedTensor], device: DeviceProfile, attn_flops: float) -> float | None:
    if not device.compute_gflops:
        return None
    flops_per_token = 2.0 * matmul_params(read) + attn_flops
    return device.compute_gflops * 1e9 * PREFILL_EFFICIENCY / flops_per_token
