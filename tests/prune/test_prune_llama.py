"""Pruned SmolLM2 (30 blocks) and Gemma-3-270M (18 blocks, sliding-window layers) load in the
pinned llama.cpp: llama-perplexity runs on them, their file size and KV cache are what fit
predicted from the source before the file existed, and edgepick's in-process engine scores the
text with the perplexity llama-perplexity prints (the same logits at every scored position)."""

from __future__ import annotations

import re
import subprocess

import pytest
from parts import need_tool

from edgepick.evaluate.fidelity import bundled_text, fidelity
from edgepick.fit.memory import kv_cache_bytes
from edgepick.models.depth import without_blocks
from edgepick.models.gguf_info import gguf_spec
from edgepick.prune.build import build
from edgepick.records.model_ref import ModelRef

CTX, CHUNKS = 256, 2


def _perplexity(model: str) -> tuple[float, float]:
    """(PPL, KV bytes) as llama-perplexity prints them; one sequence (-b = -c) so its cache is
    the one a single-sequence context allocates."""
    exe = need_tool("llama-perplexity")
    p = subprocess.run([exe, "-m", model, "-f", str(bundled_text("fidelity")), "-c", str(CTX),
                        "-b", str(CTX), "--chunks", str(CHUNKS), "-t", "2", "-lv", "4"],
                       capture_output=True, text=True, timeout=300)
    log = p.stdout + p.stderr
    assert p.returncode == 0, log[-2000:]
    ppl = float(re.search(r"Final estimate: PPL = ([\d.]+)", log).group(1))
    kv = sum(float(m) for m in re.findall(r"llama_kv_cache: size =\s*([\d.]+) MiB", log))
    return ppl, kv * 2**20


@pytest.mark.parametrize("model,removed", [("smollm2_q4_1", [3, 17]),
                                           ("gemma3_q4_k_m", [5, 6])])
def test_pruned_file_loads_and_matches_fit_and_the_engine(request, tmp_path, model, removed):
    src = request.getfixturevalue(model)
    predicted = without_blocks(gguf_spec(src), removed)  # before the file exists
    dst = str(tmp_path / "pruned.gguf")
    rec = build(src, dst, removed)
    assert abs(rec.size_bytes / predicted.file_size_bytes - 1) < 0.01

    ppl, kv_llama = _perplexity(dst)
    kv_fit = kv_cache_bytes(predicted, CTX, "f16", CTX)
    assert abs(kv_fit / kv_llama - 1) < 0.01, (kv_fit, kv_llama)

    ref = ModelRef.file(dst)
    ours = fidelity(ref, ref, bundled_text("fidelity"), ctx=CTX, max_chunks=CHUNKS, cache=False)
    assert ours.kld_mean == 0.0
    # llama-perplexity prints PPL with 4 decimals; the same logits give the same figure
    assert ours.ppl_ref == pytest.approx(ppl, rel=2e-3)
