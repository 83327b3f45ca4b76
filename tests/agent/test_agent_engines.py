"""The agent and the tool prompt on real engines: the tiny model in process, a tools-aware chat
template, a real llama-server, and the `edgepick agent` / `edgepick eval -d demo-tools` commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgepick.agent import Agent, ToolSet
from edgepick.agent.model import BackendModel
from edgepick.toolcall.prompting import JSON_CALL_RULES, ToolPrompter
from edgepick.records.candidate import Candidate, RuntimeSettings
from edgepick.inputs import resolve_ref
from llama_server import llama_server

HERMES = (
    "{%- if tools %}<|im_start|>system\nYou may call functions.\n<tools>\n"
    "{%- for t in tools %}{{ t | tojson }}\n{% endfor %}</tools>\n"
    'Reply <tool_call>{"name": <name>, "arguments": <args>}</tool_call><|im_end|>\n{% endif %}'
    "{%- for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
ASK = [{"role": "user", "content": "Read notes.txt"}]


def cand(spec: str) -> Candidate:
    return Candidate(ref=resolve_ref(spec), settings=RuntimeSettings(n_ctx=1024))


@pytest.fixture(scope="module")
def tools_template_model(tiny_model, tmp_path_factory) -> str:
    """The tiny model with a Hermes-style chat template that reads `tools`."""
    import gguf

    from edgepick.models.gguf_rewrite import rewrite_gguf

    dst = tmp_path_factory.mktemp("tpl") / "tiny-tools.gguf"
    rewrite_gguf(tiny_model, dst, kv_overrides={
        "tokenizer.chat_template": (HERMES, gguf.GGUFValueType.STRING)})
    return str(dst)


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    (tmp_path / "notes.txt").write_text("Buy milk.")
    return tmp_path


def check_bounded(run, max_steps: int) -> None:
    assert run.status in ("answered", "step_limit", "retries_exhausted")
    assert 1 <= len(run.steps) <= max_steps
    assert all(s.proposal is not None and s.generate_s > 0 for s in run.steps)
    assert (run.answer is not None) == (run.status == "answered")


def test_a_template_without_tools_gets_the_json_call_format(tiny_model):
    p = ToolPrompter.for_model(tiny_model)
    tools = ToolSet.builtin("/tmp", ["read_file"]).schemas()
    msgs, chat = p.build(ASK, tools)
    assert p.mode == "json" and chat and JSON_CALL_RULES in msgs[0]["content"]
    assert '"name": "read_file"' in msgs[0]["content"] and msgs[-1] == ASK[0]


def test_a_template_that_takes_tools_renders_them_natively(tools_template_model, sandbox):
    p = ToolPrompter.for_model(tools_template_model)
    tools = ToolSet.builtin(sandbox, ["read_file"]).schemas()
    prompt, chat = p.build(ASK, tools)
    assert p.mode == "native" and not chat
    assert "<tools>" in prompt and '"read_file"' in prompt and JSON_CALL_RULES not in prompt
    assert prompt.endswith("<|im_start|>assistant\n")
    with BackendModel(cand(tools_template_model)) as m:
        run = Agent(m, ToolSet.builtin(sandbox), max_steps=2, max_tokens=24).run("Read notes.txt")
    assert run.mode == "native"
    check_bounded(run, 2)


def test_agent_in_process_on_the_tiny_model(tiny_model, sandbox):
    with BackendModel(cand(tiny_model)) as m:
        run = Agent(m, ToolSet.builtin(sandbox), max_steps=2, max_tokens=24).run("Read notes.txt")
    assert run.mode == "json"
    check_bounded(run, 2)


def test_agent_against_a_real_llama_server(tiny_model, sandbox, tmp_path):
    with llama_server(tiny_model, "tiny", tmp_path) as url:
        m = BackendModel(cand(url))
        try:
            run = Agent(m, ToolSet.builtin(sandbox), max_steps=2, max_tokens=24).run("hello")
        finally:
            m.close()
    assert run.mode == "json"  # SmolLM2's template takes no tools
    check_bounded(run, 2)


def test_agent_command_prints_every_step_as_json(cli, tmp_path, sandbox):
    spec = tmp_path / "tools.yaml"
    spec.write_text(f"sandbox: {sandbox}\ntools:\n  - {{name: read_file, builtin: read_file}}\n"
                    "  - {name: delete_file, builtin: delete_file}\n")
    r = cli("agent", "-m", "tiny", "--tools", str(spec), "-p", "Read notes.txt", "-p", "hi",
            "--max-steps", "2", "--max-tokens", "16", "--ctx", "1024", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["tool_format"] == "json" and len(out["runs"]) == 2
    assert out["summary"]["steps"] == sum(len(run["steps"]) for run in out["runs"])
    for run in out["runs"]:
        assert 1 <= len(run["steps"]) <= 2
        assert {"proposal", "validation", "repairs", "step_s"} <= set(run["steps"][0])
    assert (sandbox / "notes.txt").exists()


def test_agent_command_bad_tools_file_is_one_line(cli, tmp_path):
    spec = tmp_path / "tools.yaml"
    spec.write_text("tools:\n  - {name: x, builtin: teleport}\n")
    r = cli("agent", "-m", "tiny", "--tools", str(spec), "-p", "hi")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "tools.yaml" in r.stderr and "unknown builtin 'teleport'" in r.stderr


def test_the_cli_confirmation_prompt(monkeypatch):
    from click.testing import CliRunner

    from edgepick.cli.cmd_agent import _confirm

    runner = CliRunner()
    for typed, want in (("y\n", True), ("n\n", False), ("", False)):
        with runner.isolation(input=typed):
            assert _confirm(False)("delete_file", {"path": "a"}) is want
    assert _confirm(True)("delete_file", {"path": "a"}) is True


def test_eval_on_the_bundled_tool_set_reports_the_tool_metrics(cli, store_path):
    r = cli("eval", "-m", "tiny", "-r", "tiny", "-d", "demo-tools", "--limit", "1",
            "--store", store_path, "--json")
    assert r.returncode == 0, r.stderr
    task = json.loads(r.stdout)["candidates"][0]["per_task"]["tool_call"]
    assert task["n"] == 1 and "tool_choice_accuracy" in task["metrics"]
    assert task["metrics"]["tool_choice_accuracy_n"] == 1


def test_agent_command_keeps_a_capped_memory_across_requests(cli, tmp_path, sandbox):
    import sqlite3

    spec = tmp_path / "tools.yaml"
    spec.write_text(f"sandbox: {sandbox}\ntools:\n  - {{name: list_files, builtin: list_files}}\n")
    mem = tmp_path / "memory.sqlite"
    r = cli("agent", "-m", "tiny", "--tools", str(spec), "-p", "hello", "-p", "how are you",
            "-p", "tell me a story", "-p", "thanks", "--max-steps", "1",
            "--max-tokens", "8", "--ctx", "1024", "--memory", str(mem), "--memory-entries", "1",
            "--json")
    assert r.returncode == 0, r.stderr
    answered = sum(run["status"] == "answered" for run in json.loads(r.stdout)["runs"])
    with sqlite3.connect(mem) as db:
        stored = db.execute("SELECT COUNT(*) FROM summaries").fetchone()[0]
    assert stored == min(1, max(0, answered - 3))  # turns past the 3 recent ones, capped at 1
