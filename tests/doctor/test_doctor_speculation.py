"""Doctor's `speculation` cause: a target that decodes slower with its speculative decoding
than without is reported with the acceptance rate as evidence and turning it off (or another
kind) as the fix; a target without speculation skips the check."""

from __future__ import annotations

import pytest

from edgepick.assets.bundled import smollm2_f16, smollm2_q4_1
from edgepick.doctor import checks_speculation
from edgepick.doctor.checks import Skip
from edgepick.doctor.context import Ctx
from edgepick.doctor.prompts import builtin
from edgepick.doctor.target import Target
from edgepick.records.candidate import RuntimeSettings
from tests.parts import need_tool


def _ctx(spec, prompts: int = 2) -> Ctx:
    path = str(smollm2_q4_1())
    target = Target(text=path, kind="gguf", model_path=path,
                    settings=RuntimeSettings(n_ctx=512, speculative=spec))
    return Ctx(target=target, store=None, progress=lambda ev: None, prompts=builtin()[:prompts],
               symptom="slow")


def test_a_target_without_speculation_skips():
    with pytest.raises(Skip, match="without speculative decoding"):
        checks_speculation.speculation(_ctx(None))


def test_a_draft_larger_than_the_target_is_found_to_slow_decoding(monkeypatch):
    need_tool("llama-server")
    monkeypatch.setattr(checks_speculation, "TOKENS", 24)
    # the same model's F16 drafting for its Q4_1: a draft token reads about three times the bytes
    # of a target token, so even a draft accepted whole cannot pay (the model drafting for itself
    # sits near a speed ratio of 1, where a busy host can tip it either way)
    # four prompts, not two: beside other work one request can run several times slower than
    # its neighbour, and a mean of two such ratios can land above 0.95
    f = checks_speculation.speculation(_ctx({"type": "draft-simple", "model": str(smollm2_f16()),
                                             "n_max": 8}, prompts=4))
    assert f is not None and f.cause == "speculation" and f.symptom == "slow"
    speed, accepted, share = f.evidence[:3]
    assert speed.value < 0.95 and speed.baseline == 1.0
    assert 0 <= accepted.value <= 1 and "95% interval" in accepted.what
    assert 0 < share.value < 1
    assert "runtime.speculative: none" in f.fix.text
