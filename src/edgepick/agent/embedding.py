"""Embeddings for the agent's memory from the edge model itself or a small embedding GGUF
(seed 004 §4.3): llama.cpp's embedding mode in process, or `/v1/embeddings` of an
OpenAI-compatible server (llama-server started with `--embeddings`)."""

from __future__ import annotations

import httpx
import numpy as np

from edgepick.errors import EdgepickError
from edgepick.records.model_ref import ModelRef


def _normalised(mat: np.ndarray) -> np.ndarray:
    mat = np.asarray(mat, dtype=np.float32)
    return mat / np.maximum(np.linalg.norm(mat, axis=1, keepdims=True), 1e-12)


class GGUFEmbedder:
    """A GGUF loaded in llama.cpp's embedding mode, mean-pooled over the text's tokens."""

    def __init__(self, path: str, n_ctx: int = 512, threads: int = 2) -> None:
        import llama_cpp

        try:
            self.llm = llama_cpp.Llama(model_path=path, embedding=True, n_ctx=n_ctx,
                                       n_batch=n_ctx, n_ubatch=n_ctx, n_threads=threads,
                                       pooling_type=llama_cpp.LLAMA_POOLING_TYPE_MEAN,
                                       verbose=False)
        except (ValueError, RuntimeError) as exc:
            raise EdgepickError(f"{path}: llama.cpp could not load it for embeddings ({exc})") \
                from None
        self.n_ctx = n_ctx

    def embed(self, texts: list[str]) -> np.ndarray:
        rows = []
        for t in texts:
            toks = self.llm.tokenize(t.encode("utf-8"), add_bos=True)[: self.n_ctx]
            # Long texts keep their head: a summary's first tokens carry its subject.
            rows.append(self.llm.embed(self.llm.detokenize(toks).decode("utf-8", "replace")))
        return _normalised(np.array(rows))

    def close(self) -> None:
        self.llm.close()


class EndpointEmbedder:
    """`POST /v1/embeddings` of an OpenAI-compatible server."""

    def __init__(self, url: str, model: str | None, timeout_s: float = 60.0) -> None:
        self.url, self.model = url, model
        self._client = httpx.Client(timeout=timeout_s)

    def embed(self, texts: list[str]) -> np.ndarray:
        try:
            r = self._client.post(f"{self.url}/embeddings",
                                  json={"input": texts, "model": self.model or ""})
        except httpx.HTTPError as exc:
            raise EdgepickError(f"{self.url}/embeddings: request failed ({exc})") from None
        if r.status_code >= 400:
            raise EdgepickError(f"{self.url}/embeddings: HTTP {r.status_code} (start llama-server "
                                f"with --embeddings to serve them): {r.text[:160]}")
        data = sorted(r.json()["data"], key=lambda d: d["index"])
        return _normalised(np.array([d["embedding"] for d in data]))

    def close(self) -> None:
        self._client.close()


def embedder_for(spec: str, threads: int = 2):
    """An embedder for a resolved model locator (a GGUF path or an endpoint)."""
    ref = ModelRef.of(spec)
    if ref.is_endpoint:
        return EndpointEmbedder(ref.url, ref.served_name)
    return GGUFEmbedder(ref.path, threads=threads)
