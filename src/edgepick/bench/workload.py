"""What one measurement runs: a prompt of exactly N tokens, then M generated tokens."""

from __future__ import annotations

from pydantic import BaseModel, Field

# Mixed English/Chinese filler so prompt tokens look like real input; repeated to any length.
_FILLER = (
    "Edge devices run language models under tight memory and power budgets. "
    "端侧设备在有限的内存和功耗预算下运行语言模型，首个token的延迟决定了用户的等待时间。 "
    "The decode speed depends on memory bandwidth, the quantization type and the context length. "
    "量化可以减少权重占用的内存，但是也会带来一定的精度损失，需要在真实数据上评估。 "
)


class Workload(BaseModel):
    prompt_tokens: int = Field(128, ge=1)
    gen_tokens: int = Field(128, ge=1)
    warmup: int = Field(1, ge=0)
    repeats: int = Field(5, ge=1)


def prompt_of_length(tokenize, n_tokens: int) -> list[int]:
    """Exactly `n_tokens` tokens (BOS included when the model uses one) of filler text."""
    text = _FILLER
    tokens = tokenize(text)
    while len(tokens) < n_tokens:
        text += _FILLER
        tokens = tokenize(text)
    return tokens[:n_tokens]
