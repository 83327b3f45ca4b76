"""Whether the engine can run the model's architecture is checked before anything loads
(issue 24 item 5): the architectures are llama.cpp's own, read from its source, and fit, bench
and run refuse an unsupported model × engine pair in one line."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from edgepick.backends import llama_cpp_support, registry

ROOT = Path(__file__).resolve().parents[2]
LINE = re.compile(r"notanarch: not supported by llama\.cpp 0\.3\.36's engine \(supported: .*llama.*\)")


def _source() -> Path:
    from parts import missing

    src = Path(os.environ.get("EDGEPICK_CACHE", Path.home() / ".cache" / "edgepick")) / \
        "llama.cpp-0.3.36" / "src" / "vendor" / "llama.cpp"
    if not (src / "src" / "llama-arch.cpp").is_file():
        missing(f"the pinned llama.cpp source ({src}; scripts/build_llama_tools.sh unpacks it)")
    return src


def test_the_architecture_list_is_the_pinned_llama_cpps_own():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import llama_archs
    finally:
        sys.path.pop(0)
    fresh = llama_archs.build(_source(), "0.3.36")
    committed = json.loads((ROOT / "src/edgepick/data/llama_cpp_archs.json").read_text())
    assert committed == fresh, "data/llama_cpp_archs.json is stale: run scripts/llama_archs.py"
    assert {"llama", "qwen3moe", "deepseek2", "gemma3"} <= llama_cpp_support.architectures()
    assert llama_cpp_support.hf_architecture("Qwen3MoeForCausalLM") == "qwen3moe"
    assert llama_cpp_support.hf_architecture("DeepseekV3ForCausalLM") == "deepseek2"


def unknown_arch_gguf(tmp_path: Path) -> str:
    """A GGUF whose architecture llama.cpp has never heard of."""
    import gguf

    path = tmp_path / "mystery.gguf"
    w = gguf.GGUFWriter(str(path), arch="notanarch")
    w.add_uint32("notanarch.block_count", 1)
    w.add_uint32("notanarch.embedding_length", 64)
    w.add_uint32("notanarch.attention.head_count", 1)
    w.add_tensor("token_embd.weight", np.zeros((16, 64), dtype=np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return str(path)


def _one_line(r) -> str:
    assert r.returncode != 0
    assert "Traceback" not in r.stderr, r.stderr
    lines = [ln for ln in r.stderr.strip().splitlines() if "notanarch" in ln]
    assert len(lines) == 1 and LINE.search(lines[0]), r.stderr
    return lines[0]


def test_fit_refuses_an_unknown_architecture_in_one_line(cli, tmp_path):
    _one_line(cli("fit", "-m", unknown_arch_gguf(tmp_path), "--device", "raspberry-pi-5"))
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"architectures": ["NotARealForCausalLM"], "model_type": "x",
                               "hidden_size": 64, "num_hidden_layers": 1,
                               "num_attention_heads": 1, "vocab_size": 16}))
    r = cli("fit", "-m", str(cfg), "--device", "raspberry-pi-5")
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert "NotARealForCausalLM: not supported by llama.cpp 0.3.36's engine" in r.stderr


def test_bench_refuses_before_measuring(cli, tmp_path, store_path):
    r = cli("bench", "-m", unknown_arch_gguf(tmp_path), "--store", store_path)
    _one_line(r)
    assert "ttft" not in r.stdout.lower()


def test_run_refuses_before_measuring(cli, tmp_path):
    model = unknown_arch_gguf(tmp_path)
    plan = tmp_path / "plan.yaml"
    plan.write_text(f"name: t\ndevice: raspberry-pi-5\noutput: {tmp_path / 'out'}\n"
                    f"candidates:\n  - model: {model}\neval:\n  reference: {model}\n  limit: 4\n"
                    "scenario:\n  name: realtime_chat\n")
    _one_line(cli("run", str(plan)))


def test_a_known_architecture_passes_and_an_endpoint_is_the_servers_business(tiny_model):
    from edgepick.models.gguf_info import gguf_spec
    from edgepick.records import Candidate

    assert registry.unsupported("llama_cpp", gguf_spec(tiny_model)) is None
    assert registry.unsupported("openai_http", gguf_spec(tiny_model)) is None  # cannot say
    registry.check_candidate(Candidate(model="http://127.0.0.1:9/v1#m", backend="openai_http"))
    # the ONNX path runs what its converter builds (convert/gguf_source.py reads the same list)
    from edgepick.backends.onnxruntime_genai import SUPPORTED_ARCHS
    from edgepick.convert import gguf_source

    assert gguf_source.SUPPORTED_ARCHS is SUPPORTED_ARCHS
    assert registry.backend_class("onnxruntime_genai").architectures() == frozenset({"llama"})


def test_engines_claim_their_own_formats(tiny_model, tmp_path):
    assert registry.engine_for(tiny_model) == "llama_cpp"
    (tmp_path / "genai_config.json").write_text("{}")
    assert registry.engine_for(str(tmp_path)) == "onnxruntime_genai"
    assert registry.maturity("llama_cpp") == 1.0 and registry.maturity("nope") == 0.5
