"""How tools are put in front of a model: its own chat template when that template knows tools,
otherwise one documented JSON-call format, identical for every candidate (seed 004 §4.1, §6.4).

The JSON-call format (docs/agent.md) adds a block to the system message listing each tool as a
JSON line and asking for exactly `{"name": "<tool>", "arguments": {...}}` to call one, or plain
text when no tool is needed. A template "knows tools" when it reads the `tools` variable (the
Hugging Face convention llama.cpp and llama-cpp-python follow); it is then rendered with the
tools and sent as a raw prompt, so the model sees the format it was trained on.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Literal

import httpx

from edgepick.backends import llama_server_client as lsc
from edgepick.errors import EdgepickError
from edgepick.models.gguf_info import read_gguf
from edgepick.records.model_ref import ModelRef

FORMAT_VERSION = "1"  # bump when the JSON-call wording changes: stored outputs are then stale
_TOOLS_VAR = re.compile(r"\btools\b")

JSON_CALL_HEADER = "You can call the following tools. Each is described by one JSON line:"
JSON_CALL_RULES = (
    "To call a tool, reply with only one JSON object and no other text:\n"
    '{"name": "<tool name>", "arguments": {<arguments as the tool\'s parameters describe>}}\n'
    "If no tool is needed, answer the user directly in plain text, without any JSON.")


def tool_lines(tools: list[dict]) -> str:
    rows = []
    for t in tools:
        fn = t.get("function", t)
        rows.append(json.dumps({"name": fn["name"], "description": fn.get("description", ""),
                                "parameters": fn.get("parameters", {})}, ensure_ascii=False))
    return "\n".join(rows)


def json_call_messages(messages: list[dict], tools: list[dict]) -> list[dict]:
    """The conversation with the tool block added to (or as) the system message."""
    block = f"{JSON_CALL_HEADER}\n{tool_lines(tools)}\n\n{JSON_CALL_RULES}"
    msgs = [dict(m) for m in messages]
    if msgs and msgs[0]["role"] == "system":
        msgs[0]["content"] = f"{msgs[0]['content']}\n\n{block}"
    else:
        msgs.insert(0, {"role": "system", "content": block})
    return msgs


def template_supports_tools(template: str | None) -> bool:
    return bool(template) and bool(_TOOLS_VAR.search(template))


def _gguf_template(path: str) -> tuple[str | None, str]:
    reader = read_gguf(path)
    f = reader.fields.get("tokenizer.chat_template")
    template = f.contents() if f is not None else None
    eos = ""
    if template_supports_tools(template):
        eos_f = reader.fields.get("tokenizer.ggml.eos_token_id")
        tok_f = reader.fields.get("tokenizer.ggml.tokens")
        if eos_f is not None and tok_f is not None:
            eos = tok_f.contents()[int(eos_f.contents())]
    return template, eos


def _endpoint_template(url: str) -> tuple[str | None, str]:
    with httpx.Client(timeout=10) as client:
        props = lsc.props(client, lsc.root_of(url))
    if props is None:
        return None, ""  # a server without /props: its template is unknown, use the JSON format
    return props.get("chat_template"), props.get("eos_token") or ""


@dataclass
class ToolPrompter:
    """Builds the prompt for one model: `build(messages, tools)` → (prompt, chat)."""

    mode: Literal["native", "json"]
    template: str | None = None
    eos_token: str = ""

    @classmethod
    def for_model(cls, locator: str, backend: str | None = None,
                  force: Literal["native", "json"] | None = None) -> "ToolPrompter":
        ref = ModelRef.of(locator, backend=backend)
        template, eos = (_endpoint_template(ref.url) if ref.is_endpoint
                         else _gguf_template(ref.path) if str(ref.path).endswith(".gguf")
                         else (None, ""))
        native = template_supports_tools(template)
        if force == "native" and not native:
            raise EdgepickError(f"{locator}: the model's chat template does not take tools")
        mode = force or ("native" if native else "json")
        return cls(mode=mode, template=template if mode == "native" else None, eos_token=eos)

    def build(self, messages: list[dict], tools: list[dict]) -> tuple[str | list[dict], bool]:
        if not tools:
            return messages, True
        if self.mode == "json":
            return json_call_messages(messages, tools), True
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        # No BOS in the text: the engine adds it when the vocabulary asks for one.
        fmt = Jinja2ChatFormatter(template=self.template, eos_token=self.eos_token, bos_token="")
        try:
            return fmt(messages=messages, tools=tools).prompt, False
        except Exception as exc:  # noqa: BLE001 - a template's own raise_exception() lands here
            raise EdgepickError(f"the model's chat template failed with tools: {exc}") from None
