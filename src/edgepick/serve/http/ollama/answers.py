"""Serve's OpenAI answers in Ollama's shapes: a whole `/api/chat` or `/api/generate` answer,
the NDJSON lines of a streamed one (one object per line, the last with `done: true` and the
counts), and refusals as `{"error": "..."}` (Ollama's server/routes.go answers that shape).

Durations are nanoseconds, as Ollama's are: `total_duration` from the request's arrival,
`prompt_eval_duration` and `eval_duration` from llama-server's own `timings`; `load_duration`
is 0 (a team model's load is counted in /metrics, `edgepick_model_load_seconds`)."""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone
from typing import AsyncIterator

from fastapi.responses import JSONResponse

from edgepick.backends import llama_server_client as lsc
from edgepick.serve.errors import OLLAMA_PREFIX, ServeError, ollama_message
from edgepick.serve.errors import error_response as refusal

NDJSON = "application/x-ndjson"


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


def error_response(err: ServeError) -> JSONResponse:
    """A refusal as Ollama shapes it; the request id rides in `x-request-id`."""
    return refusal(err, OLLAMA_PREFIX)


def _arguments(text: str | dict | None) -> dict:
    if isinstance(text, dict):
        return text
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {"arguments": text}  # the model wrote no JSON: its text, not lost
    return value if isinstance(value, dict) else {"value": value}


def tool_calls(calls: list[dict]) -> list[dict]:
    """OpenAI's tool calls (arguments a JSON string) as Ollama's (arguments an object)."""
    out = []
    for i, call in enumerate(calls):
        fn = call.get("function") or {}
        item = {"function": {"index": i, "name": fn.get("name") or "",
                             "arguments": _arguments(fn.get("arguments"))}}
        if call.get("id"):
            item["id"] = call["id"]
        out.append(item)
    return out


def done_reason(finish: str | None) -> str:
    return "length" if finish == "length" else "stop"


def counts(usage: dict | None, timings: dict | None, t0: float, load_s: float) -> dict:
    usage, timings = usage or {}, timings or {}
    return {"total_duration": int((time.monotonic() - t0) * 1e9),
            "load_duration": int(load_s * 1e9),
            "prompt_eval_count": int(usage.get("prompt_tokens") or 0),
            "prompt_eval_duration": int(float(timings.get("prompt_ms") or 0) * 1e6),
            "eval_count": int(usage.get("completion_tokens") or 0),
            "eval_duration": int(float(timings.get("predicted_ms") or 0) * 1e6)}


def _piece(api: str, model: str, text: str, calls: list[dict] | None = None) -> dict:
    if api == "chat":
        msg: dict = {"role": "assistant", "content": text}
        if calls:
            msg["tool_calls"] = calls
        return {"model": model, "created_at": now_iso(), "message": msg, "done": False}
    return {"model": model, "created_at": now_iso(), "response": text, "done": False}


def whole(api: str, model: str, body: dict, t0: float, load_s: float) -> dict:
    """A whole answer (`stream: false`)."""
    choices = body.get("choices") or [{}]
    c0 = choices[0] if choices else {}
    msg = c0.get("message") or {}
    text = msg.get("content") if "message" in c0 else c0.get("text")
    out = _piece(api, model, text or "", tool_calls(msg.get("tool_calls") or []) or None)
    out.update(done=True, done_reason=done_reason(c0.get("finish_reason")),
               **counts(body.get("usage"), body.get("timings"), t0, load_s))
    return out


def line(obj: dict) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode() + b"\n"


class _Calls:
    """Tool calls as OpenAI streams them (pieces of arguments by index), whole at the end:
    Ollama sends each call complete."""

    def __init__(self) -> None:
        self.by_index: dict[int, dict] = {}

    def add(self, deltas: list[dict]) -> None:
        for d in deltas:
            call = self.by_index.setdefault(int(d.get("index") or 0),
                                            {"function": {"name": "", "arguments": ""}})
            if d.get("id"):
                call["id"] = d["id"]
            fn = d.get("function") or {}
            call["function"]["name"] += fn.get("name") or ""
            call["function"]["arguments"] += fn.get("arguments") or ""

    def whole(self) -> list[dict]:
        return tool_calls([self.by_index[i] for i in sorted(self.by_index)])


async def ndjson(api: str, model: str, events: AsyncIterator[bytes], t0: float,
                 load_s: float, note: str | None = None) -> AsyncIterator[bytes]:
    """serve's relayed SSE stream (serve/http/relay.py) as Ollama's NDJSON lines; `note` (what was
    done instead of the keep_alive asked) rides on the last one."""
    splitter = lsc.SseSplitter()
    calls = _Calls()
    usage = timings = None
    finish = None
    async for chunk in events:
        out: list[bytes] = []
        for ev in splitter.feed(chunk):
            if lsc.is_done(ev):
                if calls.by_index:
                    out.append(line(_piece(api, model, "", calls.whole())))
                last = _piece(api, model, "")
                last.update(done=True, done_reason=done_reason(finish),
                            **counts(usage, timings, t0, load_s))
                if note:
                    last["keep_alive"] = note
                out.append(line(last))
                continue
            event = lsc.event_json(ev)
            if not isinstance(event, dict):
                continue
            if "error" in event:
                err = event["error"]
                text = err.get("message") if isinstance(err, dict) else str(err)
                out.append(line({"error": ollama_message(str(text or "stream failed"))}))
                continue
            usage = event.get("usage") or usage
            timings = event.get("timings") or timings
            for c in event.get("choices") or []:
                finish = c.get("finish_reason") or finish
                delta = c.get("delta") if isinstance(c.get("delta"), dict) else {}
                calls.add(delta.get("tool_calls") or [])
                text = delta.get("content") if "delta" in c else c.get("text")
                if text:
                    out.append(line(_piece(api, model, text)))
        if out:
            yield b"".join(out)
