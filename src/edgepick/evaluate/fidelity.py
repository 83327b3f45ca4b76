"""Fidelity of a candidate to its reference: perplexities, KL divergence of the next-token
distributions, top-1 agreement and Δp, computed the way `llama-perplexity` does.

What is mirrored from llama.cpp's tools/perplexity/perplexity.cpp (docs/fidelity.md):
- the whole text is tokenized once, with the vocabulary's add-BOS rule and special tokens NOT
  parsed (common_tokenize(ctx, text, true)); a text file loses one trailing newline, as with -f;
- the tokens are cut into floor(n / ctx) chunks of ctx tokens (at least 2 chunks' worth needed);
  when the vocabulary adds a BOS, the first token of every chunk is replaced by BOS;
- each chunk is evaluated from an empty KV cache, and only the positions first = ctx/2 …
  ctx − 2 are scored, each predicting the token after it (ctx − 1 − ctx/2 per chunk).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from edgepick.backends import LoadOptions, get_backend
from edgepick.backends.base import LOGITS
from edgepick.backends.llama_cpp_support import engine_version
from edgepick.backends.registry import backend_class, engine_for
from edgepick.errors import EdgepickError
from edgepick.progress import ProgressEvent, Tick
from edgepick.evaluate.fidelity_stats import Accumulator, compare_rows, reference_rows
from edgepick.evaluate.logits_cache import ReferenceStore, default_cache_dir
from edgepick.records.candidate import Candidate, RuntimeSettings
from edgepick.records.fidelity import FidelityResult
from edgepick.records.model_ref import ModelRef
from edgepick.store.identity import file_sha256

__all__ = ["fidelity", "FidelityResult", "read_text", "bundled_text", "plan_chunks"]



def read_text(path: str | Path) -> str:
    """A text file as llama-perplexity's -f reads it: UTF-8, one trailing newline removed."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise EdgepickError(f"{p}: cannot read the text file ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise EdgepickError(f"{p}: not UTF-8 text (byte {exc.start})") from None
    return text[:-1] if text.endswith("\n") else text


def bundled_text(name: str = "fidelity") -> Path:
    """`fidelity` (evaluation) or `calibration` (imatrix / choosing recipes): disjoint texts."""
    path = Path(__file__).resolve().parent.parent / "data" / f"{name}_text.txt"
    if not path.is_file():
        raise EdgepickError(f"no bundled text '{name}' (expected {path})")
    return path


def plan_chunks(tokens: list[int] | np.ndarray, ctx: int, add_bos: bool, bos: int,
                max_chunks: int | None = None) -> list[np.ndarray]:
    toks = np.asarray(tokens, dtype=np.int32)
    _check_ctx(ctx)
    if len(toks) < 2 * ctx:
        raise EdgepickError(f"the text is {len(toks)} tokens; a context of {ctx} needs at least "
                            f"{2 * ctx} (llama-perplexity's rule); use a longer text or a smaller --ctx")
    n = len(toks) // ctx
    if max_chunks is not None:
        if max_chunks < 1:
            raise EdgepickError(f"--chunks must be ≥ 1 (got {max_chunks})")
        n = min(n, max_chunks)
    out = []
    for i in range(n):
        c = toks[i * ctx:(i + 1) * ctx].copy()
        if add_bos:
            c[0] = bos
        out.append(c)
    return out


def _check_ctx(ctx: int) -> None:
    if ctx < 4:
        raise EdgepickError(f"--ctx must be at least 4 (got {ctx})")


def _load(ref: ModelRef, ctx: int, threads: int, runtime=None):
    """`runtime` (a RuntimeSettings): the candidate's own settings that can change its logits
    (KV type, flash attention, micro-batch, mmap); None: the f16-KV baseline."""
    if not backend_class(ref.backend).supports(LOGITS) and ref.path:
        # an engine without logits that runs this file (llama_server) differs from the file's
        # in-process engine only by settings that keep the model's distribution (speculative
        # decoding: evaluate/fidelity_stage.py PRESERVING), so the logits are read there
        ref = ref.model_copy(update={"backend": engine_for(ref.path)})
    backend = get_backend(ref.backend)  # any engine declaring LOGITS (docs/engines.md)
    settings = RuntimeSettings(threads=threads, n_ctx=ctx, n_batch=ctx, n_ubatch=min(ctx, 512))
    if runtime is not None:
        settings = settings.model_copy(update={
            "kv_type": runtime.kv_type, "flash_attn": runtime.flash_attn, "mmap": runtime.mmap,
            "n_ubatch": min(ctx, runtime.n_ubatch), "swa_full": runtime.swa_full,
            "adapter": runtime.adapter})
    backend.load(Candidate(ref=ref, settings=settings), LoadOptions(need_logits=True))
    return backend


def _vocab(backend) -> dict:
    """Fingerprint of the token id → text table, plus the BOS rule: what 'same tokenizer' means."""
    return backend.vocabulary().model_dump()


def _tokenize(backend, text: str) -> list[int]:
    # parse_special=False: llama-perplexity does not parse special tokens in the text.
    return backend.tokenize(text, add_bos=True, parse_special=False)


def _source_key(text: str | Path | list[int]) -> tuple[str, str | list[int]]:
    if isinstance(text, Path):
        text = read_text(text)
    if isinstance(text, str):
        return "text:" + hashlib.sha256(text.encode("utf-8")).hexdigest(), text
    toks = [int(t) for t in text]
    blob = np.asarray(toks, dtype=np.int64).tobytes()
    return "tokens:" + hashlib.sha256(blob).hexdigest(), toks


def reference_key(ref_path: str, source_key: str, ctx: int) -> str:
    blob = json.dumps({"ref": file_sha256(ref_path), "src": source_key, "ctx": ctx,
                       "engine": engine_version()}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def fidelity(reference: ModelRef, candidate: ModelRef, text: str | Path | list[int], ctx: int = 512,
             threads: int = 2, max_chunks: int | None = None, progress: Tick | None = None,
             cache: bool = True, cache_dir: str | Path | None = None,
             runtime=None) -> FidelityResult:
    """Compare `candidate` with `reference` on `text`.

    reference, candidate: local models (both run by the llama_cpp backend).
    text: the text itself (str), a file (pathlib.Path; read like llama-perplexity's -f), or token
      ids already (list[int], used as they are: BOS must already be there if the model wants it).
    cache: keep the reference's scored log-probs on disk (see logits_cache) so that the next
      candidate compared with the same reference, text and ctx skips the reference entirely.
    runtime: the candidate's runtime settings (a RuntimeSettings; its KV type, flash attention,
      micro-batch), the reference runs at the f16-KV baseline: one file against itself measures
      what the settings alone do to its answers.
    """
    _check_ctx(ctx)
    if max_chunks is not None and max_chunks < 1:
        raise EdgepickError(f"--chunks must be ≥ 1 (got {max_chunks})")
    if threads < 1:
        raise EdgepickError(f"--threads must be ≥ 1 (got {threads})")
    ref_path, cand_path = (r.local_path("fidelity needs full logits, so both models must be "
                                        "local GGUF files") for r in (reference, candidate))
    src_key, source = _source_key(text)
    folder = (Path(cache_dir) if cache_dir else default_cache_dir()) if cache else None
    store = ReferenceStore(reference_key(ref_path, src_key, ctx), folder)

    ref_backend = None
    cand_backend = None
    try:
        meta = store.meta()
        if meta is None:
            ref_backend = _load(reference, ctx, threads)
            info = _vocab(ref_backend)
            tokens = _tokenize(ref_backend, source) if isinstance(source, str) else source
            if tokens and max(tokens) >= info["n_vocab"]:
                raise EdgepickError(f"token id {max(tokens)} is outside the reference's "
                                    f"vocabulary of {info['n_vocab']}")
            meta = {**info, "tokens": [int(t) for t in tokens]}
            store.write_meta(meta)
        chunks = plan_chunks(meta["tokens"], ctx, meta["add_bos"], meta["bos"], max_chunks)
        first = ctx // 2
        missing = [i for i in range(len(chunks)) if not store.has(i)]
        cached = not missing
        total = len(chunks) + (len(missing) if store.persistent else 0)
        done = 0

        cand_backend = _load(candidate, ctx, threads, runtime)
        cinfo = _vocab(cand_backend)
        if cinfo["fingerprint"] != meta["fingerprint"] or cinfo["n_vocab"] != meta["n_vocab"]:
            raise EdgepickError(
                f"{cand_path} and {ref_path} do not share a tokenizer (vocabularies of "
                f"{cinfo['n_vocab']} and {meta['n_vocab']} tokens differ); fidelity compares "
                f"next-token distributions, so both must use the same vocabulary")

        if store.persistent and missing:
            # Fill the cache first, then free the reference before the candidate runs.
            ref_backend = ref_backend or _load(reference, ctx, threads)
            for i in missing:
                _reference_chunk(store, ref_backend, chunks[i], i, first)
                done += 1
                if progress:
                    progress(ProgressEvent(done, total, "reference"))
            ref_backend.unload()
            ref_backend = None

        acc, firsts = Accumulator(), []
        for i, chunk in enumerate(chunks):
            if store.persistent:
                ref_rows = store.get(i)
            else:
                ref_backend = ref_backend or _load(reference, ctx, threads)
                ref_rows = _reference_chunk(store, ref_backend, chunk, i, first)
            logits = cand_backend.logits(chunk.tolist())[first:ctx - 1]
            rows = compare_rows(*ref_rows, logits, chunk[first + 1:])
            acc.add(rows, ref_rows[1])
            firsts.append(_first_divergence(rows["same_top"]))
            done += 1
            if progress:
                progress(ProgressEvent(done, total, "candidate"))
    finally:
        for b in (ref_backend, cand_backend):
            if b is not None:
                b.unload()

    scored = np.concatenate(chunks).astype(np.int64).tobytes()
    return FidelityResult(
        reference=ref_path, candidate=cand_path,
        text_sha256=hashlib.sha256(scored).hexdigest(), n_tokens_text=len(meta["tokens"]),
        ctx=ctx, n_chunks=len(chunks), add_bos=meta["add_bos"], engine=engine_version(),
        reference_cached=cached and store.persistent,
        first_divergence_share=float(np.mean(firsts)), **acc.summary())


def _first_divergence(same_top: np.ndarray) -> float:
    """The first position whose top-1 token differs, as a share of the span (1.0: none)."""
    differ = np.flatnonzero(~np.asarray(same_top, dtype=bool))
    return 1.0 if differ.size == 0 else float(differ[0]) / len(same_top)


def _reference_chunk(store: ReferenceStore, backend, chunk: np.ndarray, i: int, first: int):
    ctx = len(chunk)
    logits = backend.logits(chunk.tolist())[first:ctx - 1]
    rows = reference_rows(logits, chunk[first + 1:])
    store.put(i, *rows)
    return rows
