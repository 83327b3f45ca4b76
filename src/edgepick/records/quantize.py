"""Records of the quantize stage: built files, sensitivity rankings and mixed-precision recipes."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Fallback(BaseModel):
    """A tensor llama.cpp could not give the asked type (row length not a multiple of its block)."""

    tensor: str
    ncols: int
    block: int
    wanted: str  # ggml type asked for
    got: str  # ggml type written instead


class TensorOverride(BaseModel):
    """One `--tensor-type PATTERN=TYPE` given to llama-quantize (PATTERN is a regex searched in
    the tensor name; the first pattern that matches wins)."""

    pattern: str
    type: str  # ggml type name, e.g. "Q8_0"

    def arg(self) -> str:
        return f"{self.pattern}={self.type.lower()}"


class QuantizedFile(BaseModel):
    path: str
    type: str  # the llama.cpp file type asked for (Q4_K_M, …), or "mixed" for a recipe build
    size_bytes: int
    bpw: float  # 8 × tensor bytes ÷ tensor elements, over every tensor of the file
    fallbacks: list[Fallback] = Field(default_factory=list)
    source: str
    source_sha256: str
    imatrix: str | None = None
    requantized: bool = False  # built from an already quantized source (error compounds)
    pure: bool = False
    overrides: list[TensorOverride] = Field(default_factory=list)
    tensor_types: dict[str, int] = Field(default_factory=dict)  # ggml type -> tensor count
    build_key: str = ""  # content key of everything the bytes depend on
    sha256: str = ""  # of the built file
    skipped: bool = False  # an identical build already existed; nothing was run
    seconds: float | None = None


class SensitivityEntry(BaseModel):
    """One unit quantized to the low type, every other tensor at the high type."""

    unit: str  # "blk.7", "attn_v", "ffn", "token_embd", "output", …
    tensors: list[str]
    kld_mean: float
    kld_p99: float
    same_top1: float | None = None
    size_bytes: int  # size of the file built for this measurement
    unit_bytes_low: int  # the unit's tensor bytes at the low type (fallbacks included)
    unit_bytes_high: int  # … and at the high type
    cached: bool = False

    @property
    def extra_bytes(self) -> int:
        return self.unit_bytes_high - self.unit_bytes_low


class SensitivityReport(BaseModel):
    source: str
    source_sha256: str
    low: str
    high: str
    by: str  # "block" | "class"
    text: str
    text_sha256: str
    ctx: int
    chunks: int | None
    baseline_kld_mean: float  # every unit at the high type
    baseline_kld_p99: float
    baseline_size_bytes: int
    entries: list[SensitivityEntry]  # most sensitive first

    def ranked_units(self) -> list[str]:
        return [e.unit for e in self.entries]


class RecipeUnit(BaseModel):
    unit: str
    type: str  # ggml type this unit's tensors get
    kld_mean: float | None = None  # its sensitivity figure, when chosen automatically
    extra_bytes: int | None = None


class Recipe(BaseModel):
    """A mixed-precision build: enough to rebuild the same file with llama-quantize."""

    version: int = 1
    source: str
    source_sha256: str
    low: str  # llama.cpp file type the rest of the model gets (with --pure)
    high: str
    by: str
    budget: str | None = None  # as the user wrote it
    budget_bytes: int | None = None
    imatrix: str | None = None
    imatrix_sha256: str | None = None
    units: list[RecipeUnit]  # one entry per unit, in sensitivity order when automatic
    overrides: list[TensorOverride]  # the exact --tensor-type list given to llama-quantize
    predicted_size_bytes: int | None = None
    sensitivity_text: str | None = None
    sensitivity_text_sha256: str | None = None
    baseline_kld_mean: float | None = None
