"""Runtime settings as a candidate axis (issue 34 items 1 and 4): a plan listing alternatives
gets one candidate per combination, named by its settings; a large grid is refused without
--yes or a cap; an axis an engine does not apply is refused in one line; a combination the
engine cannot run is kept, unmeasured, with its reason; and a run on the tiny model measures
each combination, decides between them and deploys the chosen settings."""

from __future__ import annotations

import pytest

from edgepick.errors import EdgepickError, InputError
from edgepick.plan.loader import load_plan
from edgepick.plan.runner import plan_candidates

PLAN = """
name: axes
device: raspberry-pi-5
output: out
candidates:
  - model: tiny
    label: tiny-f16
runtime: {threads: 1, n_ctx: 256, kv_type: [f16, q8_0, q4_0], flash_attn: [true, false]}
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
    context_tokens: {p50: 32, p95: 64, p99: 128}
report: {lang: en}
"""


def _plan(tmp_path, text: str = PLAN):
    p = tmp_path / "plan.yaml"
    p.write_text(text)
    return load_plan(p)


def test_each_combination_is_a_candidate_named_by_its_settings(tmp_path):
    lp = _plan(tmp_path)
    assert lp.plan.runtime.kv_type == "f16" and lp.plan.runtime.flash_attn  # the base: firsts
    cands = plan_candidates(lp)
    assert [c.name for c in cands] == [
        "tiny-f16@kv=f16,fa=on", "tiny-f16@kv=f16,fa=off", "tiny-f16@kv=q8_0,fa=on",
        "tiny-f16@kv=q8_0,fa=off", "tiny-f16@kv=q4_0,fa=on", "tiny-f16@kv=q4_0,fa=off"]
    by = {c.name: c for c in cands}
    assert by["tiny-f16@kv=q4_0,fa=on"].settings.kv_type == "q4_0"
    assert by["tiny-f16@kv=q4_0,fa=on"].settings.threads == 1  # the rest from the base
    # llama.cpp refuses a quantized V cache without flash attention (llama-context.cpp):
    # kept, unmeasured, with the reason
    assert "flash attention" in by["tiny-f16@kv=q8_0,fa=off"].skipped
    assert not by["tiny-f16@kv=f16,fa=off"].skipped


def test_a_plan_without_lists_keeps_its_candidates_and_keys(tmp_path):
    lp = _plan(tmp_path, PLAN.replace("kv_type: [f16, q8_0, q4_0], flash_attn: [true, false]",
                                      "kv_type: q8_0"))
    cands = plan_candidates(lp)
    assert [c.name for c in cands] == ["tiny-f16"] and cands[0].settings is None
    assert lp.plan.runtime_axes is None
    assert "variant" not in lp.plan.runtime.model_dump()  # stored keys unchanged


def test_a_large_grid_is_refused_without_yes_or_a_cap(tmp_path):
    big = PLAN.replace("flash_attn: [true, false]",
                       "flash_attn: [true, false], threads: [1, 2], n_ubatch: [128, 512]")
    with pytest.raises(EdgepickError, match=r"24 settings combinations.*--yes"):
        plan_candidates(_plan(tmp_path, big))
    lp = _plan(tmp_path, big)
    lp.yes = True
    assert len(plan_candidates(lp)) == 24
    capped = big.replace("n_ubatch: [128, 512]", "n_ubatch: [128, 512], max_combinations: 24")
    assert len(plan_candidates(_plan(tmp_path, capped))) == 24


def test_run_refuses_a_large_grid_in_one_line_before_any_work(cli, tmp_path):
    big = PLAN.replace("flash_attn: [true, false]",
                       "flash_attn: [true, false], threads: [1, 2], n_ubatch: [128, 512]")
    (tmp_path / "plan.yaml").write_text(big)
    out = cli("run", str(tmp_path / "plan.yaml"))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "24 settings combinations per model (24 candidates)" in out.stderr
    assert "--yes" in out.stderr
    assert not (tmp_path / "out").exists()  # no store, no run recorded


def test_an_axis_the_engine_does_not_apply_is_refused_in_one_line(tmp_path):
    text = PLAN.replace("  - model: tiny\n    label: tiny-f16",
                        "  - model: http://127.0.0.1:9/v1#m")
    with pytest.raises(EdgepickError) as exc:
        plan_candidates(_plan(tmp_path, text))
    msg = str(exc.value)
    assert "openai_http engine does not apply kv_type, flash_attn" in msg and "\n" not in msg


def test_a_bad_value_in_a_list_names_the_runtime_line(tmp_path):
    with pytest.raises(InputError) as exc:
        _plan(tmp_path, PLAN.replace("threads: 1,", "threads: [1, x],"))
    assert exc.value.line == 8 and "runtime.threads[1]" in str(exc.value)


def test_the_tiny_model_under_six_settings_measured_decided_and_deployed(tmp_path):
    from edgepick.plan.runner import run_plan
    from edgepick.records.deploy import DeployConfig

    res = run_plan(_plan(tmp_path))
    s = {x.candidate: x for x in res.summaries}
    assert len(s) == 6
    runnable = [n for n in s if not ("fa=off" in n and "kv=f16" not in n)]
    for name in runnable:  # each measured under its own settings
        assert s[name].ttft_p50_ms and s[name].tasks and s[name].kld_mean is not None, name
        assert s[name].settings["variant"] == name.split("@")[1]
    assert s["tiny-f16@kv=q8_0,fa=off"].skipped
    # against the f16-KV baseline of the same file, at the scenario's P95 and P99 context, a
    # q4_0 cache moves the logits most; the headline is the P99 context's
    q4, q8 = s["tiny-f16@kv=q4_0,fa=on"], s["tiny-f16@kv=q8_0,fa=on"]
    for ctx in (64, 128):
        assert q4.figures[f"kld_mean@ctx{ctx}"].value > q8.figures[f"kld_mean@ctx{ctx}"].value
        assert 0 <= q4.figures[f"first_divergence_share@ctx{ctx}"].value <= 1
    assert q4.kld_mean == q4.figures["kld_mean@ctx128"].value
    ranked = [r.candidate for r in res.decision.ranking]
    assert sorted(ranked) == sorted(s)
    rec = res.decision.recommendation
    assert rec in runnable
    cfg = DeployConfig.load(res.deploy)  # deploy.yaml carries the chosen settings
    assert cfg.model.name == rec and cfg.runtime.variant == rec.split("@")[1]
    assert (cfg.runtime.kv_type, cfg.runtime.flash_attn) == (s[rec].settings["kv_type"],
                                                             s[rec].settings["flash_attn"])
    md = (tmp_path / "out" / "report" / "report.en.md").read_text(encoding="utf-8")
    # seed 004 §5.4's table: one row per configuration, the unrunnable ones with their reason
    table = md.split("## Runtime settings of SmolLM2-tiny2.F16.gguf", 1)[1].split("\n## ")[0]
    rows = [r for r in table.splitlines() if r.startswith("| kv=")]
    assert len(rows) == 6 and any(r.startswith("| kv=q4_0,fa=off") and "flash attention" in r
                                  for r in rows)
    assert any(r.startswith(f"| {rec.split('@')[1]} ") and "| chosen |" in r for r in rows)
    assert all("64: " in r and "; 128: " in r for r in rows if "not measured" not in r)
