"""Checks on a converted folder: it loads, and its tokenizer gives llama.cpp's token IDs.

Seed 000 §5.4: a conversion can change the tokenizer without a visible error; a different token
ID for the same text changes every later output, so the converter refuses such a build.
"""

from __future__ import annotations

from pathlib import Path

from edgepick.backends import get_backend
from edgepick.errors import EdgepickError
from edgepick.evaluate.consistency import first_divergence
from edgepick.records.candidate import Candidate, RuntimeSettings
from edgepick.records.model_ref import DEFAULT_ENGINE, ModelRef

# Digits, runs of spaces and newlines, punctuation, accents, CJK, emoji and the chat markers:
# the places where byte-level BPE pre-tokenizers differ.
CHECK_TEXT = (
    "Hello world! The year 2024 had 365 days; 3.14159 ≈ π.\n\n"
    "   Indented  text\twith\ttabs, naïve café, Ünïcödé — “quotes” and 'apostrophes' "
    "don't we'll I'm.\n"
    "端侧推理选型：在手机上运行大语言模型。量化到 INT4 之后，精度下降 1-5%。\n"
    "def f(x):\n    return x ** 2  # code 🙂🚀\n"
    "<|im_start|>user\nWhat is 12+30?<|im_end|>\n<|im_start|>assistant\n42<|im_end|>\n"
)


def check_tokenizer(folder: Path, gguf_path: str, text: str = CHECK_TEXT) -> str:
    """Load the converted folder with onnxruntime-genai and compare its token IDs for `text`
    with llama.cpp's on the source GGUF; raise on the first difference."""
    backends = {}
    try:
        for engine, path in (("onnxruntime_genai", folder), (DEFAULT_ENGINE, gguf_path)):
            backends[engine] = get_backend(engine)
            backends[engine].load(Candidate(ref=ModelRef.file(path, backend=engine),
                                            settings=RuntimeSettings(n_ctx=256, threads=1)))
        og = backends["onnxruntime_genai"]
        ours = og.tokenize(text, add_bos=False)
        theirs = backends[DEFAULT_ENGINE].tokenize(text, add_bos=False)
        i = first_divergence(ours, theirs)
        if i is not None:
            raise EdgepickError(
                f"{folder}: the rebuilt tokenizer differs from llama.cpp's at token {i} "
                f"(onnxruntime-genai {ours[i:i + 3]} vs llama.cpp {theirs[i:i + 3]}, "
                f"near {og.detokenize(ours[max(0, i - 2):i + 2])!r})")
    finally:
        for b in backends.values():
            b.unload()
    return f"token IDs identical to llama.cpp's on a {len(theirs)}-token check text"
