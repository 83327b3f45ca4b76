"""The guarded agent loop (seed 004 §4.1, §4.4, §6.4): the model proposes, the guard checks,
destructive tools wait for a yes, errors go back to the model for a bounded number of retries,
and every step is recorded (proposal, repairs, validation, confirmation, result, timings)."""

from __future__ import annotations

import json
import time
from typing import Callable, Literal

from pydantic import BaseModel, Field

from edgepick.toolcall.calls import tool_schemas
from edgepick.toolcall.guard import Guard
from edgepick.agent.memory import Memory
from edgepick.agent.model import AgentModel
from edgepick.toolcall.prompting import json_call_messages
from edgepick.agent.tools import ToolResult, ToolSet
from edgepick.route.context import Snippet

DEFAULT_SYSTEM = "You are a helpful assistant running on this device. Use a tool only when needed."
Confirm = Callable[[str, dict], bool]


class StepRecord(BaseModel):
    step: int
    proposal: str
    parsed: dict | None = None
    repairs: list[dict] = Field(default_factory=list)
    validation: str  # answer | call | unparseable | unknown_tool | invalid_arguments
    error: str | None = None  # what the model was told
    tool: str | None = None
    arguments: dict | None = None
    destructive: bool = False
    confirmed: bool | None = None  # destructive tools only
    result: str | None = None
    result_ok: bool | None = None
    generate_s: float
    tool_s: float | None = None
    step_s: float  # proposal + guard + confirmation wait + tool


class AgentRun(BaseModel):
    prompt: str
    status: Literal["answered", "step_limit", "retries_exhausted"]
    answer: str | None
    mode: str
    steps: list[StepRecord]

    @property
    def repairs(self) -> int:
        return sum(bool(s.repairs) for s in self.steps)

    @property
    def refusals(self) -> int:
        return sum(s.validation not in ("answer", "call") for s in self.steps)


class Agent:
    """`run(user_text)` → AgentRun. `confirm(tool, arguments)` answers yes/no for destructive
    tools; without it they are always declined."""

    def __init__(self, model: AgentModel, tools: ToolSet, *, confirm: Confirm | None = None,
                 memory: Memory | None = None, context=None, system: str = DEFAULT_SYSTEM,
                 max_steps: int = 4, max_retries: int = 2, max_tokens: int = 128,
                 recall_k: int = 3) -> None:
        self.model, self.tools, self.confirm, self.memory = model, tools, confirm, memory
        self.context = context  # an edgepick.route.context.ContextBuilder, when one is wanted
        self.system, self.recall_k = system, recall_k
        self.max_steps, self.max_retries, self.max_tokens = max_steps, max_retries, max_tokens
        self.guard = Guard(tool_schemas(tools.schemas()))

    def run(self, user: str) -> AgentRun:
        msgs, tools_for_model = self._opening(user)
        steps: list[StepRecord] = []
        status, answer, retries = "step_limit", None, 0
        for n in range(1, self.max_steps + 1):
            t0 = time.perf_counter()
            prop = self.model.propose(msgs, tools_for_model, self.max_tokens)
            v = self.guard.check(prop.text)
            rec = dict(step=n, proposal=prop.text, generate_s=prop.seconds,
                       parsed=v.parsed.as_dict() if v.parsed else None,
                       repairs=[{"kind": r.kind, "detail": r.detail} for r in v.repairs],
                       validation=v.status, error=v.error, tool=v.name, arguments=v.arguments)
            if v.status == "answer":
                steps.append(StepRecord(**rec, step_s=time.perf_counter() - t0))
                status, answer = "answered", prop.text.strip()
                break
            if v.refused:
                retries += 1
                steps.append(StepRecord(**rec, step_s=time.perf_counter() - t0))
                if retries > self.max_retries:
                    status = "retries_exhausted"
                    break
                msgs += [{"role": "assistant", "content": prop.text},
                         {"role": "user", "content": f"Error: {v.error}"}]
                continue
            retries = 0
            result, tool_s, confirmed = self._execute(v.name, v.arguments)
            destructive = bool(self.tools.specs[v.name].destructive)
            steps.append(StepRecord(**rec, destructive=destructive, confirmed=confirmed,
                                    result=result.output, result_ok=result.ok, tool_s=tool_s,
                                    step_s=time.perf_counter() - t0))
            msgs += self._exchange(prop.text, v.name, v.arguments, result)
        if self.memory is not None and answer is not None:
            self.memory.add_turn(user, answer)
        return AgentRun(prompt=user, status=status, answer=answer, mode=self.model.mode,
                        steps=steps)

    def _execute(self, name: str, args: dict) -> tuple[ToolResult, float | None, bool | None]:
        confirmed = None
        if self.tools.specs[name].destructive:  # seed 004 §4.4: a person says yes first
            confirmed = bool(self.confirm(name, args)) if self.confirm else False
            if not confirmed:
                return ToolResult(False, f"the user declined to run {name}; do not call it "
                                         "again, tell the user it was not done"), None, False
        t0 = time.perf_counter()
        result = self.tools.execute(name, args)
        return result, time.perf_counter() - t0, confirmed

    def _exchange(self, reply: str, name: str, args: dict, result: ToolResult) -> list[dict]:
        if self.model.mode == "native":
            return [{"role": "assistant", "content": "", "tool_calls": [
                        {"type": "function", "function": {"name": name, "arguments": args}}]},
                    {"role": "tool", "name": name, "content": result.output}]
        call = json.dumps({"name": name, "arguments": args}, ensure_ascii=False)
        return [{"role": "assistant", "content": call},
                {"role": "user", "content": f"Result of {name}: {result.output}\n"
                                            "Answer the user now, or call another tool."}]

    def _opening(self, user: str) -> tuple[list[dict], list[dict]]:
        """The first messages (system / task context / user, seed 004 §4.2) and the tools the
        model is given separately (none when the JSON-call block is already in the system)."""
        tools = self.tools.schemas()
        system, tools_for_model = self.system, tools
        if self.context is not None and self.model.mode == "json":
            # The budget must count the tool block, so it goes into the system layer here.
            system = json_call_messages([{"role": "system", "content": system}], tools)[0]["content"]
            tools_for_model = []
        history = self.memory.history() if self.memory else []
        recalled = self.memory.recall(user, self.recall_k) if self.memory else []
        if self.context is not None:
            built = self.context.build(system, history, user,
                                       [Snippet(t, s, "memory") for t, s in recalled])
            return built.messages, tools_for_model
        if recalled:
            system += "\n\nFrom earlier conversations:\n" + "\n".join(f"- {t}" for t, _ in recalled)
        return [{"role": "system", "content": system}, *history,
                {"role": "user", "content": user}], tools_for_model
