"""The farm runs the stages the local executor runs (plan/stages.py STAGES): a plan with a
`convert:` section through the local executor and through `--executor ray` stores the same
conversion, bench, eval and fidelity rows, so the converted candidate is measured either way."""

from __future__ import annotations

import pytest
from parts import need_module

from ray_head import ray_head  # noqa: E402, I001  (first: it keeps Ray on loopback)

need_module("ray")
need_module("onnxruntime_genai")

from edgepick.cluster.fleet import JOB_STAGES  # noqa: E402
from edgepick.convert.recipe import RECORD_KIND  # noqa: E402
from edgepick.plan.stages import ON_DRIVER, STAGES  # noqa: E402
from edgepick.store import ResultStore  # noqa: E402

PLAN = """
name: converted
device: raspberry-pi-5
output: out
candidates:
  - model: tiny
    label: tiny-f16
convert:
  - source: tiny
    engine: onnxruntime-genai
    block_sizes: [32]
    algo: default
    label: tiny
runtime: {threads: 1, n_ctx: 256}
bench: {prompt_lengths: [16], gen_tokens: 4, warmup: 0, repeats: 1, sustain_s: 0}
eval:
  data: demo
  reference: tiny
  limit: 2
  max_tokens: {classification: 6, extraction: 8, qa: 6, math: 6, summary: 8, generation: 8}
fidelity: {ctx: 64, max_chunks: 1}
report: {enabled: false}
scenario: {name: realtime_chat}
"""


def test_every_stage_runs_on_the_farm_either_on_the_driver_or_as_jobs():
    names = [name for name, _, _ in STAGES]
    assert ON_DRIVER | set(JOB_STAGES) == set(names) and not ON_DRIVER & set(JOB_STAGES)


def _stored(path) -> dict:
    with ResultStore(path) as store:
        return {kind: {k for k, _ in store.items(kind)}
                for kind in (RECORD_KIND, "bench", "eval_output", "eval", "fidelity")}


def test_a_plan_with_convert_stores_the_same_rows_locally_and_on_the_farm(tmp_path):
    from edgepick.cluster.fleet import run_fleet
    from edgepick.plan.loader import load_plan
    from edgepick.plan.runner import run_plan

    stores, summaries = {}, {}
    with ray_head("raspberry-pi-5"):
        for executor in ("local", "ray"):
            d = tmp_path / executor
            d.mkdir()
            (d / "plan.yaml").write_text(PLAN, encoding="utf-8")
            lp = load_plan(d / "plan.yaml")
            res = run_plan(lp) if executor == "local" else run_fleet(lp, "ray")
            stores[executor] = _stored(d / "out" / "results.sqlite")
            summaries[executor] = {s.candidate: s.backend for s in res.summaries}
    local, farm = stores["local"], stores["ray"]
    assert local[RECORD_KIND] and local == farm
    assert summaries["local"] == summaries["ray"]
    assert "onnxruntime_genai" in summaries["ray"].values()
