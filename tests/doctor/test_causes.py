"""Each cause provoked on the bundled SmolLM2 and named first by doctor; where the fix is a
deploy.yaml edit, the edit is applied and the finding goes away (issue 36)."""

from __future__ import annotations

import pytest

from doctor_fixes import apply_fix


def _first(report):
    assert report.findings, [c.model_dump() for c in report.checks]
    return report.findings[0]


def test_q2k_build_is_quantization_bisected_to_a_tensor_class(doctor, broken, smollm2_f16):
    rep = doctor(broken["q2k"], symptom="garbled", reference=_ref(smollm2_f16))
    f = _first(rep)
    assert f.cause == "quantization"
    assert "tensor class" in f.detail
    assert any(e.command and "sensitivity" in e.command for e in f.evidence)
    assert f.fix.deploy_edit["model.path"]  # a build doctor verified against the reference
    assert rep.stopped == "quantization explains the symptom"
    # the fix applied: its build has no quantization finding (the reference found by doctor:
    # the bundled F16 of the same model)
    fixed = doctor(f.fix.deploy_edit["model.path"], symptom="garbled", checks=["quantization"])
    assert [c.status for c in fixed.checks] == ["clear"] and not fixed.findings


def test_q4_0_kv_cache_at_long_context(doctor, write_deploy, smollm2_q4_1):
    deploy = write_deploy(smollm2_q4_1, runtime={"kv_type": "q4_0", "n_ctx": 640},
                          context_tokens={"p50": 200, "p95": 480, "p99": 512})
    f = _first(doctor(deploy, symptom="garbled"))
    assert f.cause == "kv_cache_type" and f.detail == "q4_0"
    apply_fix(deploy, f.fix.deploy_edit)
    assert not doctor(deploy, symptom="garbled", checks=["kv_cache_type"]).findings


def test_temperature_2_without_repeat_penalty_is_sampling(doctor, write_deploy, smollm2_q4_1):
    deploy = write_deploy(smollm2_q4_1, sampling={"temperature": 2.0})
    f = _first(doctor(deploy, symptom="garbled"))
    assert f.cause == "sampling" and f.confidence >= 0.9
    assert f.fix.deploy_edit == {"sampling.temperature": 0.7, "sampling.repeat_penalty": 1.1}
    apply_fix(deploy, f.fix.deploy_edit)
    assert not doctor(deploy, symptom="garbled", checks=["sampling"]).findings


def _agrees(f) -> None:
    """A finding at 0.85 or more is one whose measured fix made the answers sounder."""
    sound = next(e for e in f.evidence if e.what.startswith("sound answers"))
    assert sound.value < sound.baseline if f.confidence >= 0.85 else sound.value >= sound.baseline
    assert f"{sound.baseline}/{sound.unit.split()[-1]} sound answers" in f.fix.verified


def test_removed_chat_template(doctor, broken):
    f = _first(doctor(broken["no_template"], symptom="garbled"))
    assert f.cause == "chat_template" and f.detail == "missing"
    assert "falls back to ChatML" in f.summary
    _agrees(f)
    fixed = f.fix.deploy_edit["model.path"]  # the same weights with the family's template
    assert not doctor(fixed, symptom="garbled", checks=["chat_template"]).findings


def test_bundled_gemma_served_for_chat_is_chat_template(doctor):
    """The bundled Gemma-3-270M is the base model (general.name "Gemma 3 270m", no template):
    llama-server would prompt it in ChatML, whose markers it never saw, and it answers with them."""
    from edgepick.assets import bundled

    f = _first(doctor(str(bundled.gemma3_270m_q4_k_m()), symptom="garbled"))
    assert f.cause == "chat_template" and f.detail == "missing" and f.confidence >= 0.85
    assert "a base model" in f.summary and "ChatML" in f.summary
    leaks = next(e for e in f.evidence if e.what.startswith("answers spilling"))
    assert leaks.value > leaks.baseline
    _agrees(f)
    fixed = f.fix.deploy_edit["model.path"]
    assert not doctor(fixed, symptom="garbled", checks=["chat_template"]).findings


def test_prompts_beyond_n_ctx(doctor, write_deploy, smollm2_q4_1, tmp_path):
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("Summarise: " + "the quick brown fox jumps over the lazy dog. " * 40
                       + "\nHello there.\n")
    deploy = write_deploy(smollm2_q4_1, runtime={"n_ctx": 256})
    f = _first(doctor(deploy, symptom="context-overflow", prompts=str(prompts)))
    assert f.cause == "context_overflow"
    assert f.evidence[0].value == 1  # one prompt of two is over
    apply_fix(deploy, f.fix.deploy_edit)
    assert not doctor(deploy, symptom="context-overflow", prompts=str(prompts),
                      checks=["context_overflow"]).findings


def test_cpu_hog_beside_the_measurement(doctor, tiny_model, hog):
    # the cause is the hogs, not the model: the 2-block cut decodes its window's tokens in
    # moments even beside two busy processes, where SmolLM2's took seconds a token
    f = _first(doctor(tiny_model, symptom="slow", checks=["host_load"]))
    assert f.cause == "host_load"
    hog_pids = {str(p.pid) for p in hog}
    assert hog_pids & set(f.fix.command.split())  # the fix names the hog to stop


def test_budget_below_the_need(doctor, write_deploy, smollm2_q4_1):
    deploy = write_deploy(smollm2_q4_1, runtime={"n_ctx": 8192})
    budget = 250 * 2**20
    f = _first(doctor(deploy, symptom="oom", budget_bytes=budget))
    assert f.cause == "memory_budget" and f.detail == "inference"
    assert f.fix.deploy_edit["runtime.n_ctx"] < 8192
    apply_fix(deploy, f.fix.deploy_edit)
    assert not doctor(deploy, symptom="oom", budget_bytes=budget,
                      checks=["memory_budget"]).findings


def test_truncated_file(doctor, broken):
    rep = doctor(broken["truncated"])
    f = _first(rep)
    assert f.cause == "file_integrity" and "truncated" in f.summary
    assert rep.stopped and len(rep.checks) == 1  # nothing else can run on it


def test_leaking_engine(doctor, tiny_model):
    rep = doctor(tiny_model, symptom="memory-growth",
                 sustain_worker="leaky_engine:measure_sustain_leaky_short")
    assert _first(rep).cause == "memory_growth"


def test_tool_call_with_wrong_argument_types(doctor, tiny_model, tmp_path):
    import json

    tools = [{"type": "function", "function": {"name": "set_timer", "parameters": {
        "type": "object", "properties": {"minutes": {"type": "integer"},
                                         "label": {"type": "string"}},
        "required": ["minutes"], "additionalProperties": False}}}]
    line = {"messages": [{"role": "user", "content": "Set a timer for ten minutes."}],
            "tools": tools, "reply": {"name": "set_timer",
                                      "arguments": {"minutes": "ten", "label": 5}}}
    prompts = tmp_path / "calls.jsonl"
    prompts.write_text(json.dumps(line) + "\n")
    f = _first(doctor(tiny_model, symptom="tool-calls", prompts=str(prompts)))
    assert f.cause == "tool_schema"
    assert "minutes" in str(f.evidence)


def _ref(path: str):
    from edgepick.records.model_ref import ModelRef

    return ModelRef.file(path)


def test_a_budget_below_the_weights_still_gets_a_command(doctor, write_deploy, smollm2_q4_1):
    """At 150 MiB no shorter context saves the Q4_1 build: a lower-bit build, at a shorter
    context when that is what fits, with the command that makes it; when nothing of this model
    fits, the command that lists its lower-bit builds against the budget, and how far the
    smallest is (as 220 MiB gets a measured fix)."""
    deploy = write_deploy(smollm2_q4_1, runtime={"n_ctx": 2048})
    f = _first(doctor(deploy, symptom="oom", budget_bytes=150 * 2**20, checks=["memory_budget"]))
    assert f.cause == "memory_budget"
    assert f.fix.command, f.fix  # a fix to run, not only advice
    assert f.fix.command.startswith(("llama-quantize", "edgepick fit")), f.fix.command
    assert not any(e.unit == "bytes" for e in f.evidence if e.baseline is not None)  # limits


LLAMA3 = ("{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m['role'] }}"
          "<|end_header_id|>\n\n{{ m['content'] }}<|eot_id|>{% endfor %}"
          "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n"
          "{% endif %}")


@pytest.mark.parametrize("family, marker", [("gemma", "<start_of_turn>"),
                                            ("llama3", "<|start_header_id|>")])
def test_a_template_of_another_family_is_chat_template(doctor, smollm2_q4_1, tmp_path, family,
                                                       marker):
    """SmolLM2 given Gemma's (or Llama 3's) template renders, but writes turn markers that
    SmolLM2's vocabulary spells in pieces: the model never saw those turns. Its own family's
    (the bundled Q4_1's) template is the measured fix."""
    import gguf

    from edgepick.doctor.served_template import GEMMA
    from edgepick.models.gguf_rewrite import rewrite_gguf

    wrong = tmp_path / f"smollm2.{family}-template.gguf"
    rewrite_gguf(smollm2_q4_1, wrong, kv_overrides={"tokenizer.chat_template": (
        GEMMA if family == "gemma" else LLAMA3, gguf.GGUFValueType.STRING)})
    f = _first(doctor(str(wrong), symptom="garbled"))
    assert f.cause == "chat_template" and f.detail == "foreign"
    assert marker in f.summary and "family's template" in f.fix.text
    _agrees(f)
    fixed = f.fix.deploy_edit["model.path"]
    assert not doctor(fixed, symptom="garbled", checks=["chat_template"]).findings


def test_an_end_of_generation_token_of_ordinary_text_is_chat_template(doctor, smollm2_q4_1,
                                                                       tmp_path):
    """SmolLM2 whose EOS names ' the' stops each answer the first time it writes the word; the
    copy with the template's end of turn (<|im_end|>) as EOS answers on, and clears it."""
    import gguf

    from edgepick.models.gguf_rewrite import rewrite_gguf

    tokens = gguf.GGUFReader(smollm2_q4_1).fields["tokenizer.ggml.tokens"].contents()
    wrong = tmp_path / "smollm2.eos-the.gguf"
    rewrite_gguf(smollm2_q4_1, wrong, kv_overrides={"tokenizer.ggml.eos_token_id": (
        tokens.index("\u0120the"), gguf.GGUFValueType.UINT32)})
    f = _first(doctor(str(wrong), symptom="garbled"))
    assert f.cause == "chat_template" and f.detail == "stop_token" and f.confidence >= 0.9
    cut = next(e for e in f.evidence if e.what.startswith("answers stopped at it"))
    assert cut.value > 0 and f"{cut.value} of" in f.fix.verified
    fixed = f.fix.deploy_edit["model.path"]
    assert not doctor(fixed, symptom="garbled", checks=["chat_template"]).findings
