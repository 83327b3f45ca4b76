"""A context builder for small windows (seed 004 §4.2, §6.5; seed 003 §7.3).

Three layers, separated by clear markers: the system instruction; the task context (retrieved
snippets with their scores, and a summary of earlier turns); the user input. When the whole
conversation does not fit the budget (70% of the window by default, the rest left for the
answer), pieces are kept by priority: the system instruction and the latest user turn always,
then the most recent turns, then snippets by score, then older turns; the turns that did not fit
are summarised (or dropped when even the summary does not fit). Tokens are counted with the
model's own tokenizer, and the final prompt is counted whole, so the budget is never exceeded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Protocol

import httpx

from edgepick.backends.llama_server_client import apply_template, root_of, tokenize
from edgepick.errors import EdgepickError
from edgepick.units import whole_pct

DEFAULT_BUDGET_SHARE = 0.7  # seed 004 §4.2 (70%), seed 003 §7.3 (60% for agents)
TASK_OPEN = "=== Task context ==="
TASK_CLOSE = "=== End of task context ==="


class ContextOverflow(EdgepickError):
    """The parts that are always kept (system + latest user turn) alone exceed the budget."""


class Tokenizer(Protocol):
    def count_text(self, text: str) -> int:
        """Tokens of a piece of text, without BOS."""

    def count_messages(self, messages: list[dict]) -> int:
        """Tokens of the whole prompt the model's chat template makes of these messages."""


@dataclass
class Snippet:
    text: str
    score: float = 0.0
    source: str | None = None


@dataclass
class ContextResult:
    messages: list[dict]
    tokens: int  # the whole prompt, counted by the model's tokenizer
    budget: int
    window: int
    kept_turns: int
    dropped_turns: int  # older turns left out of the prompt (summarised or not)
    summarised_turns: int  # of those, how many the summary covers
    kept_snippets: int
    dropped_snippets: int
    changed: bool = True  # False when everything fitted and nothing was touched
    full_tokens: int = 0  # the whole conversation before any cut

    def header(self) -> str:
        """The value of the `x-edgepick-context` response header."""
        return (f"turns_dropped={self.dropped_turns};summarised={self.summarised_turns};"
                f"snippets_dropped={self.dropped_snippets};tokens={self.tokens};"
                f"budget={self.budget}")


_SENTENCE = re.compile(r"(.+?[.!?。！？;；](?=\s|$)|.+?[。！？；])", re.S)


def extractive_summary(turns: list[dict], max_chars: int = 160) -> str:
    """One line per turn: its role and first sentence, cut at `max_chars`. No model call, so it
    costs nothing on the device; pass a model-backed summariser to do better."""
    lines = []
    for t in turns:
        text = " ".join(str(t.get("content", "")).split())
        m = _SENTENCE.match(text)
        first = m.group(1) if m else text
        if len(first) > max_chars:
            first = first[: max_chars - 1] + "…"
        lines.append(f"{t.get('role', 'user')}: {first}")
    return "\n".join(lines)


@dataclass
class ContextBuilder:
    """Builds a prompt within `budget_share` × `window` tokens of the model's tokenizer."""

    tokenizer: Tokenizer
    window: int
    budget_share: float = DEFAULT_BUDGET_SHARE
    keep_recent: int = 4  # messages of history kept before any snippet (two exchanges)
    summariser: Callable[[list[dict]], str] | None = extractive_summary
    _cost: dict = field(default_factory=dict, repr=False)

    @property
    def budget(self) -> int:
        return int(self.window * self.budget_share)

    def fit_messages(self, messages: list[dict], snippets: list[Snippet] | None = None,
                     summary: str | None = None) -> ContextResult:
        """A chat request's messages as the three layers: leading system messages, the history,
        and the last message (the user input)."""
        if not messages:
            raise EdgepickError("context: no messages")
        i = 0
        while i < len(messages) - 1 and messages[i].get("role") == "system":
            i += 1
        system = "\n\n".join(str(m.get("content", "")) for m in messages[:i]) or None
        return self.build(system, messages[i:-1], messages[-1], snippets or [], summary)

    def build(self, system: str | None, history: list[dict], user: dict | str,
              snippets: list[Snippet] | None = None, summary: str | None = None) -> ContextResult:
        user_msg = {"role": "user", "content": user} if isinstance(user, str) else dict(user)
        snippets = sorted(snippets or [], key=lambda s: -s.score)
        everything = self._assemble(system, history, snippets, summary, len(history), user_msg)
        total = self.tokenizer.count_messages(everything)
        if total <= self.budget:
            return ContextResult(everything, total, self.budget, self.window, len(history), 0, 0,
                                 len(snippets), 0, changed=False, full_tokens=total)
        fixed = self._assemble(system, [], [], None, 0, user_msg)
        base = self.tokenizer.count_messages(fixed)
        if base > self.budget:
            raise ContextOverflow(
                f"context: the system instruction and the latest turn alone take {base} tokens, "
                f"over the budget of {self.budget} ({whole_pct(self.budget_share)} of a "
                f"{self.window}-token window); shorten the input")
        res = self._by_priority(system, history, snippets, summary, user_msg, base)
        res.full_tokens = total
        return res

    # -- priority truncation (seed 004 §6.5) ---------------------------------------------
    def _by_priority(self, system, history, snippets, summary, user_msg, base) -> ContextResult:
        room = self.budget - base
        n_recent = 0  # history kept, counted from the newest
        chosen: list[Snippet] = []

        def take(cost: int) -> bool:
            nonlocal room
            if cost <= room:
                room -= cost
                return True
            return False

        def newest_first(limit: int) -> None:
            nonlocal n_recent
            while n_recent < min(limit, len(history)):
                if not take(self._msg_cost(history[-1 - n_recent])):
                    return
                n_recent += 1

        newest_first(self.keep_recent)
        if n_recent == min(self.keep_recent, len(history)):
            for s in snippets:
                if take(self._text_cost(self._snippet_line(len(chosen) + 1, s))):
                    chosen.append(s)
            newest_first(len(history))
        summary_cap = self.budget // 4  # the summary never crowds out the turns it stands for
        while True:
            dropped = history[: len(history) - n_recent]
            summ = self._summary_text(dropped, summary, summary_cap) if summary_cap >= 8 else None
            msgs = self._assemble(system, history, chosen, summ, n_recent, user_msg)
            total = self.tokenizer.count_messages(msgs)
            if total <= self.budget:
                break
            # Over budget (the summary had no room, or the template cost more than estimated):
            # give up the lowest-priority piece and count the whole prompt again. Older turns,
            # then snippets (lowest score first) give way to the summary, which stands for every
            # dropped turn (seed 004 §6.5: early turns summarised, retrieval cut by relevance).
            if summ is not None and n_recent > min(self.keep_recent, len(history)):
                n_recent -= 1
            elif summ is not None and chosen:
                chosen.pop()
            elif summ is not None:
                summary_cap //= 2  # a shorter summary, down to none
            elif chosen:
                chosen.pop()
            elif n_recent:
                n_recent -= 1
            else:
                raise ContextOverflow(f"context: cannot fit the budget of {self.budget} tokens")
        dropped = history[: len(history) - n_recent]
        summarised = len(dropped) if summ is not None else 0
        return ContextResult(msgs, total, self.budget, self.window, n_recent, len(dropped),
                             summarised, len(chosen), len(snippets) - len(chosen))

    def _summary_text(self, dropped: list[dict], given: str | None, cap: int) -> str | None:
        """The summary of the dropped turns within `cap` tokens, newest lines first."""
        if given is not None:
            lines = given.splitlines()
        elif not dropped or self.summariser is None:
            return None
        else:
            lines = self.summariser(dropped).splitlines()
        kept: list[str] = []
        used = 0
        for line in reversed(lines):
            used += self._text_cost(line)
            if used > cap:
                break
            kept.insert(0, line)
        if not kept and lines:  # even the newest line is too long: keep its head
            kept = [self._cut_to(lines[-1], cap)]
        return "\n".join(k for k in kept if k) or None

    def _cut_to(self, text: str, cap: int) -> str:
        lo, hi = 0, len(text)  # the longest prefix (plus "…") within `cap` tokens
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.tokenizer.count_text(text[:mid] + "…") + 1 <= cap:
                lo = mid
            else:
                hi = mid - 1
        return text[:lo] + "…" if lo >= 8 else ""

    # -- the three layers, with markers (seed 004 §4.2) -----------------------------------
    @staticmethod
    def _snippet_line(i: int, s: Snippet) -> str:
        src = f" · {s.source}" if s.source else ""
        return f"[snippet {i} · score {s.score:.2f}{src}] {s.text}"

    def _assemble(self, system, history, snippets, summary, n_recent, user_msg) -> list[dict]:
        task = [self._snippet_line(i + 1, s) for i, s in enumerate(snippets)]
        n_older = len(history) - n_recent
        if summary:
            label = f"{n_older} earlier turns" if n_older else "earlier turns"
            task.append(f"[summary of {label}]\n{summary}")
        sys_text = system or ""
        if task:
            sys_text = (sys_text + "\n\n" if sys_text else "") + "\n".join(
                [TASK_OPEN, *task, TASK_CLOSE])
        msgs = [{"role": "system", "content": sys_text}] if sys_text else []
        msgs += [dict(m) for m in history[n_older:]]
        return msgs + [user_msg]

    def _text_cost(self, text: str) -> int:
        if text not in self._cost:
            self._cost[text] = self.tokenizer.count_text(text) + 1  # the joining newline
        return self._cost[text]

    def _msg_cost(self, m: dict) -> int:
        # Role markers of a chat template are a handful of tokens per message.
        return self._text_cost(str(m.get("content", ""))) + 6


class BackendTokenizer:
    """Counts with an in-process engine (llama_cpp): its tokenizer and its chat template."""

    def __init__(self, backend) -> None:
        self.backend = backend

    def count_text(self, text: str) -> int:
        return len(self.backend.tokenize(text, add_bos=False))

    def count_messages(self, messages: list[dict]) -> int:
        return len(self.backend.tokenize(self.backend.render_chat(messages), add_bos=True))


class ServerTokenizer:
    """Counts with a running llama-server: `/apply-template` then `/tokenize`, the same steps
    the server takes for a chat request."""

    def __init__(self, root: str, timeout_s: float = 10.0,
                 headers: dict[str, str] | None = None) -> None:
        self.root = root_of(root)
        self._client = httpx.Client(base_url=self.root, timeout=timeout_s, headers=headers)

    def count_text(self, text: str) -> int:
        return len(tokenize(self._client, text, add_special=False))

    def count_messages(self, messages: list[dict]) -> int:
        return len(tokenize(self._client, apply_template(self._client, messages)))

    def close(self) -> None:
        self._client.close()
