"""Per-unit sensitivity and mixed-precision recipes on the tiny 2-block model.

Small settings keep it fast: ctx 128, 2 chunks of the bundled calibration text.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgepick.models.gguf_info import gguf_spec

OPTS = {"ctx": 128, "chunks": 2}


@pytest.fixture(scope="module")
def text() -> str:
    from edgepick.evaluate.fidelity import bundled_text

    return str(bundled_text("calibration"))


@pytest.fixture(scope="module")
def store_file(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("sens") / "results.sqlite")


@pytest.fixture(scope="module")
def first_run(tiny_model, text, store_file):
    from edgepick.quantize.sensitivity import analyze
    from edgepick.store.results import ResultStore

    return analyze(tiny_model, low="Q4_0", high="Q8_0", text=text, by="class",
                   store=ResultStore(store_file), **OPTS)


def test_units_by_class_cover_the_tied_model(first_run, tiny_model):
    units = set(first_run.ranked_units())
    # tied embeddings: no output.weight, token_embd is the output layer
    assert units == {"attn_q", "attn_k", "attn_v", "attn_output", "ffn", "token_embd"}
    assert gguf_spec(tiny_model).tied_embeddings


def test_units_by_block_include_the_non_block_tensors(tiny_model):
    from edgepick.quantize.units import model_units

    units = model_units(gguf_spec(tiny_model), "block")
    assert [u.name for u in units] == ["blk.0", "blk.1", "token_embd"]
    assert all(t.startswith("blk.0.") for t in units[0].tensors)


def test_units_with_an_untied_output(smollm2_q4_1):
    from edgepick.models.spec import load_spec  # header only: cheap
    from edgepick.quantize.units import model_units
    from edgepick.records.model import TensorInfo

    spec = load_spec(smollm2_q4_1)
    emb = next(t for t in spec.tensors if t.name == "token_embd.weight")
    spec.tensors.append(TensorInfo(name="output.weight", type=emb.type, shape=emb.shape,
                                   n_elements=emb.n_elements, n_bytes=emb.n_bytes))
    names = [u.name for u in model_units(spec, "class")]
    assert "output" in names and "token_embd" in names


def test_ranking_is_sorted_and_measured(first_run):
    e = first_run.entries
    assert [x.kld_mean for x in e] == sorted((x.kld_mean for x in e), reverse=True)
    assert all(x.kld_mean > first_run.baseline_kld_mean for x in e)
    assert all(x.kld_p99 >= 0 and x.unit_bytes_low < x.unit_bytes_high for x in e)
    assert all(x.size_bytes < first_run.baseline_size_bytes for x in e)


def test_two_runs_give_the_same_top5(first_run, tiny_model, text, tmp_path):
    """A second, independent run (empty store: everything recomputed) ranks the same way."""
    from edgepick.quantize.sensitivity import analyze
    from edgepick.store.results import ResultStore

    second = analyze(tiny_model, low="Q4_0", high="Q8_0", text=text, by="class",
                     store=ResultStore(tmp_path / "fresh.sqlite"), **OPTS)
    assert not any(e.cached for e in second.entries)
    assert second.ranked_units()[:5] == first_run.ranked_units()[:5]


def test_rerun_comes_from_the_store(first_run, tiny_model, text, store_file):
    from edgepick.quantize.sensitivity import analyze
    from edgepick.store.results import ResultStore

    again = analyze(tiny_model, low="Q4_0", high="Q8_0", text=text, by="class",
                    store=ResultStore(store_file), **OPTS)
    assert all(e.cached for e in again.entries)
    assert [(e.unit, e.kld_mean) for e in again.entries] == \
        [(e.unit, e.kld_mean) for e in first_run.entries]
    assert ResultStore(store_file).count("sensitivity") == len(first_run.entries) + 1


def test_sensitivity_cli_json(first_run, tiny_model, text, store_file, cli):
    r = cli("sensitivity", "-m", tiny_model, "--by", "class", "--text", text, "--ctx", "128",
            "--chunks", "2", "--store", store_file, "--json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert [x["unit"] for x in rows] == first_run.ranked_units()
    assert all({"unit", "kld_mean", "kld_p99", "size_bytes"} <= set(x) for x in rows)


def test_greedy_choice_respects_the_budget(first_run):
    from edgepick.quantize.recipe import choose

    all_low = first_run.baseline_size_bytes - sum(e.extra_bytes for e in first_run.entries)
    units, size = choose(first_run, all_low)
    assert size == all_low and all(u.type == "Q4_0" for u in units)
    units, size = choose(first_run, first_run.baseline_size_bytes)
    assert all(u.type == "Q8_0" for u in units)
    cheapest = min(first_run.entries, key=lambda e: e.extra_bytes)
    units, size = choose(first_run, all_low + cheapest.extra_bytes)
    assert size <= all_low + cheapest.extra_bytes
    assert sum(u.type == "Q8_0" for u in units) >= 1


def test_auto_recipe_is_reproducible(first_run, tiny_model, text, store_file, tmp_path, cli):
    from edgepick.quantize.recipe import load_recipe

    budget = str(first_run.baseline_size_bytes - 4 * 2**20)  # bytes: forces a real choice
    r = cli("quantize", "-m", tiny_model, "--recipe", "auto", "--by", "class", "--budget",
            budget, "--text", text, "--ctx", "128", "--chunks", "2", "--store", store_file,
            "--out", str(tmp_path / "a"), "--json")
    assert r.returncode == 0, r.stderr
    built = json.loads(r.stdout)
    assert built["size_bytes"] <= int(budget) and not built["over_budget"]
    recipe_file = built["recipe"]
    assert Path(recipe_file).is_file()
    recipe = load_recipe(recipe_file)
    assert recipe.overrides and recipe.low == "Q4_0" and recipe.high == "Q8_0"
    spec = gguf_spec(built["path"])
    types = {t.name: t.type for t in spec.tensors}
    high_units = {u.unit for u in recipe.units if u.type == "Q8_0"}
    from edgepick.quantize.units import model_units

    for unit in model_units(spec, "class"):
        want = "Q8_0" if unit.name in high_units else "Q4_0"
        assert {types[t] for t in unit.tensors} == {want}, unit.name

    r2 = cli("quantize", "-m", tiny_model, "--recipe", recipe_file, "--out", str(tmp_path / "b"),
             "--json")
    assert r2.returncode == 0, r2.stderr
    again = json.loads(r2.stdout)
    assert again["sha256"] == built["sha256"]
    assert Path(again["path"]).name == Path(built["path"]).name


def test_recipe_for_another_source_is_refused(first_run, tiny_model, tmp_path, cli):
    from edgepick.quantize.recipe import auto_recipe, save_recipe

    rec = auto_recipe(tiny_model, first_run, "x", first_run.baseline_size_bytes)
    rec.source_sha256 = "0" * 64
    path = tmp_path / "r.recipe.yaml"
    save_recipe(rec, path)
    r = cli("quantize", "-m", tiny_model, "--recipe", str(path), "--out", str(tmp_path))
    assert r.returncode == 2
    assert "not the source this recipe was made for" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_assembled_unit_file_equals_llama_quantize_override(tiny_model, tmp_path):
    """The sensitivity candidates are assembled from two whole-file builds; the bytes must be
    exactly what llama-quantize writes when asked for the override directly."""
    from edgepick.models.gguf_fast_reader import fast_reader as reader  # tensors as gguf's own
    from edgepick.quantize.ladder import build
    from edgepick.quantize.sensitivity import assemble
    from edgepick.quantize.units import find_unit, model_units
    from edgepick.records.quantize import TensorOverride

    unit = find_unit(model_units(gguf_spec(tiny_model), "class"), "attn_v")
    hi = build(tiny_model, tmp_path / "hi.gguf", "Q8_0", pure=True)
    lo = build(tiny_model, tmp_path / "lo.gguf", "Q4_0", pure=True)
    direct = build(tiny_model, tmp_path / "direct.gguf", "Q8_0", pure=True,
                   overrides=[TensorOverride(pattern=unit.pattern, type="Q4_0")])
    made = assemble(reader(hi.path), reader(lo.path), unit, tmp_path / "made.gguf")
    a = {t.name: t for t in reader(direct.path).tensors}
    b = {t.name: t for t in reader(str(made)).tensors}
    assert a.keys() == b.keys()
    for name in a:
        assert a[name].tensor_type == b[name].tensor_type, name
        assert bytes(a[name].data) == bytes(b[name].data), name
    assert {a[n].tensor_type.name for n in unit.tensors} == {"Q4_0"}
