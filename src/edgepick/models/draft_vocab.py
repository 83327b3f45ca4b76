"""Whether a draft model can speculate for a target: the same vocabulary, read from the two
GGUF headers (no weights are loaded).

llama.cpp's own test (common/speculative.cpp, `common_speculative_are_compatible`) compares the
vocabulary type, the BOS/EOS rules and every token's text past id 5, and tolerates up to 128
extra tokens; when it fails, llama-server only warns and serves without the draft, so a mismatch
would be measured as "speculation does not pay". edgepick asks for more, before any engine
starts: the same token count and the same token strings (a SHA-256 over them, as the llama_cpp
engine's `vocabulary()` hashes them), and the same BOS/EOS ids.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from pydantic import BaseModel

from edgepick.models.gguf_info import _field, read_gguf


class TokenTable(BaseModel):
    """A GGUF's tokenizer as far as speculation is concerned."""

    n_tokens: int
    sha256: str  # over every token string, each followed by a NUL
    model: str  # tokenizer.ggml.model (gpt2, llama, ...)
    bos: int | None
    eos: int | None


def token_table(path: str | Path) -> TokenTable:
    reader = read_gguf(path)
    tokens = _field(reader, "tokenizer.ggml.tokens") or []
    h = hashlib.sha256()
    for t in tokens:
        h.update(str(t).encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    bos, eos = (_field(reader, f"tokenizer.ggml.{k}_token_id") for k in ("bos", "eos"))
    return TokenTable(n_tokens=len(tokens), sha256=h.hexdigest(),
                      model=str(_field(reader, "tokenizer.ggml.model", "")),
                      bos=None if bos is None else int(bos), eos=None if eos is None else int(eos))


def draft_mismatch(target: str | Path, draft: str | Path) -> str | None:
    """One line naming both files when `draft` cannot speculate for `target`; None when their
    vocabularies are the same."""
    a, b = token_table(target), token_table(draft)
    if a == b:
        return None
    if a.n_tokens != b.n_tokens:
        what = f"{b.n_tokens} tokens, the target {a.n_tokens}"
    elif a.sha256 != b.sha256:
        what = f"the same {a.n_tokens} tokens in count but other token strings"
    elif a.model != b.model:
        what = f"tokenizer {b.model}, the target {a.model}"
    else:
        what = f"BOS/EOS {b.bos}/{b.eos}, the target {a.bos}/{a.eos}"
    return (f"draft {draft} does not share the vocabulary of {target} ({what}); a draft must "
            "have the target's tokenizer")
