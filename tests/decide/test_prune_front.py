"""Pruned and quantized builds on one size-against-KLD front, and the sentence that says whether
pruning bought anything (decide/prune_front.py); the chosen build's pruning in deploy.yaml."""

from __future__ import annotations

from edgepick.decide.prune_front import prune_front
from edgepick.records.decision import CandidateSummary
from edgepick.records.deploy import DeployConfig, DeployModel
from edgepick.records.prune import PruneFacts

MIB = 2**20
CUT = PruneFacts(removed=[14, 17], blocks_before=30, ranking="kld",
                 ranked_on="calibration_text.txt, 4 × 256 tokens (1020 scored)", spearman=0.77)


def _s(name: str, mib: float, kld: float | None, pruned: PruneFacts | None = None):
    return CandidateSummary(candidate=name, model=f"/nowhere/{name}.gguf",
                            weights_bytes=int(mib * MIB), kld_mean=kld, pruned=pruned)


def test_no_pruned_candidate_no_section():
    assert prune_front([_s("Q8_0", 138, 0.007), _s("Q4_0", 87.5, 0.5)]) is None


def test_a_dominated_cut_is_said_with_what_beats_it():
    f = prune_front([_s("Q8_0", 138.1, 0.007), _s("Q4_K_M", 100.6, 0.107),
                     _s("Q8_0-drop2", 130.9, 0.259, CUT)])
    assert f.verdict == "dominated"
    by = {p.candidate: p for p in f.points}
    assert not by["Q8_0-drop2"].on_front and by["Q8_0-drop2"].dominated_by == "Q4_K_M"
    assert by["Q8_0"].on_front and by["Q4_K_M"].on_front
    assert [p.candidate for p in f.points] == ["Q4_K_M", "Q8_0-drop2", "Q8_0"]  # by size
    assert f.words["en"].startswith("Pruning bought nothing quantization did not")
    assert "Q8_0-drop2 (KLD 0.259, 130.9 MiB)" in f.words["en"]
    assert "Q4_K_M (KLD 0.107, 100.6 MiB)" in f.words["en"]
    assert "剪枝没有带来" in f.words["zh"]


def test_a_cut_below_every_type_is_on_the_front():
    f = prune_front([_s("Q4_0", 87.5, 0.515), _s("Q4_0-drop2", 83.7, 0.716, CUT)])
    assert f.verdict == "on_front" and all(p.on_front for p in f.points)
    assert "Q4_0-drop2 (KLD 0.716, 83.7 MiB) on the front of the 2 builds measured" \
        in f.words["en"]


def test_an_unmeasured_cut_is_undetermined_not_dominated():
    f = prune_front([_s("Q4_0", 87.5, 0.515), _s("Q4_0-drop2", 83.7, None, CUT)])
    assert f.verdict == "unmeasured" and "cannot say" in f.words["en"]
    cut = next(p for p in f.points if p.pruned)
    assert cut.kld_mean is None and not cut.on_front and cut.dominated_by is None


def test_deploy_yaml_carries_the_pruning_and_says_nothing_without(tmp_path):
    base = {"scenario": "realtime_chat", "status": "provisional",
            "model": {"name": "m", "path": "/m.gguf", "sha256": "0" * 64}}
    plain = DeployConfig.model_validate(base)
    text = plain.dump(tmp_path / "plain.yaml").read_text()
    assert "pruned" not in text
    cut = plain.model_copy(update={"model": DeployModel(name="m", path="/m.gguf",
                                                        sha256="0" * 64, pruned=CUT)})
    again = DeployConfig.load(cut.dump(tmp_path / "cut.yaml"))
    assert again.model.pruned == CUT
