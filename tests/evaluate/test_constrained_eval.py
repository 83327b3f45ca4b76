"""Constrained output as a candidate setting (issue 34 item 5): with `constrain: grammar` an
extraction item decodes under its JSON schema's grammar and a classification or yes/no item
under its label set, through the real in-process engine. Even the tiny 2-block model, whose
free answers are rarely valid, then answers schema-valid JSON every time; the free candidate's
format-error rate and both unacceptable rates are reported with their intervals."""

from __future__ import annotations

import json

import jsonschema

from edgepick.evaluate.stage import EvalRequest, run
from edgepick.records import Candidate, RuntimeSettings
from edgepick.store import ResultStore

SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 24},
                                           "age": {"type": "integer"}},
          "required": ["name", "age"], "additionalProperties": False}
PEOPLE = [("Tom", 31), ("Ana", 27), ("Li Wei", 45), ("Sara", 19), ("Omar", 52), ("Ines", 38)]


def _set(tmp_path):
    rows = [{"id": f"x{i}", "task": "extraction", "schema": SCHEMA,
             "prompt": f"Extract name and age as JSON: '{n} is {a} years old.'",
             "reference": {"name": n, "age": a}} for i, (n, a) in enumerate(PEOPLE)]
    rows += [{"id": "c1", "task": "classification", "prompt": "Sentiment of 'I love it'?",
              "labels": ["positive", "negative"], "reference": "positive"},
             {"id": "y1", "task": "yes_no", "prompt": "Is water wet?", "reference": "yes"}]
    path = tmp_path / "set.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_the_constrained_candidate_answers_only_valid_output(tiny_model, tmp_path):
    def cand(label: str, constrain: str) -> Candidate:
        return Candidate(model=tiny_model, label=label,
                         settings=RuntimeSettings(n_ctx=512, threads=1, constrain=constrain))

    req = EvalRequest(data=str(_set(tmp_path)), reference=cand("ref", "none"),
                      candidates=[cand("free", "none"), cand("grammar", "grammar")],
                      max_tokens={"extraction": 64, "classification": 6, "yes_no": 4},
                      sequential=False)
    with ResultStore(tmp_path / "results.sqlite") as store:
        res = run(req, store)
    free, constrained = res.candidates
    by_id = {o.item_id: o for o in constrained.items}
    for i in range(len(PEOPLE)):
        jsonschema.validate(json.loads(by_id[f"x{i}"].output), SCHEMA)  # every answer valid
    assert by_id["c1"].output in ("positive", "negative")
    assert by_id["y1"].output.lower() in ("yes", "no")
    assert all(o.format_ok for o in constrained.items)
    # both candidates' unacceptable rates come with their intervals
    for c in (free, constrained):
        u = c.unacceptable
        assert u is not None and c.unacceptable_rate is not None
    # the free candidate was measured apart (its own stored outputs), not the constrained one's
    assert [o.output for o in free.items] != [o.output for o in constrained.items]
    # the grammar's cost in speed: constrained items timed against the same prompts decoded
    # free to the same length; the free candidate times none
    from edgepick.decide.adapters import grammar_speed

    timed = [o for o in constrained.items if o.decode]
    assert timed and not any(o.decode for o in free.items)
    assert all(o.decode["tokens"] == o.decode["free_tokens"] > 0 for o in timed)
    speed = grammar_speed(constrained)
    assert speed["grammar_decode_tps"].value > 0 and speed["free_decode_tps"].value > 0
    assert speed["grammar_decode_tps"].n == len(timed) and grammar_speed(free) == {}
    # each task's shared constraint, for deploy.yaml
    assert res.task_constraints["extraction"] == {"json_schema": SCHEMA}
    assert res.task_constraints["classification"] == {"labels": ["positive", "negative"]}


def test_a_plan_lists_constrain_as_a_runtime_axis(tmp_path):
    from edgepick.plan.loader import load_plan
    from edgepick.plan.runner import plan_candidates

    (tmp_path / "plan.yaml").write_text(
        "name: c\ndevice: raspberry-pi-5\noutput: out\ncandidates:\n  - model: tiny\n"
        "    label: tiny\nruntime: {n_ctx: 256, constrain: [none, grammar]}\n"
        "eval: {data: demo, reference: tiny, limit: 2}\nscenario: {name: structured_extraction}\n")
    cands = plan_candidates(load_plan(tmp_path / "plan.yaml"))
    assert [c.name for c in cands] == ["tiny@constrain=none", "tiny@constrain=grammar"]
    assert cands[1].settings.constrain == "grammar"
    assert "constrain" not in cands[0].settings.model_dump()  # keys stay as they were
