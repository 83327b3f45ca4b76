"""Block influence (ShortGPT, Men et al. 2024): 1 − the mean cosine similarity of a block's input
and output hidden states over the tokens of a text, read from the pinned llama.cpp.

llama.cpp hands out the last hidden state only, after the output norm (`t_embd` in its graph,
the embeddings API with pooling none). So block k's output is read from a measurement copy of
the model cut after block k whose output norm weights are all 1: RMS norm then only rescales
each token's vector, and a cosine does not see a scale. The input of block 0 is the token's row
of the embedding matrix (any constant scale, as Gemma's √d, drops out the same way). Cost: one
copy and one forward pass per block, the copy growing with the depth.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import gguf
import numpy as np

from edgepick.errors import EdgepickError
from edgepick.evaluate.fidelity import plan_chunks, read_text
from edgepick.models.gguf_info import read_gguf
from edgepick.models.gguf_rewrite import rewrite_gguf
from edgepick.progress import ProgressEvent, Tick
from edgepick.prune.build import build


def _unit_output_norm(tensor: Any):
    if tensor.name != "output_norm.weight":
        return None
    return np.ones(int(tensor.n_elements), dtype=np.float32), gguf.GGMLQuantizationType.F32


def _embedding_rows(reader: Any, tokens: np.ndarray) -> np.ndarray:
    t = next(t for t in reader.tensors if t.name == "token_embd.weight")
    rows = np.asarray(t.data)[tokens]
    if t.tensor_type in (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16):
        return rows.astype(np.float32)
    return gguf.quants.dequantize(rows, t.tensor_type).astype(np.float32)


def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    num = np.einsum("ij,ij->i", a.astype(np.float64), b.astype(np.float64))
    den = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return num / np.maximum(den, 1e-30)


class _Hidden:
    """One measurement copy loaded for its last hidden state of every token."""

    def __init__(self, path: str, ctx: int, threads: int, pooled: bool = False) -> None:
        import llama_cpp  # the engine, only where hidden states are read

        # every token's state (pooling none). Unspecified gives that for a model that states no
        # pooling (src/llama-context.cpp), without the warning an explicit none prints per load
        pooling = llama_cpp.LLAMA_POOLING_TYPE_NONE if pooled else \
            llama_cpp.LLAMA_POOLING_TYPE_UNSPECIFIED
        try:
            self.llm = llama_cpp.Llama(
                model_path=path, n_ctx=ctx, n_batch=ctx, n_ubatch=ctx, n_threads=threads,
                n_threads_batch=threads, embedding=True, verbose=False, pooling_type=pooling)
        except (ValueError, RuntimeError) as exc:
            raise EdgepickError(f"{path}: llama.cpp could not load the measurement copy ({exc})")
        self.n_embd = self.llm.n_embd()

    def states(self, tokens: list[int]) -> np.ndarray:
        import llama_cpp

        llm = self.llm
        llm._ctx.kv_cache_clear()
        llm._batch.set_batch(tokens, n_past=0, logits_all=True)
        llm._ctx.decode(llm._batch)
        ptr = llama_cpp.llama_get_embeddings(llm._ctx.ctx)
        return np.ctypeslib.as_array(ptr, shape=(len(tokens) * self.n_embd,)).reshape(
            len(tokens), self.n_embd).copy()

    def close(self) -> None:
        self.llm.close()


def tokenize(src: str, text: str | Path, ctx: int, chunks: int | None) -> list[np.ndarray]:
    """The text cut into chunks of `ctx` tokens the way the fidelity measurement cuts it."""
    import llama_cpp

    llm = llama_cpp.Llama(model_path=src, vocab_only=True, verbose=False)
    try:
        toks = llm.tokenize(read_text(text).encode("utf-8"), add_bos=True, special=False)
        add_bos = llm._model.add_bos_token()
        bos = llm.token_bos()
    finally:
        llm.close()
    return plan_chunks(toks, ctx, add_bos, bos, chunks)


def block_influence(src: str, text: str | Path, *, ctx: int = 256, chunks: int | None = 4,
                    threads: int = 2, progress: Tick | None = None,
                    work_dir: str | None = None) -> tuple[list[float], int]:
    """(influence of each block, tokens averaged over). Position 0 (BOS) is left out: its
    state is an attention sink whose norm dwarfs the others in many models."""
    reader = read_gguf(src)
    arch = reader.fields["general.architecture"].contents()
    n = int(reader.fields[f"{arch}.block_count"].contents())
    pieces = tokenize(src, text, ctx, chunks)
    if not pieces:
        raise EdgepickError(f"{text}: too short for one chunk of {ctx} tokens")
    prev = [_embedding_rows(reader, p)[1:] for p in pieces]
    tmp = Path(tempfile.mkdtemp(prefix="edgepick-influence-", dir=work_dir))
    out: list[float] = []
    try:
        for k in range(1, n + 1):
            if progress:
                progress(ProgressEvent(k - 1, n, f"hidden states after block {k - 1}"))
            probe = tmp / "probe.gguf"
            if k < n:
                build(src, probe, list(range(k, n)), transform=_unit_output_norm,
                      probe="influence", reader=reader, source_sha256="-")
            else:
                rewrite_gguf(reader, probe, transform=_unit_output_norm)
            h = _Hidden(str(probe), ctx, threads, pooled=f"{arch}.pooling_type" in reader.fields)
            try:
                cur = [h.states(p.tolist())[1:] for p in pieces]
            finally:
                h.close()
            probe.unlink()
            out.append(float(1.0 - np.mean(np.concatenate(
                [_cos(a, b) for a, b in zip(prev, cur)]))))
            prev = cur
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if progress:
        progress(ProgressEvent(n, n, "done"))
    return out, sum(len(p) - 1 for p in pieces)
