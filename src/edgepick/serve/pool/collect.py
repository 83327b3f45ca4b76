"""A non-streaming answer read from the engine as a stream.

Why: the pinned llama-server notices that a non-streaming client left only when its HTTP thread
waited a whole second for a result and got none (tools/server/server-queue.cpp
`server_response::recv_with_timeout`: `condition_results.wait_for(lock, 1 s)` is woken by the
result of *any* task, so every streamed token of another request, every /metrics probe, starts
the second again; only a timeout reaches `should_stop`, cpp-httplib's `is_socket_alive`). Under
any other traffic an abandoned non-streaming generation runs to its end, holding its slot unseen.
A streamed one is written token by token, and the first write to a closed connection ends it.
So serve asks the engine for a stream, and rebuilds here the body llama-server would have sent
whole: closing the engine connection then stops the generation within a token or two.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx

from edgepick.backends import llama_server_client as lsc
from edgepick.serve.router_api import (DeadlineExceeded, EngineUnavailable, ServedResponse,
                                       UpstreamError)


class _Choice:
    def __init__(self) -> None:
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.role = "assistant"
        self.tools: dict[int, dict[str, Any]] = {}
        self.logprobs: dict[str, Any] | None = None
        self.finish: str | None = None

    def take(self, choice: dict) -> None:
        delta = choice.get("delta")
        if isinstance(delta, dict):
            self.role = delta.get("role") or self.role
            if delta.get("content"):
                self.text.append(delta["content"])
            if delta.get("reasoning_content"):
                self.reasoning.append(delta["reasoning_content"])
            for call in delta.get("tool_calls") or ():
                self._tool(call)
        elif isinstance(choice.get("text"), str):
            self.text.append(choice["text"])
        lp = choice.get("logprobs")
        if isinstance(lp, dict):
            if self.logprobs is None:
                self.logprobs = {k: [] if isinstance(v, list) else v for k, v in lp.items()}
            for k, v in lp.items():
                if isinstance(v, list):
                    self.logprobs.setdefault(k, []).extend(v)
        if choice.get("finish_reason"):
            self.finish = choice["finish_reason"]

    def _tool(self, call: dict) -> None:
        out = self.tools.setdefault(call.get("index", len(self.tools)),
                                    {"type": "function", "function": {"name": "",
                                                                      "arguments": ""}})
        if call.get("id"):
            out["id"] = call["id"]
        fn = call.get("function") or {}
        out["function"]["name"] += fn.get("name") or ""
        out["function"]["arguments"] += fn.get("arguments") or ""

    def chat(self, index: int) -> dict:
        message: dict[str, Any] = {"role": self.role,
                                   "content": "".join(self.text) if self.text or not self.tools
                                   else None}
        if self.reasoning:
            message["reasoning_content"] = "".join(self.reasoning)
        if self.tools:
            message["tool_calls"] = [self.tools[i] for i in sorted(self.tools)]
        out = {"finish_reason": self.finish, "index": index, "message": message}
        if self.logprobs is not None:
            out["logprobs"] = self.logprobs
        return out

    def completion(self, index: int) -> dict:
        return {"text": "".join(self.text), "index": index, "logprobs": self.logprobs,
                "finish_reason": self.finish}


class Collected:
    """The chunks of one stream folded into the body of its non-streaming answer."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.head: dict[str, Any] = {}
        self.choices: dict[int, _Choice] = {}

    def take(self, chunk: dict) -> None:
        if "error" in chunk:
            err = chunk["error"]
            code = err.get("code") if isinstance(err, dict) else None
            raise UpstreamError(f"engine: {lsc.error_message(chunk) or err}",
                                status=code if isinstance(code, int) else 500, payload=chunk)
        for key, value in chunk.items():
            if key not in ("choices", "object"):
                self.head[key] = value
        for choice in chunk.get("choices") or ():
            self.choices.setdefault(choice.get("index", 0), _Choice()).take(choice)

    def body(self) -> dict:
        chat = self.kind == "chat"
        out = {k: v for k, v in self.head.items() if k not in ("usage", "timings")}
        out["choices"] = [c.chat(i) if chat else c.completion(i)
                          for i, c in sorted(self.choices.items())]
        out["object"] = "chat.completion" if chat else "text_completion"
        for key in ("usage", "timings"):
            if key in self.head:
                out[key] = self.head[key]
        return out


async def collect(resp: httpx.Response, kind: str, deadline: float) -> dict:
    """The engine's streamed answer `resp` as the body of its non-streaming answer, read
    within the deadline. The caller closes `resp` (which, mid-stream, stops the engine)."""
    events = lsc.SseSplitter()
    answer = Collected(kind)
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout_at(loop.time() + (deadline - time.monotonic())):
            async for piece in resp.aiter_raw():
                for ev in events.feed(piece):
                    if _fold(answer, ev):
                        return answer.body()
            for ev in events.rest():
                _fold(answer, ev)
    except TimeoutError:
        raise DeadlineExceeded("deadline passed during generation") from None
    except httpx.HTTPError as exc:
        raise EngineUnavailable(f"engine connection lost ({type(exc).__name__}); it is "
                                "restarting", retry_after=2) from None
    return answer.body()


def _fold(answer: Collected, ev: bytes) -> bool:
    """Fold one event in; True at the closing `[DONE]`."""
    data = lsc.event_data(ev)
    if data is None:
        return False
    if data.strip() == "[DONE]":
        return True
    try:
        chunk = json.loads(data)
    except ValueError:
        return False
    if isinstance(chunk, dict):
        answer.take(chunk)
    return False


def replay(answer: dict, kind: str) -> list[bytes]:
    """A whole answer as the events of its stream (the inverse of `collect`): one chunk per
    choice with all of its text (or message) and its finish, the usage chunk, `[DONE]`."""
    chat = kind == "chat"
    head = {k: v for k, v in answer.items() if k not in ("choices", "usage", "object")}
    head["object"] = "chat.completion.chunk" if chat else "text_completion"
    events = []
    for c in answer.get("choices") or ():
        choice = {k: v for k, v in c.items() if k != "message"}
        if chat:
            delta = dict(c.get("message") or {})
            if delta.get("tool_calls"):
                delta["tool_calls"] = [dict(t, index=i) for i, t in
                                       enumerate(delta["tool_calls"])]
            choice["delta"] = delta
        events.append(dict(head, choices=[choice]))
    if answer.get("usage"):
        events.append(dict(head, choices=[], usage=answer["usage"]))
    return [f"data: {json.dumps(e)}\n\n".encode() for e in events] + [b"data: [DONE]\n\n"]


def replayed(answer: dict, kind: str, headers: dict, queue_wait_s: float):
    """`replay` as a streaming ServedResponse."""
    data = replay(answer, kind)

    async def chunks():
        for piece in data:
            yield piece

    gen = chunks()
    return ServedResponse(chunks=gen, headers=headers, queue_wait_s=queue_wait_s,
                          _closer=gen.aclose)
