"""A Hugging Face tokenizer.json rebuilt from a GGUF's tokenizer metadata, for ONNX Runtime GenAI.

Seed 000 §5.4: a conversion can change the tokenizer silently, so the rebuilt one is checked
against llama.cpp's token IDs (`edgepick consistency`, and the converter's own self-check).
"""

from __future__ import annotations

import json
from pathlib import Path

from tokenizers import Tokenizer

from edgepick.convert.gguf_source import GgufSource
from edgepick.errors import EdgepickError

# llama.cpp's pre-tokenizer names (tokenizer.ggml.pre) → the Hugging Face pre-tokenizers that
# split text the same way (llama-vocab.cpp's regex_exprs per LLAMA_VOCAB_PRE_TYPE).
_LLAMA3_SPLIT = ("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?"
                 "[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")
PRE_TOKENIZERS = {
    # individual digits, then GPT-2's byte-level split (starcoder, smollm, refact, ...)
    "smollm": "digits+gpt2", "starcoder": "digits+gpt2", "refact": "digits+gpt2",
    "gpt2": "gpt2", "default": "gpt2",
    "llama-bpe": "llama3",
}
CONTROL, USER_DEFINED = 3, 4


def _pre_tokenizer(kind: str) -> dict:
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                  "use_regex": kind != "llama3"}
    if kind == "gpt2":
        return byte_level
    if kind == "digits+gpt2":
        return {"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": True}, byte_level]}
    return {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": _LLAMA3_SPLIT}, "behavior": "Isolated",
         "invert": False}, byte_level]}


def tokenizer_files(src: GgufSource) -> dict[str, dict]:
    """tokenizer.json and tokenizer_config.json contents; a clear error for what cannot be built."""
    model = src.meta("tokenizer.ggml.model")
    pre = src.meta("tokenizer.ggml.pre", "default")
    if model != "gpt2":
        raise EdgepickError(f"{src.path}: tokenizer model '{model}' is not supported by the "
                            "torch-free converter (supported: gpt2 byte-level BPE)")
    if pre not in PRE_TOKENIZERS:
        raise EdgepickError(f"{src.path}: pre-tokenizer '{pre}' is not supported by the "
                            f"torch-free converter (supported: {', '.join(sorted(PRE_TOKENIZERS))})")
    tokens = [str(t) for t in src.meta("tokenizer.ggml.tokens")]
    types = [int(t) for t in src.meta("tokenizer.ggml.token_type", [1] * len(tokens))]
    merges = [str(m) for m in src.meta("tokenizer.ggml.merges", [])]
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": ty == CONTROL}
             for i, (t, ty) in enumerate(zip(tokens, types)) if ty in (CONTROL, USER_DEFINED)]

    def special(key: str) -> str | None:
        i = src.meta(f"tokenizer.ggml.{key}_token_id")
        return tokens[int(i)] if i is not None and 0 <= int(i) < len(tokens) else None

    bos, add_bos = special("bos"), bool(src.meta("tokenizer.ggml.add_bos_token", False))
    post = None
    if add_bos and bos is not None:
        bos_id = tokens.index(bos)
        post = {"type": "TemplateProcessing",
                "single": [{"SpecialToken": {"id": bos, "type_id": 0}},
                           {"Sequence": {"id": "A", "type_id": 0}}],
                "pair": [{"SpecialToken": {"id": bos, "type_id": 0}},
                         {"Sequence": {"id": "A", "type_id": 0}},
                         {"Sequence": {"id": "B", "type_id": 1}}],
                "special_tokens": {bos: {"id": bos, "ids": [bos_id], "tokens": [bos]}}}
    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": None, "pre_tokenizer": _pre_tokenizer(PRE_TOKENIZERS[pre]),
        "post_processor": post,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": pre == "llama-bpe",
                  "vocab": {t: i for i, t in enumerate(tokens)},
                  "merges": merges},
    }
    config = {"tokenizer_class": "GPT2Tokenizer", "add_bos_token": add_bos,
              "add_prefix_space": False, "clean_up_tokenization_spaces": False,
              "model_max_length": src.hparams.n_ctx_train,
              "bos_token": bos, "eos_token": special("eos"), "unk_token": special("unknown"),
              "pad_token": special("padding")}
    template = src.meta("tokenizer.chat_template")
    if template:
        config["chat_template"] = str(template)
    return {"tokenizer.json": tokenizer, "tokenizer_config.json": config}


def write_tokenizer(src: GgufSource, out: Path) -> list[str]:
    """Write the tokenizer files into `out`; return their names."""
    files = tokenizer_files(src)
    try:  # the Hugging Face library reads it as any loader would, or says what is wrong
        Tokenizer.from_str(json.dumps(files["tokenizer.json"]))
    except Exception as exc:  # noqa: BLE001 - tokenizers raises a bare Exception
        raise EdgepickError(f"{src.path}: the rebuilt tokenizer.json is invalid ({exc})") from None
    for name, content in files.items():
        (out / name).write_text(json.dumps(content, ensure_ascii=False, indent=1) + "\n",
                                encoding="utf-8")
    return list(files)
