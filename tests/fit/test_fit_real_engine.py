"""Fit's predictions against a real llama.cpp run on tiny synthetic GGUFs of the architectures
the bundled models lack: DeepSeek's latent KV cache (`deepseek2`) as llama_context allocates it,
and a mixture of experts (`qwen3moe`): its peak need with RssAnon and RssFile measured, and the
file pages one decoded token reads."""

from __future__ import annotations

import pytest

from edgepick.fit.memory import kv_cache_bytes
from edgepick.fit.planner import fit_one, plan_tensors
from edgepick.fit.speed import weights_read_per_token
from edgepick.models.gguf_info import gguf_spec
from llama_alloc_log import allocations
from synthetic_moe import synthetic_deepseek2, synthetic_qwen3moe

MIB = 2**20


def llama_context_kv(path: str, n_ctx: int) -> tuple[float, float]:
    """K and V cache MiB as llama.cpp reports the buffers it allocated for a context."""
    [log] = allocations(path, [{"n_ctx": n_ctx}])
    return log["k_mib"], log["v_mib"]


@pytest.mark.parametrize("n_ctx", [512, 4096])
def test_mla_cache_is_what_llama_context_allocates(n_ctx):
    path = str(synthetic_deepseek2())
    spec = gguf_spec(path)
    assert spec.kv_lora_rank == 128 and spec.n_kv_heads == [1, 1, 1]
    k_mib, v_mib = llama_context_kv(path, n_ctx)
    assert v_mib == 0.0  # no V cache for MLA
    assert kv_cache_bytes(spec, n_ctx, "f16") / MIB == pytest.approx(k_mib, abs=0.006)
    # full heads (what fit did before) would be several times larger
    full = 3 * n_ctx * 4 * (96 + 64) * 2 / MIB
    assert k_mib < full / 3


def test_moe_cache_matches_too():
    path = str(synthetic_qwen3moe())
    k_mib, v_mib = llama_context_kv(path, 1024)
    spec = gguf_spec(path)
    assert (k_mib + v_mib) == pytest.approx(kv_cache_bytes(spec, 1024, "f16") / MIB, abs=0.011)


MOE = dict(n_embd=512, n_layers=4, n_head=8, n_head_kv=2, n_expert=16, n_used=2, n_ff_exp=512)


def test_moe_need_and_decode_bytes_against_a_real_run():
    from edgepick.bench.need import measure_need, need_bytes
    from edgepick.devices.local import local_device
    from edgepick.launch import run_isolated

    path = str(synthetic_qwen3moe(**MOE))
    spec = gguf_spec(path)
    tensors = plan_tensors(spec, None)[0]
    active = sum(t.n_bytes for t in weights_read_per_token(tensors, spec.n_experts,
                                                           spec.n_experts_used))
    every = sum(t.n_bytes for t in weights_read_per_token(tensors))
    assert active < 0.5 * every
    # one decoded token (a one-token prompt reads like a decode step) reads the active share
    out = run_isolated(measure_need, {"model": path, "settings": {"n_ctx": 512, "threads": 2}},
                       1, 1, timeout=300)
    assert out.ok, out.error
    one = out.value["model_file_read"]
    # over-counted a little (the CPU sets accessed bits speculatively next to what it read),
    # never near every expert
    assert 0.95 * active <= one < 0.75 * every, (one / MIB, active / MIB, every / MIB)
    # the peak need of a real prompt + decode, both parts measured. Mapped, the 96 tokens route
    # to most experts but (randomly) not all: fit counts every expert, the working set over a
    # conversation, so it is an upper bound by at most the experts nobody was routed to.
    dev = local_device()
    out = run_isolated(measure_need, {"model": path, "settings": {"n_ctx": 1024, "threads": 2}},
                       64, 32, timeout=300)
    assert out.ok, out.error
    v = out.value
    assert out.peak_rss_anon_bytes > 0 and out.peak_rss_file_bytes > 0
    anon = max(out.peak_rss_anon_bytes, v["anon"])
    need = need_bytes(anon, v["file_read"], out.peak_rss_bytes, True)
    est = fit_one(spec, None, 1024, dev, fill=64 + 16)
    unread = sum(t.n_bytes for t in tensors) - v["model_file_read"]
    assert 0.95 * need <= est.total_bytes <= 1.05 * need + unread
    assert est.memory_anon_bytes == pytest.approx(anon, rel=0.15)
    # read into memory (use_mmap=False) the need is the whole resident set, VmHWM
    out = run_isolated(measure_need, {"model": path, "settings": {"n_ctx": 1024, "threads": 2,
                                                                  "mmap": False}},
                       64, 32, timeout=300)
    assert out.ok, out.error
    est = fit_one(spec, None, 1024, dev, fill=64 + 16, mmap=False)
    assert est.total_bytes == pytest.approx(out.peak_rss_bytes, rel=0.10)
