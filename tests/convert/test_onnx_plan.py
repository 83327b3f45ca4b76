"""A plan with one model on two engines: the convert: section's block-size sweep runs through
bench, eval and fidelity, and the report compares the engines and names the chosen one."""

from __future__ import annotations

from pathlib import Path

import pytest
from parts import need_module

need_module("onnxruntime_genai")

from edgepick.plan.loader import load_plan  # noqa: E402
from edgepick.plan.runner import run_plan  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_one_model_on_two_engines(tmp_path):
    lp = load_plan(EXAMPLES / "tiny_engines.yaml")
    lp.plan.output = str(tmp_path / "run")
    res = run_plan(lp)
    s = {x.candidate: x for x in res.summaries}
    assert set(s) == {"tiny-llama.cpp-f16", "tiny-og-int4-default-b32",
                      "tiny-og-int4-default-b128"}
    for name in ("tiny-og-int4-default-b32", "tiny-og-int4-default-b128"):
        og = s[name]
        assert og.backend == "onnxruntime_genai" and og.quant == "INT4"
        # measured like any candidate: speed, memory, quality, fidelity to the F16 source
        assert og.decode_tps and og.prefill_tps and og.peak_rss_bytes
        assert og.tasks and og.kld_mean is not None and og.kld_mean > 0
    assert s["tiny-llama.cpp-f16"].backend == "llama_cpp"
    assert any("block size 128 with the default" in n for n in res.notes)
    md = (tmp_path / "run" / "report" / "report.en.md").read_text(encoding="utf-8")
    assert "## Engine comparison" in md and "| onnxruntime_genai |" in md and "| llama_cpp |" in md
    assert "5 steps" in md  # the conversion's cost sits beside its speed and quality
    zh = (tmp_path / "run" / "report" / "report.zh.html").read_text(encoding="utf-8")
    assert "推理引擎对比" in zh
    if res.decision.recommendation:  # the decision names the engine it runs on
        chosen = s[res.decision.recommendation].backend
        assert f"Engine of the recommendation: **{chosen}**" in md
        from edgepick.records.deploy import DeployConfig

        assert DeployConfig.load(res.deploy).model.backend == chosen
