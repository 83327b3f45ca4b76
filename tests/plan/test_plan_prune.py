"""A quantize entry's `prune:` axis: a broken cut fails before any work with the plan's file and
line; a plan with prune × quant runs end to end on the bundled SmolLM2 F16 (fit from the pruned
header, the build, bench, eval and fidelity, the report's pruning front in words, deploy.yaml),
with the blocks given so that no 30-block ranking is measured in the suite; a cut chosen by the
stored ranking runs on a 4-block cut of SmolLM2 (ranked in seconds)."""

from __future__ import annotations

from pathlib import Path

import pytest
from gguf_synth import block_model

from edgepick.errors import EdgepickError, InputError
from edgepick.models.depth import without_blocks
from edgepick.models.gguf_info import gguf_spec
from edgepick.plan.loader import load_plan
from edgepick.plan.runner import plan_candidates, run_plan
from edgepick.prune.build import build, facts
from edgepick.prune.rank import stored_ranking
from edgepick.records.deploy import DeployConfig
from edgepick.store import ResultStore
from edgepick.store.identity import file_sha256

PLAN = """\
name: pruned
device: raspberry-pi-5
output: out
quantize:
  - source: {source}
    types: [Q4_0]
    label: smol
    prune: {prune}
    prune_by: influence
    prune_ctx: 64
    prune_chunks: 1
runtime: {{threads: 2, n_ctx: 512}}
bench:
  prompt_lengths: [32]
  gen_tokens: 8
  repeats: 1
  sustain_s: 0
  quiet_wait_s: 0
eval:
  data: demo
  reference: {source}
  limit: 2
  max_tokens: {{classification: 8, extraction: 16, qa: 8, math: 8, summary: 16, generation: 16}}
fidelity:
  ctx: 128
  max_chunks: 1
scenario:
  name: realtime_chat
  overrides:
    constraints: {{ttft_p50_ms_max: 5000}}
report: {{lang: both}}
"""


def _plan(tmp_path: Path, source: str, prune: str = "[0, 2]", extra: str = "") -> Path:
    text = PLAN.format(source=source, prune=prune)
    if extra:
        text = text.replace("    prune_chunks: 1\n", f"    prune_chunks: 1\n{extra}")
    p = tmp_path / "plan.yaml"
    p.write_text(text)
    return p


def _err(path: Path) -> InputError:
    with pytest.raises(EdgepickError) as ei:
        load_plan(path)
    assert isinstance(ei.value, InputError), str(ei.value)
    assert "\n" not in str(ei.value) and not (path.parent / "out").exists()
    return ei.value


def _ssm(path: Path) -> str:
    """A recurrent model (a state outside the blocks): it cannot lose a block."""
    return block_model(path, "mamba", {"mamba.ssm.state_size": 16})


@pytest.mark.parametrize("prune,extra,field,words", [
    ("[0, 30]", "", "quantize[0].prune[1]", "cannot remove 30 of the source's 30 blocks"),
    ("[[3, 31]]", "", "quantize[0].prune[0]", "block 31 does not exist"),
    ("[2]", "    prune_text: nowhere.txt\n", "quantize[0].prune_text", "no such text file"),
    ("[2]", "    imatrix: m.dat\n", "quantize[0].imatrix", "pruning renumbers"),
])
def test_a_cut_the_source_cannot_take_names_its_line(tmp_path, smollm2_f16, prune, extra,
                                                      field, words):
    (tmp_path / "m.dat").write_bytes(b"x")
    e = _err(_plan(tmp_path, smollm2_f16, prune, extra))
    assert e.field == field and words in e.problem, str(e)
    assert e.line is not None and e.line >= 6


def test_a_negative_or_repeated_cut_is_a_schema_error(tmp_path, smollm2_f16):
    for prune in ("[-1]", "[2, 2]", "[[]]"):
        e = _err(_plan(tmp_path, smollm2_f16, prune))
        assert e.field.startswith("quantize[0].prune") and e.line == 8, str(e)


def test_two_rankings_of_one_source_are_refused(tmp_path, smollm2_f16):
    path = _plan(tmp_path, smollm2_f16, "[2]")
    text = path.read_text()
    entry = text[text.index("  - source:"):text.index("runtime:")]
    path.write_text(text.replace(entry, entry + entry.replace("prune_ctx: 64", "prune_ctx: 128")
                                 .replace("label: smol", "label: other")))
    e = _err(path)
    assert e.field == "quantize[1].prune" and "quantize[0] ranks this source otherwise" \
        in e.problem, str(e)


def test_a_model_that_cannot_be_pruned_is_refused_at_its_line(tmp_path):
    e = _err(_plan(tmp_path, _ssm(tmp_path / "mamba.gguf")))
    assert e.field == "quantize[0].prune" and "cannot be pruned" in e.problem
    assert "recurrent" in e.problem and e.line == 8


def test_the_grid_is_cuts_times_types(tmp_path, smollm2_f16):
    lp = load_plan(_plan(tmp_path, smollm2_f16, "[0, 2, [3, 17]]"))
    lp.plan.quantize[0].types = ["Q8_0", "Q4_0"]
    names = {c.name: c for c in plan_candidates(lp)}
    assert sorted(names) == sorted(["smol-Q8_0", "smol-Q4_0", "smol-drop2-Q8_0",
                                    "smol-drop2-Q4_0", "smol-drop3+17-Q8_0",
                                    "smol-drop3+17-Q4_0"])
    cut = names["smol-drop2-Q4_0"]
    assert cut.prune.drop == 2 and cut.prune.by == "influence"
    assert cut.source.path.endswith(".drop2-influence.gguf")
    assert cut.ref.path.endswith(".drop2-influence.Q4_0.gguf")
    assert cut.reference.path == smollm2_f16  # fidelity against the unpruned source
    assert names["smol-drop3+17-Q8_0"].prune.blocks == (3, 17)


GIVEN = "[0, [14, 17]]"  # the blocks SmolLM2's KLD ranking removes first (docs/quantize.md)


def test_prune_times_quant_runs_end_to_end_and_reruns_nothing(tmp_path, smollm2_f16):
    res = run_plan(load_plan(_plan(tmp_path, smollm2_f16, GIVEN)))
    s = {x.candidate: x for x in res.summaries}
    assert sorted(s) == ["smol-Q4_0", "smol-drop14+17-Q4_0"]
    pruned, full = s["smol-drop14+17-Q4_0"], s["smol-Q4_0"]
    assert full.pruned is None
    p = pruned.pruned
    assert p.removed == [14, 17] and p.blocks_before == 30 and p.ranking == "given"
    # the quantized file carries the cut's provenance (llama-quantize copies the metadata)
    assert facts(pruned.model) == p
    spec = gguf_spec(pruned.model)
    assert spec.n_layers == 28 and spec.quant_types.get("Q4_0")
    # fit estimated the pruned build: its prediction of the file matches the written one
    predicted = without_blocks(gguf_spec(smollm2_f16), p.removed)
    assert predicted.n_layers == 28
    assert pruned.predicted_peak_bytes and pruned.predicted_peak_bytes < full.predicted_peak_bytes
    # bench, eval and fidelity measured it like any other candidate
    assert pruned.decode_tps and pruned.tasks and pruned.kld_mean is not None
    assert pruned.kld_mean > full.kld_mean  # two blocks fewer, the same type: further away
    assert any(n.startswith("prune: drop14+17 of") and "given in the plan" in n
               for n in res.notes), res.notes
    # the report's pruning section: which blocks, chosen how, on the front or not
    md = (tmp_path / "out" / "report" / "report.en.md").read_text(encoding="utf-8")
    section = md.split("## Pruning against quantization", 1)[1]
    assert "| 14, 17 of 30 | given in the plan |" in section
    assert ("Pruning bought nothing" in section) or ("Pruning reached points" in section)
    zh = (tmp_path / "out" / "report" / "report.zh.md").read_text(encoding="utf-8")
    assert "剪枝与量化对比" in zh
    front = (tmp_path / "out" / "report" / "data" / "prune_front.json").read_text()
    assert "smol-drop14+17-Q4_0" in front
    if res.deploy is not None:  # the chosen model's pruning goes into deploy.yaml
        cfg = DeployConfig.load(res.deploy)
        chosen = s[cfg.model.name]
        assert cfg.model.pruned == chosen.pruned
    # a rerun ranks, builds and measures nothing again
    with ResultStore(res.store) as st:
        before = st._conn.execute("SELECT kind, key, created FROM results WHERE kind NOT IN "
                                  "('decision', 'eval', 'prune')").fetchall()
    run_plan(load_plan(_plan(tmp_path, smollm2_f16, GIVEN)))
    with ResultStore(res.store) as st:
        after = st._conn.execute("SELECT kind, key, created FROM results WHERE kind NOT IN "
                                 "('decision', 'eval', 'prune')").fetchall()
    assert sorted(after) == sorted(before)


@pytest.fixture(scope="module")
def four_blocks(smollm2_f16, tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("plan-prune") / "smol4.gguf"
    build(smollm2_f16, path, list(range(4, 30)))
    return str(path)


def test_a_cut_by_ranking_follows_the_stored_ranking(tmp_path, four_blocks):
    """Two signals on calibration text, the cut the KLD's least important block, the ranking
    stored for `edgepick prune build --drop` and for the next run; bench and eval left out."""
    path = _plan(tmp_path, four_blocks, "[0, 1]")
    text = path.read_text().replace("prune_by: influence", "prune_by: kld")
    text = text.replace("bench:\n", "bench:\n  enabled: false\n")
    path.write_text(text.replace("eval:\n", "eval:\n  enabled: false\n"))
    res = run_plan(load_plan(path))
    with ResultStore(res.store) as st:
        ranking = stored_ranking(st, file_sha256(four_blocks), signal="kld")
    assert ranking is not None and ranking.ctx == 64 and ranking.chunks == 1
    s = {x.candidate: x for x in res.summaries}
    p = s["smol-drop1-Q4_0"].pruned
    assert p.removed == ranking.by_kld[:1] and p.blocks_before == 4 and p.ranking == "kld"
    assert p.ranked_on.startswith("calibration_text.txt, 1 × 64 tokens")
    assert p.spearman == (None if ranking.spearman is None else round(ranking.spearman, 4))
    note = next(n for n in res.notes if n.startswith("prune: drop1 of"))
    assert f"removes blocks {p.removed} of 4 (kld ranking on calibration_text.txt" in note
    md = (tmp_path / "out" / "report" / "report.en.md").read_text(encoding="utf-8")
    assert "KLD ranking on calibration_text.txt, 1 × 64 tokens" in md
    assert s["smol-drop1-Q4_0"].kld_mean is not None
