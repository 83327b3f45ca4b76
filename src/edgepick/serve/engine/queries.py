"""What the pool asks its serving engine besides generation (serve/pool/edge.py's EdgePool owns
one over its supervisor): the tokenizer, the model's props and sizes, and the engine's own slot
counters. Each needs a ready engine and answers 503 at once otherwise."""

from __future__ import annotations

import httpx

from edgepick.backends import llama_server_client as lsc
from edgepick.errors import EdgepickError
from edgepick.serve.engine.process import EngineProcess
from edgepick.serve.engine.supervisor import EngineSupervisor
from edgepick.serve.router_api import BadRequest, EngineUnavailable


class EngineQueries:
    def __init__(self, supervisor: EngineSupervisor) -> None:
        self.supervisor = supervisor

    async def count_tokens(self, text: str) -> int:
        """Tokens of `text` by the serving model's own tokenizer (llama-server's /tokenize)."""
        return len(await self.tokenize(text))

    async def tokenize(self, text: str, add_special: bool = True,
                       parse_special: bool = True) -> list[int]:
        engine = await self.supervisor.ready_engine()
        try:
            return await lsc.atokenize(engine.client, text, add_special, parse_special)
        except (httpx.HTTPError, EdgepickError) as exc:
            raise EngineUnavailable(f"engine unavailable ({type(exc).__name__})",
                                    retry_after=2) from None

    async def detokenize(self, tokens: list[int]) -> str:
        engine = await self.supervisor.ready_engine()
        try:
            # llama-server answers an id outside the vocabulary with a 500: the client's 400
            vocab = await self._vocab_size(engine)
            if vocab and any(t >= vocab for t in tokens):
                raise BadRequest(f"'tokens': ids must be below the vocabulary size {vocab}",
                                 param="tokens")
            return await lsc.adetokenize(engine.client, tokens)
        except (httpx.HTTPError, EdgepickError) as exc:
            raise EngineUnavailable(f"engine unavailable ({type(exc).__name__})",
                                    retry_after=2) from None

    async def _vocab_size(self, engine: EngineProcess) -> int | None:
        """The served model's vocabulary size, read by the engine when it started."""
        if engine.n_vocab is None:
            await engine._read_meta()
        return engine.n_vocab

    @property
    def n_vocab(self) -> int | None:
        engine = self.supervisor.engine
        return engine.n_vocab if engine is not None else None

    @property
    def embedding_width(self) -> int | None:
        """An embedding engine's vector width (its model's n_embd)."""
        engine = self.supervisor.engine
        return engine.n_embd if engine is not None and self.supervisor.spec.pooling else None

    async def props(self) -> dict:
        engine = await self.supervisor.ready_engine()
        return await lsc.aprops(engine.client) or {}

    async def engine_slot_use(self, engine: EngineProcess) -> dict:
        """The engine's own slot counters (its /metrics), read at once."""
        try:
            return await engine.slot_use()
        except (httpx.HTTPError, EdgepickError) as exc:
            raise EngineUnavailable(f"engine unavailable ({type(exc).__name__})",
                                    retry_after=2) from None
