"""Fidelity treats speculative decoding as a setting that keeps the distribution: a candidate
on the engine that speculates (which gives no logits) is scored from its file's logits on the
in-process engine, and against the same file it agrees everywhere."""

from __future__ import annotations

from edgepick.evaluate.fidelity import bundled_text, fidelity
from edgepick.inputs import resolve_ref
from edgepick.records.candidate import RuntimeSettings


def test_a_speculating_candidate_is_scored_on_its_files_own_logits(tmp_path):
    ref = resolve_ref("tiny")
    spec = ref.model_copy(update={"backend": "llama_server"})
    got = fidelity(ref, spec, bundled_text(), ctx=128, threads=1, max_chunks=1,
                   cache_dir=tmp_path, runtime=RuntimeSettings(
                       threads=1, speculative={"type": "ngram-mod"}))
    assert got.same_top1 == 1.0 and got.first_divergence_share == 1.0
