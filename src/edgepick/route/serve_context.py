"""The context builder inside `serve`: chat requests over the budget are cut down by priority
before they reach the edge (seed 004 §4.2, §6.5), counted with the serving llama-server's own
tokenizer; what was dropped goes into the `x-edgepick-context` header and the metrics."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import httpx
from prometheus_client import Counter, Gauge, Histogram

from edgepick.errors import EdgepickError
from edgepick.route.context import ContextBuilder, ContextOverflow, ServerTokenizer, Snippet


@dataclass
class Fitted:
    input_share: float | None  # the whole request's prompt tokens / the window
    header: str | None = None  # set when something was cut
    overflow: str | None = None  # the always-kept parts alone exceed the budget


class ContextFitter:
    def __init__(self, budget_share: float | None) -> None:
        self.budget_share = budget_share
        self._tokenizers: dict[str, ServerTokenizer] = {}
        self._registry = None
        self.m: dict = {}

    def bind(self, registry) -> None:
        """Register the context and confidence metrics once, on the server's own registry."""
        if self._registry is registry:
            return

        self._registry = registry
        self.m = {
            "fitted": Counter("edgepick_context_truncations", "Chat requests cut down to the "
                              "context budget", registry=registry),
            "dropped": Counter("edgepick_context_dropped", "Pieces left out by the context "
                               "builder", ["what"], registry=registry),
            "confidence": Histogram("edgepick_edge_confidence", "Edge confidence of judged "
                                    "answers (cascade)", buckets=[i / 10 for i in range(1, 11)],
                                    registry=registry),
            "signals": Gauge("edgepick_route_device_signal", "Device signals as the router "
                             "last read them (battery %, °C, PSI)", ["signal"], registry=registry),
        }

    def observe_confidence(self, conf: float | None) -> None:
        if conf is not None and self.m:
            self.m["confidence"].observe(conf)

    def _tokenizer(self, edge) -> ServerTokenizer | None:
        engine = getattr(edge, "engine", None)
        if engine is None or not edge.ready:
            return None
        if engine.base not in self._tokenizers:
            for t in self._tokenizers.values():
                t.close()
            # the engine is locked (serve/engine/llama_server.py): its key comes with it
            self._tokenizers = {engine.base: ServerTokenizer(engine.base, headers=engine.auth)}
        return self._tokenizers[engine.base]

    async def fit(self, kind: str, body: dict, extra: dict, edge) -> tuple[dict, Fitted | None]:
        """(the body for the edge, what was measured and cut) — the body unchanged when the
        builder is off, the engine is not ready to count, or the request is a completion."""
        if self.budget_share is None or kind != "chat" or not body.get("messages"):
            return body, None
        tok = self._tokenizer(edge)
        if tok is None:
            return body, None
        window = edge.spec.runtime.n_ctx
        builder = ContextBuilder(tok, window, self.budget_share)
        snippets = [Snippet(str(s.get("text", "")), float(s.get("score", 0.0)), s.get("source"))
                    for s in extra.get("snippets") or [] if isinstance(s, dict)]
        try:
            res = await asyncio.to_thread(builder.fit_messages, body["messages"], snippets,
                                          extra.get("summary"))
        except ContextOverflow as exc:
            return body, Fitted(None, overflow=str(exc))
        except (httpx.HTTPError, EdgepickError, KeyError, ValueError):
            return body, None  # cannot count now (engine restarting): send as it is
        fitted = Fitted(res.full_tokens / window)
        if res.changed:
            fitted.header = res.header()
            self.m["fitted"].inc()
            self.m["dropped"].labels("turns").inc(res.dropped_turns)
            self.m["dropped"].labels("snippets").inc(res.dropped_snippets)
        if res.changed or snippets or extra.get("summary"):
            body = dict(body, messages=res.messages)
        return body, fitted

    def close(self) -> None:
        for t in self._tokenizers.values():
            t.close()
        self._tokenizers = {}
