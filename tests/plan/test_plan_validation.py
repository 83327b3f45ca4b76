"""A broken plan fails before any work starts, naming the file, the line and the field."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from edgepick.errors import EdgepickError, InputError
from edgepick.plan.loader import load_plan

GOOD = """\
name: t
device: raspberry-pi-5
output: out
candidates:
  - model: tiny
eval:
  reference: tiny
  limit: 4
scenario:
  name: realtime_chat
"""


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "plan.yaml"
    p.write_text(text)
    return p


def _err(tmp_path: Path, text: str) -> EdgepickError:
    with pytest.raises(EdgepickError) as ei:
        load_plan(_write(tmp_path, text))
    assert not (tmp_path / "out").exists()  # nothing was started
    return ei.value


def test_good_plan_loads_and_resolves_relative_paths(tmp_path):
    lp = load_plan(_write(tmp_path, GOOD))
    assert lp.output == tmp_path / "out" and lp.store_path == tmp_path / "out" / "results.sqlite"
    assert lp.eval_data().endswith("demo_eval.jsonl")


@pytest.mark.parametrize("old,new,field,line,words", [
    ("  limit: 4", "  limit: 4\n  limt: 5", "eval.limt", 9, "unknown field"),
    ("device: raspberry-pi-5", "device: raspberry-pi-99", "device", 2, "unknown device"),
    ("  - model: tiny", "  - model: nowhere.gguf", "candidates[0].model", 5, "no such file"),
    ("  name: realtime_chat", "  name: realtime_chatt", "scenario.name", 10, "unknown scenario"),
    ("  limit: 4", "  limit: 0", "eval.limit", 8, "greater than or equal to 1"),
    ("  reference: tiny\n", "", "eval.reference", None, "missing"),
    ("  name: realtime_chat", "  name: realtime_chat\n  overrides: {constraints: {ttft_max: 3}}",
     "scenario.overrides.constraints.ttft_max", 11, "unknown field"),
    # the engine's own settings model types its knobs (LlamaCppSettings for llama_cpp)
    ("scenario:", "runtime: {kv_type: q9_9}\nscenario:", "runtime.kv_type", 9,
     "unknown KV cache type 'q9_9'"),
    ("scenario:", "runtime: {kv_type: [f16, q9_9]}\nscenario:", "runtime.kv_type", 9,
     "unknown KV cache type 'q9_9'"),  # an axis's every value
    ("scenario:", "runtime: {engine: {kv_typ: q8_0}}\nscenario:", "runtime.engine.kv_typ", 9,
     "not a setting of this engine (its own: flash_attn, kv_type, mmap, swa_full)"),
    # llama.cpp's knobs in the engine map are its flat fields: typed, and read alike everywhere
    ("scenario:", "runtime: {engine: {flash_attn: maybe}}\nscenario:", "runtime.flash_attn",
     9, "valid boolean"),
    ("scenario:", "runtime: {kv_type: f16, engine: {kv_type: q8_0}}\nscenario:", "runtime", 9,
     "kv_type is given twice"),
])
def test_broken_plan_names_field_and_line(tmp_path, old, new, field, line, words):
    assert old in GOOD
    e = _err(tmp_path, GOOD.replace(old, new))
    assert isinstance(e, InputError) and e.field == field, str(e)
    assert words in e.problem
    if line is not None:
        assert e.line == line, str(e)
    assert str(e).startswith(str(tmp_path / "plan.yaml"))


def test_bad_quant_type_and_imatrix(tmp_path):
    e = _err(tmp_path, GOOD + "quantize:\n  - source: tiny\n    types: [Q8_0, Q9_X]\n")
    assert e.field == "quantize[0].types[1]" and "Q9_X" in e.problem and e.line == 13
    e = _err(tmp_path, GOOD + "quantize:\n  - source: tiny\n    types: [Q8_0]\n"
                              "    imatrix: missing.dat\n")
    assert e.field == "quantize[0].imatrix"


def test_malformed_yaml_has_a_line(tmp_path):
    e = _err(tmp_path, GOOD + "bench: [unclosed\n")
    assert e.line is not None and "malformed YAML" in str(e)


def test_cli_one_line_exit_2(tmp_path, cli):
    p = cli("run", str(_write(tmp_path, GOOD.replace("output: out", "outptu: out"))))
    assert p.returncode == 2
    assert p.stderr.strip().count("\n") == 0 and "field 'outptu': unknown field" in p.stderr
    assert "Traceback" not in p.stderr


def test_default_and_example_plans_validate(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    lp = load_plan("default")
    assert lp.plan.device == "local" and lp.plan.scenario.name == "realtime_chat"
    assert {c.model for c in lp.plan.candidates} == {"smollm2"}
    assert lp.plan.eval.limit >= 100  # enough items for the 5% gate to resolve (issue 15)
    assert lp.output == tmp_path / "edgepick-out"
    examples = Path(__file__).resolve().parents[2] / "examples"
    for p in sorted(examples.glob("*.yaml")):
        load_plan(p)
    assert os.listdir(tmp_path) == []


def test_missing_stage_is_skipped_and_said_not_faked(tmp_path, monkeypatch):
    from edgepick.plan import runner

    text = GOOD + "bench: {enabled: false}\neval: {enabled: false}\nfidelity: {enabled: false}\n"
    text = text.replace("eval:\n  reference: tiny\n  limit: 4\n", "")
    lp = load_plan(_write(tmp_path, text))
    fake = [(n, fn, "edgepick.no_such_stage" if n == "fit" else m) for n, fn, m in runner.STAGES]
    monkeypatch.setattr(runner, "STAGES", fake)
    res = runner.run_plan(lp)
    assert any(n.startswith("fit: stage not available") for n in res.notes)
    (r,) = res.decision.ranking
    assert r.eliminated and r.reasons == [
        "nothing measured: no bench, eval or fidelity result stored for it"]
    assert res.summaries[0].predicted_peak_bytes is None  # no estimate invented in its place
    assert res.decision.recommendation is None and res.reports[0].is_file()


def test_llama_cpp_knobs_in_the_engine_map_are_its_flat_fields(tmp_path):
    """Written either way, the runtime is the same: the same key, serve's command line and fit
    read the same cache type."""
    flat = load_plan(_write(tmp_path, GOOD + "runtime: {kv_type: q8_0}\n")).plan.runtime
    mapped = load_plan(_write(tmp_path, GOOD + "runtime: {engine: {kv_type: q8_0}}\n")).plan.runtime
    assert mapped.kv_type == "q8_0" and mapped.engine == {}
    assert mapped.key_dict() == flat.key_dict()
