"""deploy.yaml's per-task constraint (issue 34 item 5): decide writes the schema or label set a
task's eval items shared when the chosen candidate decoded under them, a user may write one by
hand, a schema the engine's grammar could not survive is refused on load in one line naming the
file and the task, and a file without constraints reads and writes as it always did."""

from __future__ import annotations

import pytest

from edgepick.decide.decision import decide
from edgepick.decide.deploy import build_deploy
from edgepick.decide.scenarios import Constraints, Scenario
from edgepick.errors import InputError
from edgepick.evaluate.items import EvalItem, task_constraints
from edgepick.records.decision import CandidateSummary
from edgepick.records.deploy import DeployConfig

SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
HEAD = "schema_version: 1\nmodel: {name: m, path: /m/m.gguf, sha256: abc}\n"


def _load(tmp_path, text: str) -> DeployConfig:
    path = tmp_path / "deploy.yaml"
    path.write_text(HEAD + text, encoding="utf-8")
    return DeployConfig.load(path)


def test_a_hand_written_constraint_loads_and_a_file_without_one_is_unchanged(tmp_path):
    cfg = _load(tmp_path, "constraints:\n  extraction:\n    json_schema: {type: object}\n"
                          "  sentiment: {labels: [positive, negative]}\n")
    assert cfg.constraints["extraction"].as_constraint() == {"json_schema": {"type": "object"}}
    assert cfg.constraints["sentiment"].as_constraint() == {"labels": ["positive", "negative"]}
    plain = _load(tmp_path, "")
    assert plain.constraints == {}
    out = plain.dump(tmp_path / "again.yaml").read_text("utf-8")
    assert "constraints" not in out


@pytest.mark.parametrize("body, problem", [
    ("extraction: {json_schema: {type: string, minLength: 10, maxLength: 2}}",
     "'constraints.extraction': 'json_schema.minLength': minLength 10 is above maxLength 2"),
    ("extraction: {json_schema: {type: object}, labels: [a]}",
     "'constraints.extraction': 'constraint': expected exactly one of json_schema or labels"),
    ("sentiment: {labels: []}", "'constraints.sentiment': 'labels': expected a non-empty list"),
])
def test_a_bad_constraint_is_refused_in_one_line_naming_file_and_task(tmp_path, body, problem):
    with pytest.raises(InputError) as exc:
        _load(tmp_path, "constraints:\n  " + body + "\n")
    line = str(exc.value)
    assert "\n" not in line and line.startswith(str(tmp_path / "deploy.yaml")) and problem in line


def test_a_tasks_constraint_is_the_one_all_its_items_share():
    items = [EvalItem(id=str(i), task="extraction", prompt="a", schema=SCHEMA,
                      reference={"name": "x"}) for i in (1, 2)]
    items += [EvalItem(id="3", task="classification", prompt="c", labels=["p", "n"], reference="p"),
              EvalItem(id="4", task="classification", prompt="d", labels=["p", "q"], reference="p"),
              EvalItem(id="5", task="qa", prompt="e", reference="z")]
    # classification's items disagree on their labels, qa has none
    assert task_constraints(items) == {"extraction": {"json_schema": SCHEMA}}


@pytest.mark.parametrize("constrain, written", [("grammar", True), ("none", False)])
def test_decide_writes_the_constraint_only_for_a_constrained_candidate(constrain, written):
    sc = Scenario(name="t", constraints=Constraints(peak_memory_max=None))
    s = CandidateSummary(candidate="e", model="/m/e.gguf", decode_tps=30.0, quality_overall=0.8,
                         settings={"constrain": constrain},
                         constraints={"extraction": {"json_schema": SCHEMA},
                                      "bad": {"json_schema": {"minItems": 3, "maxItems": 1}}})
    cfg = build_deploy(decide([s], sc), [s], sc)
    assert cfg.runtime.constrain == constrain
    # the unsafe one was refused by eval too: nothing was measured under it, nothing deployed
    assert list(cfg.constraints) == (["extraction"] if written else [])


def test_the_eval_results_task_constraints_reach_the_summary():
    from decide_payloads import cand_eval, eval_result

    from edgepick.decide.adapters import eval_adapter

    ev = eval_result([cand_eval("/m/e.gguf", "e", {"extraction": (0.5, 0.6)})])
    ev.task_constraints = {"extraction": {"json_schema": SCHEMA}}
    s = CandidateSummary(candidate="e", model="/m/e.gguf")
    eval_adapter(ev.model_dump(mode="json"), lambda *a, **k: s)  # as stored
    assert s.constraints == {"extraction": {"json_schema": SCHEMA}}
