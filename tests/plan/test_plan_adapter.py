"""A candidate with a LoRA adapter (issue 34 item 6): the plan's `adapter:` is checked against
the model at load, fit counts it, bench, eval and fidelity load it, its content enters the
stored keys, and the decision and deploy.yaml carry it. A wrong file or an engine that does not
load adapters is refused in one line naming the plan's field."""

from __future__ import annotations

import shutil

import pytest

from edgepick.errors import InputError
from edgepick.plan.loader import load_plan
from edgepick.plan.runner import plan_candidates
from lora_synth import write_lora

PLAN = """
name: lora
device: raspberry-pi-5
output: out
candidates:
  - model: tiny
    label: base
  - model: tiny
    label: tuned
    adapter: tuned.gguf
    adapter_scale: 0.8
    reference: tiny
runtime: {threads: 1, n_ctx: 256}
bench: {prompt_lengths: [32], gen_tokens: 8, warmup: 0, repeats: 1, quiet_wait_s: 0}
eval:
  data: demo
  reference: tiny
  limit: 3
  max_tokens: {classification: 8, extraction: 16, qa: 8, math: 8, summary: 16, generation: 16}
fidelity: {ctx: 128, max_chunks: 1}
scenario:
  name: realtime_chat
  overrides:
    constraints: {ttft_p50_ms_max: 60000, ttft_p99_ms_max: 60000, decode_tps_min: 0.1,
                  unacceptable_rate_max: 1.0}
report: {lang: en}
"""


@pytest.fixture(scope="module")
def adapter(tiny_model, tmp_path_factory):
    """Written once (reading the model's GGUF takes seconds); each test gets its own copy."""
    return write_lora(tiny_model, tmp_path_factory.mktemp("lora") / "tuned.gguf", rank=16,
                      blocks=2, scale_b=2.0)


@pytest.fixture
def plan_dir(tmp_path, adapter):
    shutil.copyfile(adapter, tmp_path / "tuned.gguf")
    (tmp_path / "plan.yaml").write_text(PLAN)
    return tmp_path


def test_the_adapter_is_checked_at_load_and_carried_by_the_candidate(plan_dir):
    from edgepick.store.identity import file_sha256

    base, tuned = plan_candidates(load_plan(plan_dir / "plan.yaml"))
    assert base.settings is None and tuned.settings.adapter.scale == 0.8
    assert tuned.settings.adapter.sha256 == file_sha256(str(plan_dir / "tuned.gguf"))
    assert tuned.settings.key_dict()["adapter"] == {"sha256": tuned.settings.adapter.sha256,
                                                    "scale": 0.8}  # content, not path


@pytest.mark.parametrize("change, says", [
    ("adapter: tuned.gguf", "adapter: plan.yaml"),  # not an adapter at all
    ("    adapter_scale: 0.8\n", "    adapter_scale: 0.8\n    backend: openai_http\n"),
])
def test_a_wrong_adapter_or_an_engine_without_adapters_is_refused_in_one_line(
        plan_dir, tiny_model, change, says):
    text = PLAN.replace(change, says)
    if "openai_http" in says:
        text = text.replace("  - model: tiny\n    label: tuned",
                            "  - model: http://127.0.0.1:9/v1#m\n    label: tuned")
        text = text.replace("    reference: tiny\n", "", 1)
    (plan_dir / "plan.yaml").write_text(text)
    with pytest.raises(InputError) as exc:
        plan_candidates(load_plan(plan_dir / "plan.yaml"))
    assert exc.value.field == "candidates.1.adapter" and "\n" not in str(exc.value)


def test_a_run_measures_the_adapter_and_deploys_it(plan_dir):
    from edgepick.plan.runner import run_plan

    res = run_plan(load_plan(plan_dir / "plan.yaml"))
    s = {x.candidate: x for x in res.summaries}
    assert set(s) == {"base", "tuned"}
    for name in s:  # both measured, apart
        assert s[name].ttft_p50_ms and s[name].tasks, name
    assert s["tuned"].settings["adapter"]["scale"] == 0.8 and "adapter" not in s["base"].settings
    # fidelity against the plain model: the adapter moved the logits
    assert s["tuned"].kld_mean is not None and s["tuned"].kld_mean > 1e-4
    fit = s["tuned"].predicted_peak_bytes - s["base"].predicted_peak_bytes
    assert fit > 0  # fit counted the adapter's buffer
