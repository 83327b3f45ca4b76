"""What a conversion to ONNX Runtime GenAI is asked to do, what it did, and its known pitfalls.

Seed 001 §4 quantizes group-wise to INT4 for ONNX Runtime; seed 003 §4.3 and seed 004 §3.3 count
the conversion's steps and risks as an engineering cost of choosing that engine. The recipe is
saved beside the build, so the same command rebuilds the same bytes.
"""

from __future__ import annotations

import hashlib
import json
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from edgepick.errors import EdgepickError
from edgepick.store.identity import BUILD_RECORD

ENGINE = "onnxruntime-genai"
BACKEND = "onnxruntime_genai"
BLOCK_SIZES = (32, 64, 128, 256)
RECORD_FILE = BUILD_RECORD  # beside the build; not part of its content identity
RECORD_KIND = "convert"  # results-store kind


class ConvertRecipe(BaseModel):
    """The settings the bytes of a build depend on."""

    model_config = ConfigDict(extra="forbid")

    engine: Literal["onnxruntime-genai"] = ENGINE
    precision: Literal["int4", "fp32"] = "int4"  # fp32: unquantized, to check the graph itself
    block_size: int = 32
    algo: Literal["k_quant", "default"] = "k_quant"
    symmetric: bool = True
    # MatMulNBits activation precision: 4 = int8 (the official builder's CPU default), 0 = unset
    accuracy_level: int = 4
    # The output projection (tied to the embeddings in small models) is the most sensitive
    # MatMul (seed 000 §5.1); 8 keeps it at INT8, as llama.cpp keeps its output tensor higher.
    lm_head_bits: Literal[4, 8] = 4
    context_length: int = 4096  # rotary table length and the genai_config's max_length
    route: Literal["gguf", "hf-builder"] = "gguf"

    def key(self, source_identity: str) -> str:
        blob = json.dumps({"source": source_identity, **self.model_dump()}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:32]


class Pitfall(BaseModel):
    """A known-bad or risky combination, and what happened when it was tried."""

    code: str
    severity: Literal["refuse", "warn"]
    reason: str


class ConvertRecord(BaseModel):
    """One conversion as it ran: enough to redo it and to weigh it as an engineering cost."""

    model_config = ConfigDict(extra="forbid")

    recipe: ConvertRecipe
    source: str
    source_sha256: str
    source_types: dict[str, int] = Field(default_factory=dict)  # GGML type → 2-D tensor count
    requantized: bool = False
    out_dir: str
    files: dict[str, int] = Field(default_factory=dict)  # file name → bytes
    steps: list[str] = Field(default_factory=list)
    step_seconds: dict[str, float] = Field(default_factory=dict)
    seconds: float = 0.0
    warnings: list[str] = Field(default_factory=list)
    versions: dict[str, str] = Field(default_factory=dict)
    tokenizer_check: str = ""  # what the token-ID self-check compared, and its verdict
    build_key: str = ""
    skipped: bool = False  # an identical build was already in the folder; nothing was run

    @property
    def size_bytes(self) -> int:
        return sum(b for n, b in self.files.items() if n.startswith("model.onnx"))


# Found on this machine with onnxruntime-genai 0.18.0's builder on SmolLM2-135M.
KNOWN_PITFALLS = {
    "builder-gguf-type": "the official builder's `-i file.gguf` reads only F16/F32 GGUF files",
    "int4_block_size": "the builder's old `int4_block_size` option is silently ignored; "
                       "the working option is `block_size` (edgepick passes `block_size` and "
                       "checks every MatMulNBits node's block size after the build)",
    "default-128": "block size 128 with the default (RTN) algorithm gave garbage output on "
                   "SmolLM2-135M through the official builder; check this build's fidelity",
    "asymmetric": "is_symmetric=false produced a model that onnxruntime-genai could not load",
    "requantize": "the source GGUF is already quantized: INT4 on top of it compounds both errors",
    # found by edgepick's own sweep (docs/engines.md): onnxruntime's k-quant packs two 4-bit zero
    # points per byte and fails when a row has an odd number of blocks
    "k_quant-odd-blocks": "onnxruntime 1.32's k_quant crashes when a MatMul's input width is an "
                          "odd number of blocks (SmolLM2's 576 at block 64, 128 or 256)",
}


def odd_block_widths(widths: set[int], block_size: int) -> list[int]:
    """Input widths that k_quant cannot pack at `block_size` (an odd number of blocks)."""
    return sorted(w for w in widths if -(-w // block_size) % 2 == 1)


def check_recipe(recipe: ConvertRecipe, *, source_full_precision: bool) -> list[Pitfall]:
    """Refuse the known-bad combinations and name the risky ones (raises on a refusal)."""
    if recipe.block_size not in BLOCK_SIZES:
        raise EdgepickError(f"block size {recipe.block_size} is not supported; "
                            f"choose one of {', '.join(map(str, BLOCK_SIZES))}")
    if recipe.accuracy_level not in range(5):
        raise EdgepickError(f"accuracy level {recipe.accuracy_level} is not 0-4")
    if recipe.context_length < 16:
        raise EdgepickError(f"context length {recipe.context_length} is too small")
    if not recipe.symmetric:
        raise EdgepickError(f"asymmetric INT4 is refused: {KNOWN_PITFALLS['asymmetric']}")
    if recipe.lm_head_bits == 8 and recipe.algo != "k_quant":
        raise EdgepickError("an INT8 output projection (lm_head_bits 8) needs --algo k_quant "
                            "(onnxruntime's default quantizer has one bit width per model)")
    found: list[Pitfall] = []
    if recipe.precision == "int4" and recipe.algo == "default" and recipe.block_size >= 128:
        found.append(Pitfall(code="default-128", severity="warn",
                             reason=KNOWN_PITFALLS["default-128"]))
    if recipe.route == "hf-builder" and not source_full_precision:
        raise EdgepickError(f"refused: {KNOWN_PITFALLS['builder-gguf-type']}; use the "
                            "torch-free route (the default), which dequantizes any GGUF type")
    if not source_full_precision and recipe.precision == "int4":
        found.append(Pitfall(code="requantize", severity="warn",
                             reason=KNOWN_PITFALLS["requantize"]))
    return found
