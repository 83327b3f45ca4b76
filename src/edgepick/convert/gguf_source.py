"""A GGUF read as the source of an engine conversion: its hyperparameters and dequantized weights.

Seed 001 §4 builds an ONNX Runtime INT4 model from full-precision weights; without torch the
weights come from the GGUF itself, dequantized with the `gguf` package (any type it can read).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gguf
import numpy as np

# the architectures whose graph this converter builds are the engine's own list
from edgepick.backends.onnxruntime_genai import SUPPORTED_ARCHS
from edgepick.errors import EdgepickError
from edgepick.models.gguf_info import _field as field_value
from edgepick.models.gguf_info import read_gguf
FULL_PRECISION = ("F32", "F16", "BF16")


@dataclass
class LlamaHParams:
    """The shape of a llama-family model, as the GGUF header states it."""

    arch: str
    n_layers: int
    n_embd: int
    n_ff: int
    n_head: int
    n_head_kv: int
    head_dim: int
    n_vocab: int
    n_ctx_train: int
    rope_theta: float
    rms_eps: float
    tied_output: bool
    name: str = ""
    weight_types: dict[str, int] = field(default_factory=dict)  # GGML type name → tensor count

    @property
    def full_precision(self) -> bool:
        return all(t in FULL_PRECISION for t in self.weight_types)


class GgufSource:
    """One GGUF opened once; tensors are dequantized one at a time, when asked for."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self.reader = read_gguf(self.path)
        self._tensors = {t.name: t for t in self.reader.tensors}
        self.hparams = self._hparams()

    def meta(self, key: str, default: Any = None) -> Any:
        return field_value(self.reader, key, default)

    def _hparams(self) -> LlamaHParams:
        arch = self.meta("general.architecture")
        if arch not in SUPPORTED_ARCHS:
            raise EdgepickError(
                f"{self.path}: architecture '{arch}' is not supported by the torch-free "
                f"ONNX Runtime GenAI converter (supported: {', '.join(SUPPORTED_ARCHS)}); "
                "convert its Hugging Face folder with the official builder (needs torch)")

        def need(key: str) -> Any:
            value = self.meta(f"{arch}.{key}")
            if value is None:
                raise EdgepickError(f"{self.path}: GGUF lacks '{arch}.{key}'")
            return value

        n_embd, n_head = int(need("embedding_length")), int(need("attention.head_count"))
        n_head_kv = int(self.meta(f"{arch}.attention.head_count_kv", n_head))
        head_dim = int(self.meta(f"{arch}.attention.key_length", n_embd // n_head))
        rope_dim = int(self.meta(f"{arch}.rope.dimension_count", head_dim))
        if rope_dim != head_dim:
            raise EdgepickError(f"{self.path}: partial rotary embedding ({rope_dim} of {head_dim} "
                                "dims) is not supported by the torch-free converter")
        if self.meta(f"{arch}.rope.scaling.type") not in (None, "none"):
            raise EdgepickError(f"{self.path}: rope scaling "
                                f"'{self.meta(f'{arch}.rope.scaling.type')}' is not supported "
                                "by the torch-free converter")
        if self.meta(f"{arch}.expert_count"):
            raise EdgepickError(f"{self.path}: mixture-of-experts models are not supported by "
                                "the torch-free converter")
        bad = [n for n in self._tensors if n.endswith(".bias")]
        if bad:
            raise EdgepickError(f"{self.path}: tensor '{bad[0]}' (biases) is not supported by the "
                                "torch-free converter")
        emb = self._tensor("token_embd.weight")
        types: dict[str, int] = {}
        for t in self.reader.tensors:
            if len(t.shape) >= 2:
                types[t.tensor_type.name] = types.get(t.tensor_type.name, 0) + 1
        return LlamaHParams(
            arch=arch, n_layers=int(need("block_count")), n_embd=n_embd,
            n_ff=int(need("feed_forward_length")), n_head=n_head, n_head_kv=n_head_kv,
            head_dim=head_dim, n_vocab=int(emb.shape[1]),
            n_ctx_train=int(self.meta(f"{arch}.context_length", 2048)),
            rope_theta=float(self.meta(f"{arch}.rope.freq_base", 10000.0)),
            rms_eps=float(need("attention.layer_norm_rms_epsilon")),
            tied_output="output.weight" not in self._tensors,
            name=str(self.meta("general.name", Path(self.path).stem)), weight_types=types)

    def _tensor(self, name: str) -> Any:
        t = self._tensors.get(name)
        if t is None:
            raise EdgepickError(f"{self.path}: GGUF lacks tensor '{name}'")
        return t

    def array(self, name: str) -> np.ndarray:
        """The tensor dequantized to float32, in numpy's row-major order (rows = outputs)."""
        t = self._tensor(name)
        try:
            data = gguf.quants.dequantize(t.data, t.tensor_type)
        except NotImplementedError:
            raise EdgepickError(f"{self.path}: tensor '{name}' has type {t.tensor_type.name}, "
                                "which the gguf package cannot dequantize") from None
        return np.asarray(data, dtype=np.float32).reshape([int(d) for d in reversed(t.shape)])

    def rope_factors(self) -> np.ndarray | None:
        """Llama 3.x frequency factors (`rope_freqs.weight`), if the GGUF carries them."""
        return self.array("rope_freqs.weight") if "rope_freqs.weight" in self._tensors else None