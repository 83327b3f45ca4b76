"""OpenAI's request and response types as pydantic models: what `/v1/chat/completions`,
`/v1/completions` and `/v1/embeddings` accept (types, ranges, finite numbers) and what they
answer, so a bad field is a 400 that names it and `/openapi.json` states the real contract.

Fields llama-server adds (top_k, repeat_penalty, min_p, …) and edgepick's own (`metadata`,
`edgepick_context`) are allowed; numbers among them are still checked finite by the JSON reader.
Strict types where OpenAI is strict: `"stream": "false"` is not a boolean.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr

Finite = Annotated[float, Field(allow_inf_nan=False, strict=True)]  # ints pass, strings not


# llama-server fields that would pick a slot, save state or load adapters: never from a client
ENGINE_ONLY_FIELDS = ("id_slot", "slot_id", "lora", "slot_save_path", "filename")
# the schema says so too: other fields pass through, these never
_NO_ENGINE_FIELDS = {"not": {"anyOf": [{"required": [f]} for f in ENGINE_ONLY_FIELDS]}}


class _Open(BaseModel):
    # llama-server's own sampling fields and edgepick's extensions pass through
    model_config = ConfigDict(extra="allow")


class _Request(BaseModel):
    model_config = ConfigDict(extra="allow", json_schema_extra=_NO_ENGINE_FIELDS)


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TextPart(_Closed):
    type: Literal["text"]
    text: StrictStr


class Function(_Open):
    name: StrictStr = Field(min_length=1, max_length=256)
    description: StrictStr | None = None
    parameters: dict[str, Any] | None = None
    strict: StrictBool | None = None


class Tool(_Closed):
    type: Literal["function"]
    function: Function


class FunctionCall(_Open):
    name: StrictStr
    arguments: StrictStr


class ToolCall(_Open):
    id: StrictStr | None = None
    type: Literal["function"] = "function"
    function: FunctionCall


Content = Union[StrictStr, list[TextPart]]


class SystemMessage(_Open):
    role: Literal["system"]
    content: Content
    name: StrictStr | None = None


class DeveloperMessage(SystemMessage):
    # its own class: one role per branch of the union, so a schema reader (schemathesis'
    # negative data) never takes a two-valued role enum for a tag
    role: Literal["developer"]  # type: ignore[assignment]


class UserMessage(_Open):
    role: Literal["user"]
    content: Content
    name: StrictStr | None = None


class AssistantMessage(_Open):
    role: Literal["assistant"]
    content: Content | None = None
    name: StrictStr | None = None
    tool_calls: list[ToolCall] | None = None
    reasoning_content: StrictStr | None = None


class ToolMessage(_Open):
    role: Literal["tool"]
    content: Content
    tool_call_id: StrictStr | None = None


Message = Annotated[Union[SystemMessage, DeveloperMessage, UserMessage, AssistantMessage,
                          ToolMessage],
                    Field(discriminator="role")]


class NamedFunction(_Closed):
    name: StrictStr


class NamedToolChoice(_Closed):
    type: Literal["function"]
    function: NamedFunction


class JsonSchemaFormat(_Open):
    name: StrictStr | None = None
    schema_: dict[str, Any] | None = Field(None, alias="schema")
    strict: StrictBool | None = None


class ResponseFormat(_Open):
    type: Literal["text", "json_object", "json_schema"]
    json_schema: JsonSchemaFormat | None = None
    schema_: dict[str, Any] | None = Field(None, alias="schema")  # llama-server's own form


class StreamOptions(_Open):
    include_usage: StrictBool | None = None


Stop = Union[StrictStr, Annotated[list[StrictStr], Field(max_length=16)], None]
# llama.cpp reads the repeat penalty as a float32 and refuses one that is not finite, not above
# 0, or whose inverse is not finite (common/sampling.cpp, common_sampler_init): the smallest
# normal float32 up to the largest
FLOAT32_TINY = 1.1754943508222875e-38
FLOAT32_MAX = 3.4028234663852886e38


class _Sampling(_Request):
    """The fields both generation endpoints share."""

    model: StrictStr | None = None  # a label only: the server serves its own model
    max_tokens: Annotated[StrictInt, Field(ge=0)] | None = None
    stream: StrictBool = False
    stream_options: StreamOptions | None = None
    temperature: Annotated[Finite, Field(ge=0, le=2)] | None = None
    top_p: Annotated[Finite, Field(ge=0, le=1)] | None = None
    top_k: Annotated[StrictInt, Field(ge=0)] | None = None
    min_p: Annotated[Finite, Field(ge=0, le=1)] | None = None
    repeat_penalty: Annotated[Finite, Field(ge=FLOAT32_TINY, le=FLOAT32_MAX)] | None = None
    presence_penalty: Annotated[Finite, Field(ge=-2, le=2)] | None = None
    frequency_penalty: Annotated[Finite, Field(ge=-2, le=2)] | None = None
    n: Annotated[StrictInt, Field(ge=1, le=128)] | None = None
    seed: StrictInt | None = None
    stop: Stop = None
    logit_bias: dict[str, Finite] | None = None
    user: StrictStr | None = None
    metadata: dict[str, Any] | None = None
    # llama-server's names (common_reasoning_format_from_name); another is the client's 400
    reasoning_format: Literal["none", "auto", "deepseek", "deepseek-legacy"] | None = None


# top_logprobs only with logprobs: true (as OpenAI has it; llama-server refuses it otherwise)
_TOP_NEEDS_LOGPROBS = {
    "if": {"required": ["top_logprobs"], "properties": {"top_logprobs": {"type": "integer"}}},
    "then": {"required": ["logprobs"], "properties": {"logprobs": {"const": True}}}}


# llama-server refuses logprobs with tools on a stream ("not supported with tools + stream")
_NO_LOGPROBS_WITH_TOOLS_STREAMED = {
    "if": {"required": ["stream", "tools"], "properties": {
        "stream": {"const": True}, "tools": {"type": "array", "minItems": 1}}},
    "then": {"not": {"required": ["logprobs"], "properties": {"logprobs": {"const": True}}}}}


# llama-server continues a final assistant message (server-common.cpp, prefill_assistant) and
# refuses one with tool calls, or two assistant messages at the end (OpenAI also wants a tool
# call answered). JSON Schema cannot name a list's last item, so the rule is a keyword of its
# own, which the contract fuzz reads (tests/serve_fuzz_hooks.py)
LAST_MESSAGE = "x-edgepick-last-message"
LAST_MESSAGE_RULE = "not an assistant message with tool_calls, nor after another assistant one"


class ChatCompletionRequest(_Sampling):
    model_config = ConfigDict(extra="allow", json_schema_extra=dict(
        allOf=[_TOP_NEEDS_LOGPROBS, _NO_LOGPROBS_WITH_TOOLS_STREAMED],
        **{LAST_MESSAGE: LAST_MESSAGE_RULE}, **_NO_ENGINE_FIELDS))
    messages: Annotated[list[Message], Field(min_length=1)]
    max_tokens: Annotated[StrictInt, Field(ge=1)] | None = None
    max_completion_tokens: Annotated[StrictInt, Field(ge=1)] | None = None
    logprobs: StrictBool | None = None
    top_logprobs: Annotated[StrictInt, Field(ge=0, le=20)] | None = None
    tools: list[Tool] | None = None
    tool_choice: Union[Literal["none", "auto", "required"], NamedToolChoice, None] = None
    parallel_tool_calls: StrictBool | None = None
    response_format: ResponseFormat | None = None


TokenIds = Annotated[list[Annotated[StrictInt, Field(ge=0)]], Field(min_length=1)]
Prompt = Union[StrictStr, Annotated[list[StrictStr], Field(min_length=1)], TokenIds,
               Annotated[list[TokenIds], Field(min_length=1)]]


# max_tokens 0 is lm-eval's "score the prompt, write nothing": only with echo
_ZERO_ONLY_WITH_ECHO = {
    "if": {"required": ["echo"], "properties": {"echo": {"const": True}}},
    "else": {"properties": {"max_tokens": {"anyOf": [{"type": "integer", "minimum": 1},
                                                     {"type": "null"}]}}}}


# llama-server runs a prompt's n > 1 completions in child slots that wait for the parent slot
# to read the prompt; an empty prompt is released unread (server-context.cpp, "empty prompt -
# releasing slot") and its children wait forever, holding their slots, until serve restarts the
# engine as hung (schemathesis seed 1201): with n > 1 no prompt is empty (an echo is scored by
# serve, not by the engine)
_NO_EMPTY_PROMPT_WITH_N = {
    "if": {"required": ["n"], "properties": {"n": {"type": "integer", "minimum": 2}},
           "not": {"required": ["echo"], "properties": {"echo": {"const": True}}}},
    "then": {"properties": {"prompt": {"not": {"anyOf": [
        {"const": ""}, {"type": "array", "contains": {"const": ""}}]}}}}}


class CompletionRequest(_Sampling):
    model_config = ConfigDict(extra="allow", json_schema_extra=dict(
        _ZERO_ONLY_WITH_ECHO, allOf=[_NO_EMPTY_PROMPT_WITH_N], **_NO_ENGINE_FIELDS))
    prompt: Prompt
    echo: StrictBool | None = None
    logprobs: Annotated[StrictInt, Field(ge=0, le=20)] | None = None
    suffix: StrictStr | None = None
    best_of: Annotated[StrictInt, Field(ge=1, le=1)] | None = None


# an embedding of nothing is refused by the engine (and by OpenAI): the schema says so
Text = Annotated[StrictStr, Field(min_length=1)]
EmbeddingInput = Union[Text, Annotated[list[Text], Field(min_length=1)], TokenIds,
                       Annotated[list[TokenIds], Field(min_length=1)]]


# a text input the model's tokenizer turns into no token at all (only characters it drops, such
# as "\x04" for SmolLM2) is an embedding of nothing too; JSON Schema cannot count tokens, so the
# schema states the rule as a keyword of its own, and serve answers 400 `empty_input` naming it
MIN_INPUT_TOKENS = "x-edgepick-min-input-tokens"


class EmbeddingRequest(_Request):
    model_config = ConfigDict(extra="allow",
                              json_schema_extra=dict(**{MIN_INPUT_TOKENS: 1}, **_NO_ENGINE_FIELDS))
    input: EmbeddingInput
    model: StrictStr | None = None
    encoding_format: Literal["float", "base64"] | None = None
    dimensions: Annotated[StrictInt, Field(ge=1)] | None = None
    user: StrictStr | None = None


class TokenizeRequest(_Open):
    """`/tokenize`: vLLM's shape (lm-eval's RemoteTokenizer) or llama-server's: the text as
    `prompt` (or `content`), flags true or false (none is null)."""

    model_config = ConfigDict(extra="allow", json_schema_extra={
        "anyOf": [{"required": ["prompt"]}, {"required": ["content"]}]})
    # not nullable: absent is the default, null is refused (what the schema says is what runs)
    prompt: StrictStr = Field(None, validate_default=False)  # type: ignore[assignment]
    content: StrictStr = Field(None, validate_default=False)  # type: ignore[assignment]
    add_special_tokens: StrictBool = Field(None, validate_default=False)  # type: ignore
    add_special: StrictBool = Field(None, validate_default=False)  # type: ignore
    parse_special: StrictBool = Field(None, validate_default=False)  # type: ignore


class DetokenizeRequest(_Open):
    tokens: list[Annotated[StrictInt, Field(ge=0)]]


class FeedbackBody(_Closed):
    """`/v1/feedback`: a user's rating of the answer with this `x-request-id`."""

    request_id: str = Field(min_length=1, max_length=200, pattern=r"^[\x21-\x7e]+$")
    rating: Literal["up", "down"]
    reason: str | None = Field(None, max_length=2000)


REQUEST_MODELS: dict[str, type[BaseModel]] = {"chat": ChatCompletionRequest,
                                              "completion": CompletionRequest,
                                              "embedding": EmbeddingRequest}
# what the handlers check and the pool forwards: the engine receives it as JSON, once
OpenAIRequest = Union[ChatCompletionRequest, CompletionRequest, EmbeddingRequest]


def value(request: BaseModel | dict, name: str) -> Any:
    """A request's field by its JSON name, declared or passed through (None when absent), for
    code that reads the same field of every endpoint's request (`n`, `prompt`, `max_tokens`)."""
    if isinstance(request, dict):
        return request.get(name)
    if name in type(request).model_fields:
        return getattr(request, name)
    return (request.model_extra or {}).get(name)
