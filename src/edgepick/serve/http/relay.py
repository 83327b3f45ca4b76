"""Relaying an answer to the client while measuring it: TTFT, inter-token gaps, decode speed,
tokens, and the text when the request is sampled (seed 000 §5.3, §7.4)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import AsyncIterator, Callable

import anyio

from edgepick.backends import llama_server_client as lsc
from edgepick.serve.errors import for_status, sse_event
from edgepick.serve.router_api import ServedResponse


@dataclass
class Outcome:
    """What one answer measured; `finish` runs once, when the answer is complete or abandoned."""

    status: int = 200
    first_s: float | None = None  # seconds from arrival to the first generated text
    gaps: list[float] = field(default_factory=list)
    decode_tps: float | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    text: list[str] = field(default_factory=list)
    finish_reason: str = ""
    # speculative decoding, from the engine's own `timings` (llama-server's draft_n and
    # draft_n_accepted; absent when it did not speculate)
    drafted: int = 0
    accepted: int = 0

    def take_timings(self, timings: dict | None) -> None:
        if timings:
            self.drafted = int(timings.get("draft_n") or 0)
            self.accepted = int(timings.get("draft_n_accepted") or 0)


def measure_body(body: dict, t0: float, t_end: float, keep_text: bool) -> Outcome:
    """A non-streaming answer: the first token's time is derived from the engine's own timings
    (end to end minus the decode of the tokens after the first)."""
    out = Outcome()
    usage = body.get("usage") or {}
    out.prompt_tokens = int(usage.get("prompt_tokens") or 0)
    out.completion_tokens = int(usage.get("completion_tokens") or 0)
    timings = body.get("timings") or {}
    out.take_timings(timings)
    per_tok = timings.get("predicted_per_token_ms")
    if out.completion_tokens and per_tok is not None:
        decode_s = (out.completion_tokens - 1) * float(per_tok) / 1000
        out.first_s = max(t_end - t0 - decode_s, 0.0)
        if out.completion_tokens > 1 and per_tok > 0:
            out.decode_tps = 1000 / float(per_tok)
            out.gaps = [float(per_tok) / 1000]
    choices = body.get("choices") or [{}]
    c0 = choices[0] if choices else {}
    out.finish_reason = str(c0.get("finish_reason") or "")
    if keep_text:
        msg = c0.get("message") or {}
        out.text.append(str(msg.get("content") or c0.get("text") or ""))
    return out


def _event_text(event: dict) -> str | None:
    choices = event.get("choices") or []
    if not choices:
        return None
    c0 = choices[0]
    delta = c0.get("delta")
    piece = delta.get("content") if isinstance(delta, dict) else c0.get("text")
    return piece or None


def _client_event(event: dict, raw: bytes, include_usage: bool) -> bytes | None:
    """The event as the client gets it: the usage-only chunk and `usage` fields dropped unless
    the client asked for them (edgepick asks the engine always, to count tokens), errors in
    OpenAI's shape. None: nothing to send."""
    if "error" in event:
        err = event["error"]
        if isinstance(err, dict) and not isinstance(err.get("code"), str):
            status = int(err.get("code") or err.get("status") or 500)
            # llama-server's own event (its status in `code`); edgepick's carry string codes
            return sse_event(for_status(status, str(err.get("message") or "stream failed")))
        return raw
    if include_usage or "usage" not in event:
        return raw
    if not event.get("choices"):
        return None  # the usage-only chunk
    return b"data: " + json.dumps({k: v for k, v in event.items() if k != "usage"}).encode()


async def relay_stream(resp: ServedResponse, t0: float, keep_text: bool,
                       finish: Callable[[Outcome], None],
                       include_usage: bool = True) -> AsyncIterator[bytes]:
    """The SSE events as they come, timing each event that carries text. Closing the iterator
    (client gone) closes the response, which frees the slot and cancels the generation."""
    out = Outcome()
    events = lsc.SseSplitter()
    last = None
    finished = False

    def settle() -> None:
        nonlocal finished
        if not finished:
            finished = True
            if out.gaps and sum(out.gaps) > 0:
                out.decode_tps = len(out.gaps) / sum(out.gaps)
            finish(out)

    try:
        assert resp.chunks is not None
        async for chunk in resp.chunks:
            ended = False
            sent: list[bytes] = []
            # each piece's whole events go out together, as they came (one write per piece)
            for ev in events.feed(chunk):
                ended = ended or lsc.is_done(ev)
                event = lsc.event_json(ev)
                if not isinstance(event, dict):  # a comment, [DONE], not JSON: as it came
                    sent.append(ev)
                    continue
                now = time.monotonic()
                if "error" in event:
                    err = event["error"]
                    status = err.get("status") or err.get("code") if isinstance(err, dict) else 500
                    out.status = int(status) if isinstance(status, int) else 500
                piece = _event_text(event)
                if piece is not None:
                    if last is None:
                        out.first_s = now - t0
                    else:
                        out.gaps.append(now - last)
                    last = now
                    if keep_text:
                        out.text.append(piece)
                for c in event.get("choices") or []:
                    if c.get("finish_reason"):
                        out.finish_reason = c["finish_reason"]
                out.take_timings(event.get("timings"))
                usage = event.get("usage")
                if usage:
                    out.prompt_tokens = int(usage.get("prompt_tokens") or 0)
                    out.completion_tokens = int(usage.get("completion_tokens") or 0)
                shown = _client_event(event, ev.removesuffix(b"\n\n"), include_usage)
                if shown is not None:
                    sent.append(shown + b"\n\n")
            if ended:  # counted before the client sees the end, so a scrape right after has it
                settle()
            if sent:
                yield b"".join(sent)
    except BaseException:
        if not finished:
            out.status = 499  # the client went away (nginx's code for it)
        raise
    finally:
        # cleanup must run even while the task is being cancelled by the disconnect
        with anyio.CancelScope(shield=True):
            await resp.aclose()
        settle()
