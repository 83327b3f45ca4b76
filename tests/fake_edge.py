"""A stand-in for serve's engine pool that answers at once, for tests of serve's HTTP surface
(error shapes, validation, CORS, request ids, the contract fuzz test) that need no engine. It
satisfies the router contract's `Edge` protocol; `fail_with` makes it raise one of serve's
errors, `seen` records the bodies it was asked to run."""

from __future__ import annotations

import json
import socket
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

from edgepick.records.candidate import RuntimeSettings
from edgepick.serve.pool.forwarded import wire
from edgepick.serve.metrics import ServeMetrics
from edgepick.serve.router_api import ServedResponse
from edgepick.serve.pool.scoring import EchoLimits


@dataclass
class FakeSpec:
    name: str = "fake-model"
    version: str = "1"
    runtime: RuntimeSettings = field(default_factory=lambda: RuntimeSettings(n_ctx=512))
    slots: int = 2
    embeddings: bool = False  # the pool has an embedding engine (serve's EdgePool.embedder)


def chat_body(text: str = "Hi there.") -> dict:
    return {"id": "c1", "object": "chat.completion", "created": 0, "model": "fake-model",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}


def completion_body(text: str = " there.") -> dict:
    return {"id": "t1", "object": "text_completion", "created": 0, "model": "fake-model",
            "choices": [{"index": 0, "finish_reason": "stop", "text": text}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}


def sse(kind: str, text: str = "Hi there.") -> list[bytes]:
    """The events llama-server sends with include_usage on: text chunks, then the usage chunk."""
    obj = "chat.completion.chunk" if kind == "chat" else "text_completion"
    out = []
    for piece in (text[:3], text[3:]):
        choice = {"index": 0, "finish_reason": None}
        choice.update({"delta": {"content": piece}} if kind == "chat" else {"text": piece})
        out.append({"id": "s1", "object": obj, "created": 0, "model": "fake-model",
                    "choices": [choice]})
    last = {"index": 0, "finish_reason": "stop"}
    last.update({"delta": {}} if kind == "chat" else {"text": ""})
    out.append({"id": "s1", "object": obj, "created": 0, "model": "fake-model", "choices": [last]})
    out.append({"id": "s1", "object": obj, "created": 0, "model": "fake-model", "choices": [],
                "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}})
    return [f"data: {json.dumps(e)}\n\n".encode() for e in out] + [b"data: [DONE]\n\n"]


class FakePool:
    def __init__(self, spec: FakeSpec | None = None) -> None:
        self.spec = spec or FakeSpec()
        self.metrics = ServeMetrics()
        self.ready = True
        self.fail_with: Exception | None = None
        self.seen: list[dict] = []
        self.embedder = self if self.spec.embeddings else None  # its own embedding engine
        self.n_vocab = 64  # a word's token id is its length (tokenize), so ids stay small
        self.embedding_width = 2
        self.status = "ready"  # the pool's word for /health when not ready ("loading" here)
        self.degraded: str | None = None
        self.echo_limits = EchoLimits()
        self.engine = None  # no engine child, so no memory to watch
        self.last_memory = 0

    async def start(self) -> None:
        self.ready = True

    async def aclose(self) -> None:
        self.ready = False

    async def count_tokens(self, text: str) -> int:
        return len(text.split())

    # the engine endpoints' needs (serve/http/engine_api.py): a word is a token, its id its length
    async def tokenize(self, text: str, add_special: bool = True,
                       parse_special: bool = True) -> list[int]:
        return ([1] if add_special else []) + [len(w) for w in text.split()]

    async def detokenize(self, tokens: list[int]) -> str:
        # ids at or over the vocabulary are refused, as the real pool does: "x" * a fuzzed id
        # of 10^12 once grew pytest to ~24 GB (issue 37)
        if any(t >= self.n_vocab for t in tokens):
            from edgepick.serve.router_api import BadRequest

            raise BadRequest(f"'tokens': ids must be below the vocabulary size {self.n_vocab}",
                             param="tokens")
        return " ".join("x" * t for t in tokens)

    async def props(self) -> dict:
        return {"bos_token": "<s>", "eos_token": "</s>", "chat_template": "{{ messages }}"}

    def health(self) -> dict:
        return {"ready": self.ready, "status": "ready" if self.ready else "loading"}

    async def slot_use(self) -> dict:
        return {"slots": self.spec.slots, "busy": 0, "waiting": 0, "busy_after": 0,
                "engine_processing": 0, "engine_deferred": 0, "engine_tokens_predicted": 0}

    async def forward(self, kind: str, body: dict, stream: bool,
                      deadline: float) -> ServedResponse:
        self.seen.append(dict(wire(body), stream=stream))  # as the engine would read it
        if self.fail_with is not None:
            raise self.fail_with
        head = {"x-edgepick-model-version": f"{self.spec.name}@{self.spec.version}"}
        if kind == "embedding":
            return ServedResponse(body={"object": "list", "model": self.spec.name, "data": [
                {"object": "embedding", "index": 0, "embedding": [0.1, 0.2]}]}, headers=head)
        if not stream:
            return ServedResponse(body=chat_body() if kind == "chat" else completion_body(),
                                  headers=head)
        events = sse(kind)

        async def chunks():
            for e in events:
                yield e

        gen = chunks()
        return ServedResponse(chunks=gen, headers=head, _closer=gen.aclose)


def make_app(settings: dict | None = None, deploy=None, router=None, pool: FakePool | None = None,
             test_headers: bool = False):
    """(app, pool) for a server on the fake pool."""
    from edgepick.serve.http.app import ServeState, create_app
    from edgepick.serve.settings import ServeSettings

    pool = pool or FakePool()
    state = ServeState(pool, ServeSettings(**(settings or {})), router, deploy=deploy,
                       test_headers=test_headers)
    return create_app(state), pool


@contextmanager
def running(app) -> Iterator[int]:
    """The app under uvicorn as serve runs it (its protocol: serve/run.py) on a free loopback
    port, in a thread; an app that is not serve's (a stand-in cloud) with serve's defaults."""
    import uvicorn

    from edgepick.serve.run import server_config
    from edgepick.serve.settings import ServeSettings

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    settings = getattr(app.state, "serve_settings", None) or ServeSettings()
    server = uvicorn.Server(server_config(app, settings))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    end = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < end, "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def raw_exchange(port: int, data: bytes, timeout: float = 5.0) -> bytes:
    """`data` sent as it is to the server on `port`; everything it answers until it closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        out = b""
        try:
            while chunk := s.recv(65536):
                out += chunk
        except (socket.timeout, ConnectionResetError):
            pass
    return out
