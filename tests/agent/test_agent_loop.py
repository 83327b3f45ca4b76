"""Every path of the guarded loop, driven by a model that replays canned replies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgepick.agent import Agent, ToolSet, load_tools
from edgepick.agent.model import Proposal
from edgepick.errors import InputError


class Scripted:
    """Replays replies in order and keeps what it was shown (simonw/llm's mock-model idea)."""

    mode = "json"

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.seen: list[list[dict]] = []

    def propose(self, messages, tools, max_tokens) -> Proposal:
        self.seen.append([dict(m) for m in messages])
        return Proposal(self.replies.pop(0), 0.0)


def call(name: str, **args) -> str:
    return json.dumps({"name": name, "arguments": args})


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    box = tmp_path / "box"
    box.mkdir()
    (box / "notes.txt").write_text("Buy milk.\n\nThe wifi password is hunter2.\n")
    return box


def test_one_call_then_an_answer(sandbox):
    model = Scripted(call("read_file", path="notes.txt"), "Your notes say: buy milk.")
    run = Agent(model, ToolSet.builtin(sandbox)).run("What is in my notes?")
    assert run.status == "answered" and run.answer == "Your notes say: buy milk."
    first, second = run.steps
    assert first.validation == "call" and first.tool == "read_file" and first.result_ok
    assert "Buy milk" in first.result and first.step_s >= first.generate_s
    assert second.validation == "answer"
    # The result went back to the model before its second proposal.
    assert "Buy milk" in model.seen[1][-1]["content"]


def test_a_repaired_call_runs_and_the_repair_is_recorded(sandbox):
    model = Scripted("{'name': ' read_file', 'arguments': {'path': ' notes.txt '}}", "Done.")
    run = Agent(model, ToolSet.builtin(sandbox)).run("Read notes.txt")
    step = run.steps[0]
    assert step.validation == "call" and step.result_ok and run.repairs == 1
    assert {r["kind"] for r in step.repairs} >= {"quotes", "whitespace"}


def test_refusal_goes_back_to_the_model_which_retries(sandbox):
    model = Scripted(call("open_file", path="notes.txt"),
                     call("convert_units", value="many", from_unit="km", to_unit="mile"),
                     call("convert_units", value=5, from_unit="km", to_unit="mile"),
                     "5 km is 3.1 miles.")
    run = Agent(model, ToolSet.builtin(sandbox), max_steps=6).run("5 km in miles?")
    assert [s.validation for s in run.steps] == ["unknown_tool", "invalid_arguments", "call",
                                                 "answer"]
    assert run.refusals == 2 and run.status == "answered"
    assert "no tool named 'open_file'" in model.seen[1][-1]["content"]
    assert model.seen[2][-1]["content"].startswith("Error: the arguments for 'convert_units'")
    assert "3.10686" in run.steps[2].result


def test_retries_are_bounded(sandbox):
    model = Scripted(*[call("nope")] * 5)
    run = Agent(model, ToolSet.builtin(sandbox), max_steps=10, max_retries=2).run("x")
    assert run.status == "retries_exhausted" and len(run.steps) == 3 and run.answer is None


def test_destructive_tool_refused_without_confirmation(sandbox):
    model = Scripted(call("delete_file", path="notes.txt"), "I did not delete it.")
    run = Agent(model, ToolSet.builtin(sandbox)).run("Delete notes.txt")
    step = run.steps[0]
    assert step.destructive and step.confirmed is False and step.tool_s is None
    assert (sandbox / "notes.txt").exists() and "declined" in step.result


def test_destructive_tool_refused_when_the_callback_says_no(sandbox):
    asked = []
    model = Scripted(call("delete_file", path="notes.txt"), "Not deleted.")
    Agent(model, ToolSet.builtin(sandbox),
          confirm=lambda n, a: asked.append((n, a)) or False).run("Delete notes.txt")
    assert asked == [("delete_file", {"path": "notes.txt"})]
    assert (sandbox / "notes.txt").exists()


def test_destructive_tool_runs_after_confirmation(sandbox):
    model = Scripted(call("delete_file", path="notes.txt"), "Deleted.")
    run = Agent(model, ToolSet.builtin(sandbox), confirm=lambda n, a: True).run("Delete it")
    assert run.steps[0].confirmed is True and run.steps[0].result == "deleted notes.txt"
    assert not (sandbox / "notes.txt").exists()


def test_the_step_limit_ends_the_run(sandbox):
    model = Scripted(*[call("list_files")] * 3)
    run = Agent(model, ToolSet.builtin(sandbox), max_steps=3).run("Loop forever")
    assert run.status == "step_limit" and len(run.steps) == 3 and run.answer is None
    assert all(s.validation == "call" for s in run.steps)


def test_paths_outside_the_sandbox_are_refused_by_the_tool(sandbox, tmp_path):
    (tmp_path / "secret.txt").write_text("top secret")
    model = Scripted(call("read_file", path="../secret.txt"), call("read_file", path="/etc/passwd"),
                     "I cannot.")
    run = Agent(model, ToolSet.builtin(sandbox)).run("Read ../secret.txt")
    assert [s.result_ok for s in run.steps[:2]] == [False, False]
    assert all("outside the sandbox" in s.result for s in run.steps[:2])


def test_every_step_is_recorded_as_json(sandbox):
    model = Scripted('{"name": "add_event", "arguments": {"title": "Gym", "date": "2026-03-03", '
                     '"time": "7:00", "duration_minutes": "30"}}', "Added.")
    run = Agent(model, ToolSet.builtin(sandbox)).run("Gym tomorrow at 7")
    d = json.loads(run.model_dump_json())
    step = d["steps"][0]
    assert set(step) >= {"proposal", "parsed", "repairs", "validation", "result", "generate_s",
                         "step_s"}
    assert step["arguments"]["duration_minutes"] == 30 and "07:00" in step["result"]


def test_tools_yaml_runs_a_python_callable_with_keyword_arguments(tmp_path, monkeypatch):
    (tmp_path / "my_tools.py").write_text("def word_count(text):\n    return len(text.split())\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = tmp_path / "tools.yaml"
    spec.write_text("""
tools:
  - name: word_count
    description: Count the words of a text.
    run: "my_tools:word_count"
    parameters: {type: object, properties: {text: {type: string}}, required: [text]}
  - name: wipe
    run: "my_tools:word_count"
    destructive: true
    parameters: {type: object, properties: {text: {type: string}}}
""")
    tools = load_tools(spec)
    assert tools.specs["wipe"].destructive and not tools.specs["word_count"].destructive
    model = Scripted(call("word_count", text="a b; rm -rf /"), "4 words.")
    run = Agent(model, tools).run("count")
    assert run.steps[0].result == "5"  # the argument reached Python as a string, no shell


@pytest.mark.parametrize("body, words", [
    ("tools: []", "non-empty 'tools' list"),
    ("tools:\n  - name: x\n    builtin: read_file\n    run: a:b\n", "exactly one of"),
    ("tools:\n  - name: x\n    builtin: teleport\n", "unknown builtin"),
    ("tools:\n  - name: x\n    run: a:b\n", "needs its JSON-schema"),
    ("tools:\n  - name: x\n    run: a:b\n    parameters: {type: 12}\n", "not a valid JSON Schema"),
    ("tools:\n  - name: read_file\n    builtin: read_file\n", "need a sandbox"),
    ("tools:\n  - {name: a, builtin: list_files}\n  - {name: a, builtin: list_files}\n"
     "sandbox: box\n", "duplicate tool name"),
])
def test_bad_tools_yaml_is_one_line_naming_the_file(tmp_path, body, words):
    spec = tmp_path / "tools.yaml"
    spec.write_text(body)
    with pytest.raises(InputError) as exc:
        load_tools(spec)
    assert str(spec) in str(exc.value) and words in str(exc.value)


class CharTokenizer:
    """A stand-in tokenizer (one token per 4 characters) for the context builder."""

    def count_text(self, text: str) -> int:
        return len(text) // 4 + 1

    def count_messages(self, messages) -> int:
        return sum(self.count_text(m["content"]) + 4 for m in messages)


def _memory(tmp_path):
    from test_agent_memory import FakeEmbedder

    from edgepick.agent.memory import LongTermMemory, Memory

    lt = LongTermMemory(tmp_path / "mem.sqlite", FakeEmbedder())
    lt.add("the wifi password is hunter2")
    return Memory(lt, recent_turns=2)


def test_memory_feeds_the_task_context_layer_of_the_context_builder(sandbox, tmp_path):
    from edgepick.route.context import TASK_OPEN, ContextBuilder

    mem = _memory(tmp_path)
    model = Scripted("It is hunter2.", "You asked about the wifi.")
    agent = Agent(model, ToolSet.builtin(sandbox), memory=mem,
                  context=ContextBuilder(CharTokenizer(), window=8192))
    agent.run("the wifi password is hunter2")
    first = "\n".join(m["content"] for m in model.seen[0])
    assert TASK_OPEN in first and "hunter2" in first
    assert '"name": "read_file"' in model.seen[0][0]["content"]  # tool block in the system layer
    agent.run("what did I ask?")
    assert [m["content"] for m in model.seen[1][-3:-1]] == ["the wifi password is hunter2",
                                                            "It is hunter2."]


def test_memory_without_a_context_builder_goes_into_the_system_message(sandbox, tmp_path):
    model = Scripted("ok")
    Agent(model, ToolSet.builtin(sandbox), memory=_memory(tmp_path)).run(
        "the wifi password is hunter2")
    assert "From earlier conversations:\n- the wifi password is hunter2" in model.seen[0][0]["content"]
