"""What we know of a model's shape, from a GGUF header or a Hugging Face config.json."""

from __future__ import annotations

from pydantic import BaseModel, Field


class TensorInfo(BaseModel):
    name: str
    type: str  # ggml type name, e.g. "Q4_K", "F16"
    shape: list[int]
    n_elements: int
    n_bytes: int


class ModelSpec(BaseModel):
    source: str  # path of the file the spec was read from
    source_kind: str  # "gguf" | "hf_config"
    name: str
    architecture: str
    n_params: int
    n_layers: int
    n_embd: int
    n_heads: int
    n_kv_heads: list[int]  # one entry per layer: GQA/MQA and per-layer variation
    head_dim_k: int
    head_dim_v: int
    context_length: int
    vocab_size: int
    sliding_window: int | None = None
    swa_layers: list[int] = Field(default_factory=list)  # indices of sliding-window layers
    tied_embeddings: bool = False
    file_size_bytes: int | None = None
    file_type: str | None = None  # the GGUF's declared overall quant ("Q4_K_M"), if any
    tensors: list[TensorInfo] = Field(default_factory=list)
    quant_types: dict[str, int] = Field(default_factory=dict)  # ggml type -> tensor count
    # Mixture of experts: routed experts per MoE layer and how many each token uses; shared
    # experts and dense layers are read by every token (models/moe.py). 0 = dense model.
    n_experts: int = 0
    n_experts_used: int = 0
    n_shared_experts: int = 0
    n_active_params: int | None = None  # parameters one decoded token reads; None = n_params
    # Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2) as llama.cpp runs it: K holds the
    # latent (kv_lora_rank + rope dims, head_dim_k, one KV head) and no V is cached; None otherwise
    kv_lora_rank: int | None = None
    hf_architectures: list[str] = Field(default_factory=list)  # config.json's class names
    # what the shape reader could not model and approximated (Mamba/SSM layers, hybrid attention)
    approximations: list[str] = Field(default_factory=list)

    @property
    def active_params(self) -> int:
        return self.n_params if self.n_active_params is None else self.n_active_params

    @property
    def weights_bytes(self) -> int | None:
        return sum(t.n_bytes for t in self.tensors) if self.tensors else None

    @property
    def bits_per_weight(self) -> float | None:
        if not self.tensors:
            return None
        return 8.0 * sum(t.n_bytes for t in self.tensors) / max(1, sum(t.n_elements for t in self.tensors))
