"""What the pinned llama.cpp runs, and its own settings: read without loading the engine.

The architectures come from llama.cpp's source (scripts/llama_archs.py writes
data/llama_cpp_archs.json from the pinned sdist's src/llama-arch.cpp and convert_hf_to_gguf.py),
never from a hand list. The engine's class, serve's llama-server engine and the stages that
only name the engine read these without loading its library. `without_amx_repack` is the one
part that touches the engine: the load-time switch for CPUs where its repacked weights crash,
imported only when a model loads.
"""

from __future__ import annotations

import json
import os
from contextlib import contextmanager
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from importlib.resources import files

from pydantic import field_validator

from edgepick.backends.base import EngineSettings
from edgepick.errors import known_name
from edgepick.llama_tools import repack_unsafe

GGUF_MAGIC = b"GGUF"
# llama.cpp's KV cache types (ggml_type numbers), for llama_context_params.type_k / type_v
KV_TYPES = {"f32": 0, "f16": 1, "q4_0": 2, "q4_1": 3, "q5_0": 6, "q5_1": 7, "q8_0": 8, "bf16": 30}


class LlamaCppSettings(EngineSettings):
    """Knobs only llama.cpp has (the rest of RuntimeSettings is common to every engine)."""

    kv_type: str = "f16"  # KV cache type
    flash_attn: bool = True
    swa_full: bool = False  # sliding-window layers keep the whole context, not their window
    mmap: bool = True  # map the file (weights stay clean file pages) instead of reading it

    @field_validator("kv_type")
    @classmethod
    def _kv(cls, v: str) -> str:
        return known_name(v, KV_TYPES, "KV cache type")


@lru_cache(maxsize=1)
def _data() -> dict:
    return json.loads(files("edgepick").joinpath("data/llama_cpp_archs.json").read_text())


def architectures() -> frozenset[str]:
    return frozenset(_data()["architectures"])


def hf_architecture(hf_class: str) -> str | None:
    """The llama.cpp architecture a Hugging Face class converts to; None: no converter for it."""
    return _data()["hf_architectures"].get(hf_class)


# Used when the GGUF carries no chat template (base models): a plain transcript.
FALLBACK_TEMPLATE = (
    "{% for m in messages %}{% if m['role'] == 'system' %}{{ m['content'] }}\n\n"
    "{% elif m['role'] == 'user' %}User: {{ m['content'] }}\n"
    "{% else %}Assistant: {{ m['content'] }}\n{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}Assistant:{% endif %}"
)


def engine_version() -> str:
    """llama-cpp-python's version (its installed metadata: the same string as
    `llama_cpp.__version__`), read without loading the engine's library."""
    return f"llama-cpp-python {version('llama_cpp_python')}"


def settings_problem(settings) -> str | None:
    own = LlamaCppSettings.of(settings)
    if own.kv_type not in ("f16", "f32", "bf16") and not own.flash_attn:
        # llama-context.cpp: "quantized V cache requires flash_attn to be enabled"
        return (f"llama.cpp refuses a quantized V cache ({own.kv_type}) without flash "
                "attention")
    return None


def claims(path: str) -> bool:
    return os.path.isfile(path) and is_gguf(path)


def engine_label() -> str:
    try:
        v = version("llama_cpp_python")
    except PackageNotFoundError:
        v = _data()["llama_cpp_python"]
    return f"llama.cpp {v}"


def is_gguf(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == GGUF_MAGIC
    except OSError:
        return False


def architecture_of(spec) -> str | None:
    """llama.cpp's name for the model: a GGUF's general.architecture, or the architecture
    convert_hf_to_gguf.py makes of the config's class (its class name when it has no converter,
    which no llama.cpp architecture matches)."""
    if spec.source_kind == "gguf":
        return spec.architecture
    for cls in spec.hf_architectures:
        if hf_architecture(cls):
            return hf_architecture(cls)
    return spec.hf_architectures[0] if spec.hf_architectures else None


@contextmanager
def without_amx_repack():
    """Models load without ggml's extra buffer types where that crashes
    (llama_tools.repack_unsafe)."""
    import llama_cpp.llama_cpp as low

    if not repack_unsafe():
        yield
        return
    orig = low.llama_model_default_params

    def params():
        p = orig()
        p.use_extra_bufts = False
        return p

    low.llama_model_default_params = params
    try:
        yield
    finally:
        low.llama_model_default_params = orig


class LlamaCppFiles:
    """What llama.cpp answers about a file without running it, for every engine that runs
    llama.cpp (in process, and serve's llama-server): the files it claims, the architectures it
    loads, a model's architecture, the settings it refuses. One engine, two ways to run it."""

    claims = staticmethod(claims)
    architectures = staticmethod(architectures)
    architecture_of = staticmethod(architecture_of)
    settings_problem = staticmethod(settings_problem)
