"""An Ollama request as the OpenAI body serve already checks: `/api/chat` becomes a chat
completion, `/api/generate` a chat completion of one user turn (Ollama applies the model's
template to `prompt`) or, with `raw`, a plain completion. `options` map onto llama-server's
sampling fields, `format` onto the same grammar constraint as `response_format`, `tools` pass
as they are (Ollama's are OpenAI's), tool calls and results in history get OpenAI's ids.

What serve cannot honour is refused in one line naming the field (BadRequest), never dropped:
load-time options (the deploy sets those), images, `suffix`, `template`, `context`, thinking.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from edgepick.serve.errors import BadRequest

# option → llama-server's field of the same meaning (tools/server/server-task.cpp
# params_from_json_cmpl reads these names)
SAMPLING = {"temperature": "temperature", "top_p": "top_p", "top_k": "top_k", "seed": "seed",
            "stop": "stop", "repeat_penalty": "repeat_penalty", "min_p": "min_p",
            "typical_p": "typical_p", "repeat_last_n": "repeat_last_n",
            "presence_penalty": "presence_penalty", "frequency_penalty": "frequency_penalty",
            "mirostat": "mirostat", "mirostat_tau": "mirostat_tau",
            "mirostat_eta": "mirostat_eta", "num_keep": "n_keep"}
# set when the engine loads (deploy.yaml's runtime), not per request
LOAD_TIME = ("numa", "num_batch", "num_gpu", "main_gpu", "low_vram", "f16_kv", "logits_all",
             "vocab_only", "use_mmap", "use_mlock", "embedding_only", "num_thread")
# llama.cpp's sampler no longer has these (tail-free sampling and the newline exemption)
GONE = ("tfs_z", "penalize_newline")
TOOL_CHOICE_HEADER = "x-edgepick-tool-choice"


def tool_choice(t: "Translated", header: str | None) -> None:
    """Ollama has no `tool_choice`; a client whose model only calls tools when made to (a
    template without tool calls, such as SmolLM2's) sends `x-edgepick-tool-choice: required`
    (or auto, none, or a tool's name), which the official clients set as a header."""
    if not header or "tools" not in t.body or "tool_choice" in t.body:
        return
    header = header.strip()
    t.body["tool_choice"] = header if header in ("auto", "none", "required") else {
        "type": "function", "function": {"name": header}}


@dataclass
class Translated:
    """The OpenAI body, its kind, and what the Ollama request asked of its model."""

    kind: str  # chat | completion
    body: dict
    model: str
    stream: bool
    keep_alive: Any = None
    num_ctx: int | None = None
    notes: list[str] = field(default_factory=list)


def _require_model(raw: dict) -> str:
    model = raw.get("model")
    if model is None or model == "":
        raise BadRequest("model is required", param="model")
    if not isinstance(model, str):
        raise BadRequest("'model' must be a string", param="model")
    return model


def _stream(raw: dict) -> bool:
    stream = raw.get("stream", True)  # Ollama streams unless told not to
    if stream is None:
        return True
    if not isinstance(stream, bool):
        raise BadRequest("'stream' must be true or false", param="stream")
    return stream


def _refuse_fields(raw: dict, fields: dict[str, str]) -> None:
    for name, why in fields.items():
        value = raw.get(name)
        if value not in (None, False, "", [], {}):
            raise BadRequest(f"'{name}' is not supported by this server: {why}", param=name)


def options(raw: dict, body: dict) -> int | None:
    """`options` onto the body; returns num_ctx (the caller caps the prompt by it)."""
    opts = raw.get("options")
    if opts is None:
        return None
    if not isinstance(opts, dict):
        raise BadRequest("'options' must be an object", param="options")
    num_ctx = None
    for name, value in opts.items():
        if value is None:
            continue
        where = f"options.{name}"
        if name in SAMPLING:
            body[SAMPLING[name]] = value
        elif name == "num_predict":
            if isinstance(value, bool) or not isinstance(value, int) or value == 0 \
                    or value < -2:
                raise BadRequest(f"'{where}' must be a positive integer, or -1 (no limit) or -2 "
                                 "(fill the context)", param=where)
            if value > 0:  # -1 and -2: the server's own cap
                body["max_tokens"] = value
        elif name == "num_ctx":
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise BadRequest(f"'{where}' must be a positive integer", param=where)
            num_ctx = value
        elif name in LOAD_TIME:
            raise BadRequest(f"'{where}' is set when the engine loads (deploy.yaml's runtime), "
                             "not per request, on this server", param=where)
        elif name in GONE:
            raise BadRequest(f"'{where}' is not supported: llama.cpp's sampler no longer has it",
                             param=where)
        else:
            raise BadRequest(f"'{where}' is not a known option", param=where)
    return num_ctx


def response_format(fmt: Any) -> dict | None:
    """`format` as `response_format`: "json" any JSON object, a schema that schema."""
    if fmt in (None, ""):
        return None
    if fmt == "json":
        return {"type": "json_object"}
    if isinstance(fmt, dict):
        return {"type": "json_schema", "json_schema": {"name": "format", "schema": fmt}}
    raise BadRequest("'format' must be \"json\" or a JSON schema object", param="format")


def _arguments(args: Any, where: str) -> str:
    if isinstance(args, str):
        return args
    if not isinstance(args, dict):
        raise BadRequest(f"'{where}' must be an object", param=where)
    return json.dumps(args)


def _message(msg: Any, i: int, calls: list[str]) -> dict:
    """One Ollama message as OpenAI's; `calls` holds the ids of the tool calls not yet answered
    (Ollama's tool results name the tool, OpenAI's the call)."""
    where = f"messages[{i}]"
    if not isinstance(msg, dict):
        raise BadRequest(f"'{where}' must be an object", param=where)
    if msg.get("images"):
        raise BadRequest(f"'{where}.images': this server's models take text only", param=where
                         + ".images")
    out = {k: v for k, v in msg.items() if k not in ("images", "thinking", "tool_name",
                                                       "tool_calls")}
    if msg.get("role") == "assistant" and msg.get("tool_calls"):
        tool_calls = msg["tool_calls"]
        if not isinstance(tool_calls, list):
            raise BadRequest(f"'{where}.tool_calls' must be a list", param=f"{where}.tool_calls")
        out["tool_calls"] = []
        for j, call in enumerate(tool_calls):
            fn = call.get("function") if isinstance(call, dict) else None
            if not isinstance(fn, dict):
                raise BadRequest(f"'{where}.tool_calls[{j}].function' is required",
                                 param=f"{where}.tool_calls[{j}].function")
            call_id = call.get("id") or f"call_{i}_{j}"
            calls.append(call_id)
            out["tool_calls"].append({"id": call_id, "type": "function", "function": {
                "name": fn.get("name"),
                "arguments": _arguments(fn.get("arguments", {}),
                                        f"{where}.tool_calls[{j}].function.arguments")}})
        out.setdefault("content", None)
    if msg.get("role") == "tool" and "tool_call_id" not in out and calls:
        out["tool_call_id"] = calls.pop(0)
    return out


def chat(raw: dict) -> Translated:
    model = _require_model(raw)
    _refuse_fields(raw, {"think": "the served models do not think aloud",
                         "logprobs": "ask /v1/chat/completions for log-probabilities",
                         "top_logprobs": "ask /v1/chat/completions for log-probabilities"})
    messages = raw.get("messages")
    if messages is None:
        messages = []
    if not isinstance(messages, list):
        raise BadRequest("'messages' must be a list", param="messages")
    calls: list[str] = []
    body: dict = {"messages": [_message(m, i, calls) for i, m in enumerate(messages)]}
    if raw.get("tools") is not None:
        body["tools"] = raw["tools"]
    # not Ollama's: OpenAI's, honoured (serve/pool/tool_choice.py)
    if raw.get("tool_choice") is not None:
        body["tool_choice"] = raw["tool_choice"]
    fmt = response_format(raw.get("format"))
    if fmt:
        body["response_format"] = fmt
    t = Translated("chat", body, model, _stream(raw), raw.get("keep_alive"))
    t.num_ctx = options(raw, body)
    return t


def generate(raw: dict) -> Translated:
    model = _require_model(raw)
    _refuse_fields(raw, {"suffix": "fill-in-the-middle is not served",
                         "template": "the model's own chat template is used",
                         "context": "send the conversation to /api/chat instead",
                         "images": "this server's models take text only",
                         "think": "the served models do not think aloud",
                         "logprobs": "ask /v1/completions for log-probabilities",
                         "top_logprobs": "ask /v1/completions for log-probabilities"})
    prompt = raw.get("prompt", "")
    if prompt is None:
        prompt = ""
    if not isinstance(prompt, str):
        raise BadRequest("'prompt' must be a string", param="prompt")
    system = raw.get("system")
    if system is not None and not isinstance(system, str):
        raise BadRequest("'system' must be a string", param="system")
    raw_mode = raw.get("raw")
    if raw_mode is not None and not isinstance(raw_mode, bool):
        raise BadRequest("'raw' must be true or false", param="raw")
    fmt = response_format(raw.get("format"))
    if raw_mode:
        if system:
            raise BadRequest("'system' has no place in a raw prompt (no template is applied)",
                             param="system")
        body: dict = {"prompt": prompt}
        if fmt:  # llama-server's completion takes the schema itself
            body["json_schema"] = fmt.get("json_schema", {}).get("schema", {"type": "object"})
        kind = "completion"
    else:
        turns = ([{"role": "system", "content": system}] if system else []) + \
            [{"role": "user", "content": prompt}]
        body = {"messages": turns}
        if fmt:
            body["response_format"] = fmt
        kind = "chat"
    t = Translated(kind, body, model, _stream(raw), raw.get("keep_alive"))
    t.num_ctx = options(raw, body)
    return t
