"""A LoRA adapter synthesised with `gguf` for SmolLM2 (tests/lora_synth.py): read and checked
the way llama.cpp's loader checks it, its bytes equal to what llama.cpp allocates for it, and on
the real engine it changes the answers while a zero adapter leaves them byte-identical. A file
that is not an adapter for this model is refused in one line before any engine starts."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest
from gguf import GGUFReader, GGUFWriter

from edgepick.errors import InputError
from edgepick.models.adapter import read_adapter
from lora_synth import write_lora

GEN = """
import sys, llama_cpp
kw = {"lora_path": sys.argv[2]} if len(sys.argv) > 2 else {}
llm = llama_cpp.Llama(sys.argv[1], n_ctx=256, n_threads=1, seed=1, verbose=True, **kw)
r = llm.create_chat_completion([{"role": "user", "content": "Name three colours."}],
                               max_tokens=16, temperature=0)
print("OUT=" + repr(r["choices"][0]["message"]["content"]))
"""


def _run(model: str, adapter=None) -> tuple[str, str]:
    """(the greedy answer, llama.cpp's log), in a child: the engine's log goes to its stderr."""
    argv = [sys.executable, "-c", GEN, model] + ([str(adapter)] if adapter else [])
    p = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-500:]
    return p.stdout.split("OUT=", 1)[1].strip(), p.stderr


@pytest.fixture(scope="module")
def adapters(smollm2_q4_1, tmp_path_factory):
    d = tmp_path_factory.mktemp("lora")
    return {"random": write_lora(smollm2_q4_1, d / "random.gguf", rank=64, blocks=30),
            "zero": write_lora(smollm2_q4_1, d / "zero.gguf", rank=64, blocks=30, zero=True)}


def test_an_adapter_changes_the_answers_and_a_zero_one_does_not(smollm2_q4_1, adapters):
    base, _ = _run(smollm2_q4_1)
    changed, log = _run(smollm2_q4_1, adapters["random"])
    same, _ = _run(smollm2_q4_1, adapters["zero"])
    assert changed != base and same == base
    # the bytes fit counts are the buffer llama.cpp allocates for the adapter
    mib = float(re.search(r"CPU LoRA buffer size = +([\d.]+) MiB", log).group(1))
    info = read_adapter(adapters["random"], smollm2_q4_1)
    assert info.n_bytes / 2**20 == pytest.approx(mib, abs=0.006)
    assert len(info.targets) == 60 and info.types == ("F16",) and info.alpha == 16.0


def test_files_that_are_not_an_adapter_for_this_model_are_refused_in_one_line(
        smollm2_q4_1, tmp_path):
    with pytest.raises(InputError, match="not an adapter: general.type"):
        read_adapter(smollm2_q4_1)  # the model itself
    f32 = write_lora(smollm2_q4_1, tmp_path / "f32.gguf")
    _as_f32(f32)
    with pytest.raises(InputError, match="F32 adapter tensors crash the pinned llama.cpp"):
        read_adapter(f32)
    w = GGUFWriter(str(tmp_path / "odd.gguf"), "llama")
    w.add_string("general.type", "adapter")
    w.add_string("adapter.type", "lora")
    w.add_tensor("blk.0.attn_q.weight.lora_a", np.zeros((8, 576), np.float16))
    w.add_tensor("blk.0.attn_q.weight.lora_b", np.zeros((576, 4), np.float16))  # rank 4 ≠ 8
    w.add_tensor("blk.99.attn_q.weight.lora_a", np.zeros((8, 576), np.float16))
    w.add_tensor("blk.99.attn_q.weight.lora_b", np.zeros((576, 8), np.float16))
    for step in (w.write_header_to_file, w.write_kv_data_to_file, w.write_tensors_to_file,
                 w.close):
        step()
    with pytest.raises(InputError) as exc:
        read_adapter(tmp_path / "odd.gguf", smollm2_q4_1)
    assert "\n" not in str(exc.value) and "odd.gguf" in str(exc.value)


def _as_f32(path) -> None:
    """Rewrite an adapter with F32 tensors (what the engine crashes on)."""
    r = GGUFReader(str(path))
    tensors = [(t.name, np.asarray(t.data, dtype=np.float32)) for t in r.tensors]
    w = GGUFWriter(str(path) + ".tmp", "llama")
    w.add_string("general.type", "adapter")
    w.add_string("adapter.type", "lora")
    for name, data in tensors:
        w.add_tensor(name, data)
    for step in (w.write_header_to_file, w.write_kv_data_to_file, w.write_tensors_to_file,
                 w.close):
        step()
    os.replace(str(path) + ".tmp", path)


def test_fit_counts_the_adapter_it_checks(smollm2_q4_1, adapters, tmp_path):
    from edgepick.devices import load_device
    from edgepick.errors import EdgepickError
    from edgepick.fit.stage import FitRequest, run
    from edgepick.inputs import resolve_ref

    ref, dev = resolve_ref(smollm2_q4_1), load_device("raspberry-pi-5")
    plain, = run(FitRequest.for_models([ref], ["native"], device=dev), None)
    with_it, = run(FitRequest.for_models([ref], ["native"], adapter=str(adapters["random"]),
                                         device=dev), None)
    n = read_adapter(adapters["random"]).n_bytes
    assert with_it.total_bytes - plain.total_bytes == n == with_it.overhead_parts["adapter"]
    with pytest.raises(EdgepickError, match="not an adapter"):
        run(FitRequest.for_models([ref], ["native"], adapter=smollm2_q4_1, device=dev), None)
