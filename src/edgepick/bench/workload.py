"""What one measurement runs: a prompt of exactly N tokens, then M generated tokens."""

from __future__ import annotations

from pydantic import BaseModel, Field

# Mixed English/Chinese filler so prompt tokens look like real input; repeated to any length.
_SENTENCES = (
    "Edge devices run language models under tight memory and power budgets. ",
    "端侧设备在有限的内存和功耗预算下运行语言模型，首个token的延迟决定了用户的等待时间。 ",
    "The decode speed depends on memory bandwidth, the quantization type and the context length. ",
    "量化可以减少权重占用的内存，但是也会带来一定的精度损失，需要在真实数据上评估。 ",
)
_FILLER = "".join(_SENTENCES)


class Workload(BaseModel):
    """Part of every stored result's key: change any field and it is a new configuration."""

    prompt_tokens: int = Field(128, ge=1)
    gen_tokens: int = Field(128, ge=1)
    warmup: int = Field(1, ge=0)
    repeats: int = Field(5, ge=1)
    concurrency: int = Field(1, ge=1)  # requests submitted at the same instant
    sustain_s: float = Field(0.0, ge=0)  # > 0: continuous generation for this long instead


def _filler(variant: int) -> str:
    # Concurrent requests get different prompts (rotated sentences) so that no prompt cache
    # can serve one request from another's work.
    k = variant % len(_SENTENCES)
    return "".join(_SENTENCES[k:] + _SENTENCES[:k]) + (f"[{variant}] " if variant else "")


def prompt_of_length(tokenize, n_tokens: int, variant: int = 0) -> list[int]:
    """Exactly `n_tokens` tokens (BOS included when the model uses one) of filler text."""
    unit = _filler(variant) if variant else _FILLER
    text = unit
    tokens = tokenize(text)
    while len(tokens) < n_tokens:
        # Grow geometrically: tokenizing is a server round trip with the HTTP backend.
        text += unit * max(1, (n_tokens - len(tokens)) // max(1, len(tokens)) + 1)
        tokens = tokenize(text)
    return tokens[:n_tokens]
