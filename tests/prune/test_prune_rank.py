"""Block ranking on calibration text: influence from hidden states, the KLD of each removal, the
rank correlation between them, both stored; `prune build --drop N` follows the stored ranking.

A 4-block cut of SmolLM2 (made with the builder itself) and 2 chunks of 128 tokens keep it fast.
"""

from __future__ import annotations

import json
import math

import pytest

from edgepick.evaluate.fidelity import bundled_text
from edgepick.prune import rank as rank_mod
from edgepick.prune.build import build, provenance
from edgepick.prune.rank import rank_blocks, ranks, removal_kld, spearman, stored_ranking
from edgepick.store.results import ResultStore

OPTS = {"ctx": 128, "chunks": 2}


@pytest.fixture(scope="module")
def four_blocks(smollm2_f16, tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("rank") / "smol4.gguf"
    build(smollm2_f16, path, list(range(4, 30)))
    return str(path)


@pytest.fixture(scope="module")
def store_file(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("rank-store") / "results.sqlite")


@pytest.fixture(scope="module")
def ranking(four_blocks, store_file):
    return rank_blocks(four_blocks, str(bundled_text("calibration")),
                       store=ResultStore(store_file), **OPTS)


def test_both_signals_cover_every_block(ranking):
    assert [s.block for s in ranking.blocks] == [0, 1, 2, 3]
    assert sorted(ranking.by_kld) == sorted(ranking.by_influence) == [0, 1, 2, 3]
    for s in ranking.blocks:
        assert 0.0 < s.influence < 2.0 and s.kld_mean > 0.0 and 0.0 <= s.same_top1 <= 1.0
    klds = [ranking.blocks[b].kld_mean for b in ranking.by_kld]
    assert klds == sorted(klds)  # least important (smallest KLD) first
    assert ranking.spearman is None or -1.0 <= ranking.spearman <= 1.0
    assert ranking.n_tokens == 2 * 127  # BOS left out of each chunk


def test_a_block_kld_is_the_fidelity_of_the_file_without_it(ranking, four_blocks, tmp_path):
    b = ranking.by_kld[-1]
    m = removal_kld(four_blocks, [b], str(bundled_text("calibration")), threads=2, work=tmp_path,
                    **{"ctx": OPTS["ctx"], "chunks": OPTS["chunks"]})
    assert m["kld_mean"] == pytest.approx(ranking.blocks[b].kld_mean, rel=1e-6)


def test_a_rerun_measures_nothing(ranking, four_blocks, store_file, monkeypatch):
    def fail(*a, **k):
        raise AssertionError("measured again")

    monkeypatch.setattr(rank_mod, "block_influence", fail)
    monkeypatch.setattr(rank_mod, "removal_kld", fail)
    again = rank_blocks(four_blocks, str(bundled_text("calibration")),
                        store=ResultStore(store_file), **OPTS)
    assert again == ranking
    found = stored_ranking(ResultStore(store_file), ranking.source_sha256)
    assert found is not None and found.key == ranking.key


def test_build_drop_follows_the_stored_ranking(cli, ranking, four_blocks, store_file, tmp_path):
    out = tmp_path / "dropped.gguf"
    res = cli("prune", "build", "-m", four_blocks, "--drop", "2", "--store", store_file,
              "--out", str(out), "--json")
    assert res.returncode == 0, res.stderr
    rec = json.loads(res.stdout)
    assert rec["removed"] == sorted(ranking.by_kld[:2])
    prov = provenance(out)
    assert prov["removed"] == sorted(ranking.by_kld[:2])
    assert prov["ranking"] == f"kld ranking {ranking.key}"


def test_drop_without_a_ranking_is_one_line(cli, smollm2_q4_1, tmp_path):
    res = cli("prune", "build", "-m", smollm2_q4_1, "--drop", "2", "--store",
              str(tmp_path / "empty.sqlite"), "--out", str(tmp_path / "x.gguf"))
    assert res.returncode != 0 and "no stored block ranking" in res.stderr
    assert not (tmp_path / "x.gguf").exists()


def test_spearman_and_ties():
    assert list(ranks([3.0, 1.0, 2.0, 1.0])) == [4.0, 1.5, 3.0, 1.5]
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert spearman([1, 2], [1, 2]) is None  # too few to rank
    assert spearman([1, 1, 1], [1, 2, 3]) is None  # no spread: undetermined
    rho = spearman([1, 2, 3, 4, 5], [2, 1, 4, 3, 5])
    assert rho == pytest.approx(1 - 6 * 4 / (5 * 24)) and not math.isnan(rho)
