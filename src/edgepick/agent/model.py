"""The agent's model: any engine behind the Backend contract (in process or an OpenAI-compatible
server such as `edgepick serve`), prompted with tools the way `prompting` decides."""

from __future__ import annotations

import time
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

from edgepick.backends import get_backend
from edgepick.toolcall.prompting import ToolPrompter
from edgepick.records.candidate import Candidate


@dataclass
class Proposal:
    text: str
    seconds: float  # submit → last token
    prompt_tokens: int = 0
    generated_tokens: int = 0


class AgentModel(Protocol):
    mode: str  # "native" (the model's own template takes the tools) or "json"

    def propose(self, messages: list[dict], tools: list[dict], max_tokens: int) -> Proposal: ...


class BackendModel(AbstractContextManager):
    """A loaded candidate; use as a context manager so the engine is always released."""

    def __init__(self, candidate: Candidate, force_mode: str | None = None) -> None:
        self.candidate = candidate
        self.prompter = ToolPrompter.for_model(candidate.model, candidate.backend, force_mode)
        self.mode = self.prompter.mode
        self.backend = get_backend(candidate.backend)
        self.load_s = self.backend.load(candidate)

    def propose(self, messages: list[dict], tools: list[dict], max_tokens: int) -> Proposal:
        prompt, chat = self.prompter.build(messages, tools)
        t0 = time.perf_counter()
        g = self.backend.generate(prompt, max_tokens, chat=chat)
        return Proposal(g.text, time.perf_counter() - t0, g.prompt_tokens, g.generated_tokens)

    def summarise(self, user: str, answer: str, max_tokens: int = 48) -> str:
        """One sentence for the long-term memory, written by the edge model itself."""
        msgs = [{"role": "system", "content": "Summarise the exchange in one short sentence."},
                {"role": "user", "content": f"User: {user}\nAssistant: {answer}"}]
        text = self.backend.generate(msgs, max_tokens, chat=True).text.strip()
        return text or f"User: {user}\nAnswer: {answer}"

    def close(self) -> None:
        self.backend.unload()

    def __exit__(self, *exc) -> None:
        self.close()
