"""Fit counts a speculative decoding draft: its weights, KV cache and compute buffer beside the
target's, without a second process baseline."""

from __future__ import annotations

from edgepick.assets.bundled import smollm2_q4_1
from edgepick.devices.catalog import catalog
from edgepick.fit import stage as fit
from edgepick.records.model_ref import ModelRef


def test_the_drafts_need_is_added_to_the_targets():
    path = str(smollm2_q4_1())
    ref = ModelRef.file(path)
    dev = catalog()["raspberry-pi-5"]

    def estimate(draft):
        req = fit.FitRequest(targets=[fit.FitTarget(model=ref, file=path, draft=draft)],
                             ctxs=[1024], device=dev)
        (est,) = fit.run(req, None)
        return est

    plain, spec = estimate(None), estimate(path)
    assert "draft" not in plain.overhead_parts
    anon, file = fit.draft_need(fit.FitTarget(model=ref, draft=path), 1024, fit.FitRequest(
        targets=[fit.FitTarget(model=ref)], ctxs=[1024], device=dev))
    assert (spec.overhead_parts["draft"], spec.overhead_parts["draft_file"]) == (anon, file)
    assert anon > plain.kv_cache_bytes  # its own KV cache and compute buffer
    assert file > 0.5 * plain.weights_bytes  # its weights a token reads, as the target's
    # the same model again, less the process's fixed baseline (counted once)
    alone = plain.total_bytes - plain.overhead_parts["runtime"]
    assert spec.total_bytes - plain.total_bytes == anon + file
    assert 0.8 * alone < anon + file <= alone
