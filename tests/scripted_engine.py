"""A scripted engine for the eval stage's own logic: each model answers each item from a table
(or a function of the item and the sample's seed), so tests know every verdict in advance."""

from __future__ import annotations

from edgepick.backends.base import Generation


class ScriptedBackend:
    name = "scripted"
    calls: list[tuple[str, str, int | None]] = []  # (model file, prompt, seed) per generation
    answers: dict = {}  # model file -> fn(prompt, seed) -> text
    clock: list[float] | None = None  # a fake monotonic clock, advanced per generation
    capabilities = frozenset({"sampling"})  # declared, as a real engine does (backends/base.py)

    @classmethod
    def supports(cls, capability: str) -> bool:
        return capability in cls.capabilities

    def load(self, candidate, options=None) -> float:
        self.model = str(candidate.ref.path)
        return 0.0

    def unload(self) -> None:
        pass

    def generate(self, prompt, max_tokens, *, chat=False, stop=None, logprobs=False,
                 ignore_eos=False, sampling=None) -> Generation:
        text_in = prompt[-1]["content"] if isinstance(prompt, list) else str(prompt)
        seed = None if sampling is None else sampling["seed"]
        ScriptedBackend.calls.append((self.model, text_in, seed))
        if ScriptedBackend.clock is not None:
            ScriptedBackend.clock[0] += 1.0
        out = ScriptedBackend.answers[self.model](text_in, seed)
        return Generation(text=out, prompt_tokens=3, generated_tokens=max(1, len(out.split())),
                          finish_reason="stop")
