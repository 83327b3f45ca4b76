"""Speculative decoding as a runtime setting: validated into records, one candidate per kind,
a draft with another vocabulary refused in one line naming both files while the plan's other
candidates stay, an engine that cannot speculate refused in one line naming one that can, and
the flags llama-server gets (common/arg.cpp of the pinned llama.cpp)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from edgepick.assets.bundled import gemma3_270m_q4_k_m, smollm2_q4_1
from edgepick.errors import EdgepickError
from edgepick.models.draft_vocab import draft_mismatch, token_table
from edgepick.plan.loader import load_plan
from edgepick.plan.runner import plan_candidates
from edgepick.records.candidate import RuntimeSettings
from edgepick.serve.engine.llama_server import EngineSpec, llama_server_command

PLAN = """
name: spec
device: raspberry-pi-5
candidates:
  - model: smollm2
    backend: llama_server
eval: {enabled: false}
runtime: {threads: 1, n_ctx: 256, speculative: [none, ngram-mod,
          {type: draft, model: smollm2, n_max: 4}, {type: draft-simple, model: gemma3-270m}]}
"""


def _plan(tmp_path, text: str = PLAN):
    p = tmp_path / "plan.yaml"
    p.write_text(text)
    return load_plan(p)


def test_each_kind_is_a_candidate_and_a_foreign_draft_loses_only_itself(tmp_path):
    cands = plan_candidates(_plan(tmp_path))
    by = {c.name: c for c in cands}
    assert list(by) == ["smollm2@spec=none", "smollm2@spec=ngram-mod",
                        "smollm2@spec=draft-simple:smollm2:4",
                        "smollm2@spec=draft-simple:gemma3-270m"]
    assert by["smollm2@spec=none"].settings.speculative is None
    draft = by["smollm2@spec=draft-simple:smollm2:4"].settings.speculative
    assert draft.type == "draft-simple" and draft.n_max == 4 and len(draft.sha256) == 64
    assert draft.model == str(smollm2_q4_1())  # the bundled name, resolved
    for name in list(by)[:3]:
        assert not by[name].skipped
    why = by["smollm2@spec=draft-simple:gemma3-270m"].skipped
    assert why.count("\n") == 0 and str(gemma3_270m_q4_k_m()) in why and str(smollm2_q4_1()) in why
    assert "262144 tokens, the target 49152" in why


def test_the_in_process_engine_is_refused_in_one_line_naming_one_that_speculates(tmp_path):
    with pytest.raises(EdgepickError) as exc:
        plan_candidates(_plan(tmp_path, PLAN.replace("    backend: llama_server\n", "")))
    msg = str(exc.value)
    assert "llama_cpp engine does not apply speculative" in msg and "llama_server" in msg
    assert "\n" not in msg
    # set once (no axis) it is refused as well: the candidate would not be what it says
    once = PLAN.replace("    backend: llama_server\n", "").replace(
        "speculative: [none, ngram-mod,\n          {type: draft, model: smollm2, n_max: 4}, "
        "{type: draft-simple, model: gemma3-270m}]", "speculative: ngram-mod")
    with pytest.raises(EdgepickError, match="does not apply speculative"):
        plan_candidates(_plan(tmp_path, once))


def test_settings_validate_in_one_line_each():
    assert RuntimeSettings(speculative="none").speculative is None
    assert RuntimeSettings(speculative={"type": "draft", "model": "d.gguf"}).speculative.type \
        == "draft-simple"
    for bad, words in [({"type": "drafty"}, "unknown speculative decoding type 'drafty'"),
                       ({"type": "draft-simple"}, "needs a draft model"),
                       ({"type": "ngram-mod", "model": "x.gguf"}, "takes no draft model"),
                       ({"type": "ngram-mod", "n_min": 9, "n_max": 4}, "above n_max")]:
        with pytest.raises(ValidationError, match=words):
            RuntimeSettings(speculative=bad)


def test_keys_hold_the_drafts_content_and_plain_decoding_keeps_old_keys():
    assert "speculative" not in RuntimeSettings().key_dict()
    a = RuntimeSettings(speculative={"type": "draft", "model": "/a/d.gguf", "sha256": "s"})
    b = RuntimeSettings(speculative={"type": "draft", "model": "/b/d.gguf", "sha256": "s"})
    assert a.key_dict() == b.key_dict() and a.key_dict()["speculative"] == {
        "type": "draft-simple", "sha256": "s"}


def test_llama_server_gets_the_flags_of_its_own_arg_parser():
    def cmd(spec):
        rt = RuntimeSettings(speculative=spec)
        return llama_server_command(EngineSpec(path="m.gguf", name="m", runtime=rt), "srv", 1)

    assert "--spec-type" not in cmd(None)
    c = cmd({"type": "draft", "model": "/d.gguf", "n_max": 8, "n_min": 1, "p_min": 0.5})
    i = c.index("--spec-type")
    assert c[i:] [:10] == ["--spec-type", "draft-simple", "-md", "/d.gguf", "--spec-draft-n-max",
                           "8", "--spec-draft-n-min", "1", "--spec-draft-p-min", "0.5"]
    c = cmd({"type": "ngram-mod", "n_max": 32})
    i = c.index("--spec-type")
    assert c[i:i + 4] == ["--spec-type", "ngram-mod", "--spec-ngram-mod-n-max", "32"]


def test_the_vocabulary_check_reads_the_token_tables():
    same = token_table(smollm2_q4_1())
    assert same.n_tokens == 49152 and same == token_table(smollm2_q4_1())
    assert draft_mismatch(smollm2_q4_1(), smollm2_q4_1()) is None
