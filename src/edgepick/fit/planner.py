"""The fit planner: memory and speed of one model × quant × context on one device."""

from __future__ import annotations

from functools import lru_cache
from importlib.resources import files

import yaml

from edgepick.errors import EdgepickError
from edgepick.fit.compute import batches, reserved_compute_bytes
from edgepick.fit.memory import (attention_load, kv_cache_bytes, kv_cells, kv_read_bytes,
                                 kv_types_problem)
from edgepick.fit.need import memory_need
from edgepick.fit.overhead import RUNTIME_BASELINE_BYTES, duplicated_bytes, overhead_parts
from edgepick.fit.speed import (CONSTANTS_THREADS, DEVICE_SPEC, PREFILL_MOE_ASSUMPTION,
                               bound_bandwidth_gbps, decode_band, decode_basis, decode_time_s,
                               device_threads, prefill_estimate, weights_read_per_token)
from edgepick.models.quant_types import (FTYPE_BASE, PlannedTensor, normalize_ftype,
                                         planned_tensor_types)
from edgepick.records.device import DeviceProfile
from edgepick.records.fit import FitEstimate
from edgepick.records.model import ModelSpec

DEFAULT_MARGIN = 0.20  # the seeds' rule: keep 20% headroom


def plan_tensors(spec: ModelSpec, quant: str | None) -> tuple[list[PlannedTensor], bool, str]:
    """Per-tensor types: the file's own when `quant` is None/native or matches the file."""
    if quant in (None, "", "native") or (
            spec.source_kind == "gguf" and spec.file_type and normalize_ftype(quant) == spec.file_type):
        return ([PlannedTensor(t.name, t.shape, t.type, t.n_bytes) for t in spec.tensors],
                spec.source_kind == "gguf", spec.file_type or "native")
    ftype = normalize_ftype(quant)
    n_gqa = spec.n_heads // max(1, max(spec.n_kv_heads or [1]))
    raw = [(t.name, t.shape, t.type) for t in spec.tensors]
    return planned_tensor_types(raw, ftype, n_gqa=n_gqa, n_expert=spec.n_experts), False, ftype


@lru_cache(maxsize=1)
def task_priors() -> dict:
    return yaml.safe_load(files("edgepick").joinpath("data/task_priors.yaml").read_text())


def _risks(n_params: int, bpw: float) -> list[str]:
    out = []
    for task, prior in task_priors().items():
        reasons = []
        if n_params < prior["min_params"]:
            reasons.append(f"{n_params / 1e9:.2g}B params < {prior['min_params'] / 1e9:g}B")
        if bpw < prior["min_bits"]:
            reasons.append(f"{bpw:.1f} bits/weight < {prior['min_bits']:g}")
        if reasons:
            out.append(f"{task}: {'; '.join(reasons)} — {prior['note']}")
    return out


def _higher_precision(tensors: list[PlannedTensor], ftype: str) -> tuple[dict[str, str], list[str]]:
    base = FTYPE_BASE.get(ftype)
    kept: dict[str, set[str]] = {}
    for t in tensors:
        if t.type != base:
            cls = t.name.split(".")[-2] if t.name.startswith("blk.") else t.name.rsplit(".", 1)[0]
            kept.setdefault(cls, set()).add(t.type)
    fallbacks = [f"{t.name}: {t.fell_back_from}→{t.type} (row of {t.shape[0]} not a multiple "
                 f"of the block)" for t in tensors if t.fell_back_from]
    return {k: "/".join(sorted(v)) for k, v in sorted(kept.items())}, fallbacks


def fit_one(spec: ModelSpec, quant: str | None, ctx: int, device: DeviceProfile, *,
            kv_type: str = "f16", margin: float = DEFAULT_MARGIN, efficiency: float | None = None,
            n_ubatch: int = 512, fill: int | None = None, swa_full: bool = False,
            runtime_bytes: int = RUNTIME_BASELINE_BYTES, mmap: bool = True,
            flash_attn: bool = True, n_batch: int = 512,
            kv_type_v: str | None = None, adapter_bytes: int = 0,
            draft: tuple[int, int] = (0, 0)) -> FitEstimate:
    """`kv_type` is the K cache's type (`-ctk`), `kv_type_v` the V cache's (`-ctv`, default
    the same); `flash_attn`, `n_batch` and `n_ubatch` set the compute buffer; `adapter_bytes`
    is a LoRA adapter's buffer, read into memory beside the weights; `draft` the anonymous and
    file-backed bytes a speculative decoding draft model needs beside the target (its KV cache,
    compute buffer and weights: fit/stage.py draft_need)."""
    v_type = kv_type_v or kv_type
    flash_attn = flash_attn and spec.architecture != "grok"  # llama.cpp forces it off for Grok
    problem = kv_types_problem(spec, kv_type, kv_type_v, flash_attn)
    if problem:
        raise EdgepickError(problem)
    tensors, exact, qname = plan_tensors(spec, quant)
    weights = sum(t.n_bytes for t in tensors)
    kv_spec = spec if not swa_full else spec.model_copy(update={"swa_layers": []})
    b = batches(ctx, n_batch, n_ubatch)  # what llama.cpp really uses
    kv = kv_cache_bytes(kv_spec, ctx, kv_type, b.n_ubatch, kv_type_v)
    cells = [kv_cells(kv_spec, i, ctx, b.n_ubatch) for i in range(spec.n_layers)]
    compute = reserved_compute_bytes(spec, cells, b, flash_attn)
    tokens = min(b.n_ubatch, b.n_ctx)
    scores = 0 if flash_attn else 4 * tokens * spec.n_heads * max(cells or [0])
    parts = overhead_parts(spec, tensors, tokens, device.cpu_features, runtime_bytes, scores)
    parts["activations"] = min(parts["activations"], compute)
    parts["repacked_weights"] = (parts["repacked_weights"] if mmap else
                                 duplicated_bytes(tensors, device.cpu_features))
    if adapter_bytes:
        parts["adapter"] = adapter_bytes
    if any(draft):
        parts["draft"], parts["draft_file"] = draft
    overhead = sum(parts.values())
    need = memory_need(spec, tensors, kv, parts, device.cpu_features, mmap)
    total = need.need_bytes
    budget = device.model_budget_bytes
    verdict = "fits" if total * (1 + margin) <= budget else "tight" if total <= budget else "no"

    fill = ctx // 2 if fill is None else min(fill, ctx)
    read = weights_read_per_token(tensors, spec.n_experts, spec.n_experts_used)
    weights_read = sum(t.n_bytes for t in read)
    bound_bw = bound_bandwidth_gbps(device) * 1e9

    def speeds(at: int) -> tuple[int, float, float]:
        """Bytes read per token, bound and estimate at `at` cached tokens: one KV fill for both,
        and the estimate never above the bound it sits under."""
        kv = kv_read_bytes(kv_spec, ctx, at, kv_type, b.n_ubatch, kv_type_v)
        bound = bound_bw / (weights_read + kv)
        t = decode_time_s(read, device, attention_load(kv_spec, ctx, at, b.n_ubatch), efficiency, kv)
        return weights_read + kv, bound, min(bound, 1.0 / t)

    per_token, bound, estimate = speeds(fill)
    basis = decode_basis(device, efficiency)
    band = decode_band(estimate, bound, basis)
    cal = device.decode_calibration
    threads = (cal.threads if cal is not None else
               CONSTANTS_THREADS if basis == "AVX2 constants" else
               device_threads(device) if basis == DEVICE_SPEC else None)
    attn_flops = 4.0 * spec.n_layers * spec.n_heads * spec.head_dim_k * fill
    quant_bits = 8.0 * sum(t.n_bytes for t in read) / max(1, sum(
        _elements(t) for t in read))
    hp, fallbacks = _higher_precision(tensors, qname) if qname in _ftypes() else ({}, [])
    return FitEstimate(
        model=spec.source, quant=qname, ctx=ctx, kv_type=kv_type, kv_type_v=v_type,
        device=device.name, flash_attn=flash_attn, n_batch=b.n_batch, n_ctx_cells=b.n_ctx,
        weights_bytes=weights, weights_exact=exact, kv_cache_bytes=kv, overhead_bytes=overhead,
        compute_buffer_bytes=compute,
        overhead_parts=parts, total_bytes=total, budget_bytes=budget, margin=margin,
        memory_anon_bytes=sum(need.anon.values()), memory_file_bytes=sum(need.file.values()),
        reclaimable_bytes=sum(need.reclaimable.values()), reclaimable_parts=need.reclaimable,
        mmap=mmap, n_params=spec.n_params, n_active_params=spec.active_params,
        prefill_basis=PREFILL_MOE_ASSUMPTION if spec.n_experts else None,
        warnings=list(spec.approximations),
        verdict=verdict, kv_fill_tokens=fill, bytes_per_token=per_token,
        decode_tps_bound=round(bound, 2), decode_tps_estimate=round(estimate, 2),
        decode_tps_band=band, decode_curve={f: round(speeds(f)[2], 2) for f in _curve_fills(ctx)},
        decode_threads=threads, n_ubatch=n_ubatch,
        efficiency=round(estimate / bound, 3), decode_basis=basis,
        prefill_tps_estimate=_round(prefill_estimate(read, device, attn_flops)),
        higher_precision=hp, fallbacks=fallbacks, risks=_risks(spec.n_params, quant_bits),
    )


def _curve_fills(ctx: int) -> list[int]:
    """Fills at which the estimate is kept, so that a later stage can read it at the fill its own
    measurement ran at (bench decodes after its prompt): 0, powers of two, and the context."""
    fills, f = [0], 16
    while f < ctx:
        fills.append(f)
        f *= 2
    return fills + [ctx]


def _elements(t: PlannedTensor) -> float:
    n = 1
    for d in t.shape:
        n *= d
    return n * t.share


def _ftypes() -> set[str]:
    return set(FTYPE_BASE)


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 1)
