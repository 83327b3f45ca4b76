"""serve says at load which model has no chat template (llama-server would prompt it in ChatML):
the bundled Gemma-3-270M base model has none, the bundled SmolLM2-135M-Instruct has one."""

from __future__ import annotations

import logging

from edgepick.assets import bundled
from edgepick.serve.engine.template_warning import warn_without_template


def test_a_model_without_a_chat_template_is_warned_of_at_load(caplog):
    gemma, smol = str(bundled.gemma3_270m_q4_k_m()), str(bundled.smollm2_q4_1())
    with caplog.at_level(logging.WARNING, logger="edgepick.serve"):
        warned = warn_without_template([("gemma", gemma), ("smollm2", smol)])
    assert warned == ["gemma"]
    assert "gemma has no chat template" in caplog.text and "ChatML" in caplog.text
    assert "/v1/completions" in caplog.text
