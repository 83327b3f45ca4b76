"""A model served without a chat template is said at load: llama-server then prompts
/v1/chat/completions in ChatML (llama.cpp common/chat.cpp, `common_chat_templates_init`), which a
model trained on another format, or a base model, answers with the markers themselves (the
bundled Gemma-3-270M base model answered "What is 2+2?" with "<|im_end|>\\n<")."""

from __future__ import annotations

import logging

from edgepick.models.gguf_fast_reader import fast_reader

log = logging.getLogger("edgepick.serve")


def without_template(path: str) -> bool:
    try:
        return "tokenizer.chat_template" not in fast_reader(path).fields
    except Exception:  # noqa: BLE001  not a readable GGUF: the engine's load says why
        return False


def warn_without_template(models: list[tuple[str, str]]) -> list[str]:
    """Warn for each (name, GGUF path) with no chat template; returns the names warned of."""
    out = []
    for name, path in models:
        if path and without_template(path):
            log.warning("%s has no chat template: llama-server prompts chat requests in ChatML, "
                        "its fallback, which a model not trained on it answers garbled; use "
                        "/v1/completions, or write a template into the file (`edgepick doctor "
                        "%s --symptom garbled` measures which format it answers in)", name, path)
            out.append(name)
    return out
