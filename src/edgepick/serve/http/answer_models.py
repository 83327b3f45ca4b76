"""The answers serve gives, as pydantic models, for /openapi.json and the contract test (what
serve/request_models.py is for requests)."""

from __future__ import annotations

from typing import Any, Literal, Union

from edgepick.serve.request_models import ToolCall, _Closed, _Open


class Usage(_Open):
    prompt_tokens: int
    completion_tokens: int = 0
    total_tokens: int


class ChatMessageOut(_Open):
    role: Literal["assistant"]
    content: str | None = None
    tool_calls: list[ToolCall] | None = None


class _Choice(_Open):
    index: int
    finish_reason: str | None = None
    logprobs: dict[str, Any] | None = None


class _Answer(_Open):
    """What a chat completion and a text completion share."""

    id: str
    created: int
    model: str
    usage: Usage | None = None


class ChatChoice(_Choice):
    message: ChatMessageOut


class ChatCompletion(_Answer):
    object: Literal["chat.completion"]
    choices: list[ChatChoice]


class CompletionChoice(_Choice):
    text: str


class Completion(_Answer):
    object: Literal["text_completion"]
    choices: list[CompletionChoice]


class Embedding(_Open):
    object: Literal["embedding"]
    index: int
    embedding: list[float] | str


class EmbeddingList(_Open):
    object: Literal["list"]
    data: list[Embedding]
    model: str
    usage: Usage | None = None


class ModelCard(_Open):
    id: str
    object: Literal["model"]
    created: int
    owned_by: str
    version: str | None = None
    # a team's member (serve/pool/team.py): loaded, unloaded, loading, unloading, or its engine's
    # own restarting/unresponsive/failed; pinned; the need counted against the budget
    state: str | None = None
    pinned: bool | None = None
    need_bytes: int | None = None


class ModelList(_Closed):
    object: Literal["list"]
    data: list[ModelCard]


class ErrorBody(_Closed):
    message: str
    type: str
    param: str | None
    code: str | None


class ErrorResponse(_Closed):
    error: ErrorBody


NotReady = Literal["loading", "unresponsive", "restarting", "failed", "stopped"]
NOT_READY: tuple[str, ...] = NotReady.__args__  # type: ignore[attr-defined]


class Health(_Open):
    """`/health`: 200 `ok` (with `detail` when degraded: serving, no longer restarting), or 503
    with the reason the engine is not ready."""

    status: Union[Literal["ok"], NotReady]
    model: str | None = None
    version: str | None = None
    detail: str | None = None


class TokenizeAnswer(_Open):
    tokens: list[int]
    count: int
    max_model_len: int


class DetokenizeAnswer(_Open):
    prompt: str
    content: str


class TokenizerInfo(_Open):
    """`/tokenizer_info` (what lm-eval's RemoteTokenizer reads): every key always sent."""

    model: str
    bos_token: str | None
    eos_token: str | None
    pad_token: str | None
    chat_template: str | None
    max_model_len: int


class Readiness(_Open):
    """`/health/ready`: ready or not, and why."""

    ready: bool
    status: str
    detail: str | None = None
    embeddings: dict[str, Any] | None = None  # the embedding engine's own readiness


class Liveness(_Closed):
    status: Literal["alive"]


class SlotUse(_Open):
    slots: int
    busy: int
    waiting: int
    busy_after: int
    engine_processing: int
    engine_deferred: int
    engine_tokens_predicted: int


class FeedbackAnswer(_Closed):
    request_id: str
    rating: Literal["up", "down"]
    counted: bool
    sampled: bool
    badcase: bool
