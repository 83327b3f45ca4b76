"""What serve's pool needs of an engine (serve/pool/edge.py, serve/engine/supervisor.py,
serve/engine/watchdog.py): a child process that serves the OpenAI HTTP API on loopback,
started, probed, measured, drained and stopped. llama-server is one implementation
(serve/engine/llama_server.py's `LlamaServer`); another engine is one class satisfying
`EngineProcess`, given to the pool as its `engine_factory`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Protocol

import httpx

from edgepick.launch.process import AsyncChild
from edgepick.records.candidate import RuntimeSettings


@dataclass(frozen=True)
class EngineSpec:
    """What one engine runs: a verified GGUF under a served name and version, with settings."""

    path: str
    name: str  # the model id clients see in /v1/models
    version: str = "1"
    runtime: RuntimeSettings = field(default_factory=RuntimeSettings)
    slots: int = 2
    # set: an embedding engine (llama-server --embeddings --pooling P, serving /v1/embeddings)
    pooling: str | None = None


class EngineProcess(Protocol):
    spec: EngineSpec
    client: httpx.AsyncClient | None  # the engine's OpenAI HTTP API, while it runs
    proc: AsyncChild | None
    stopping: bool  # a stop or a drain has begun: no new work
    n_vocab: int | None  # read once it is healthy (token ids are checked against it)
    n_embd: int | None

    @property
    def alive(self) -> bool: ...

    @property
    def pid(self) -> int | None: ...

    async def start(self, timeout_s: float = 120.0) -> None: ...

    def log_tail(self, n: int = 3) -> str: ...

    def memory_bytes(self) -> int:
        """What the process tree holds that the kernel cannot drop (the watchdog's figure)."""

    async def probe(self, timeout_s: float) -> bool:
        """Does the main loop answer (not only an HTTP thread)?"""

    async def slot_use(self, timeout_s: float = 5.0) -> dict[str, int]: ...

    async def loop_state(self, timeout_s: float) -> dict[str, int] | None:
        """`slot_use` from the engine's own counters, or None when its main loop is silent."""

    def begin(self) -> None: ...

    def end(self) -> None: ...

    async def drain(self, timeout_s: float, abort: Callable[[], bool] | None = None) -> bool: ...

    async def stop(self, grace_s: float = 5.0, abort: Callable[[], bool] | None = None) -> None:
        """SIGTERM, then SIGKILL after the grace: a wedged engine never acts on SIGTERM."""
