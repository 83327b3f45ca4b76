"""In-process llama.cpp through llama-cpp-python.

Generation runs its own loop over llama.cpp's batch API (not `create_completion`), so the
per-token cost on top of llama.cpp is one C sampler call, and each token's arrival time is known.
Greedy by default; with `sampling` the token is drawn by llama.cpp's own seeded sampler chain.
"""

from __future__ import annotations

import codecs
import hashlib
import os
import time
from typing import Callable, ClassVar

import numpy as np

from edgepick.backends import base
from edgepick.backends.base import (Backend, Generation, LoadOptions, Vocabulary, cut_at_stop,
                                    token_logprob)
from edgepick.errors import EdgepickError
from edgepick.records.candidate import Candidate

from edgepick.backends import llama_cpp_support as support
from edgepick.backends.llama_cpp_batched import generate_batched, multi_sequence_context
from edgepick.backends.llama_cpp_grammar import grammar_chain
from edgepick.backends.llama_cpp_placement import placement_args, placement_problem
from edgepick.backends.llama_cpp_prefix import can_share
from edgepick.backends.llama_cpp_step import GreedyStepper, sampler_chain, time_decode
from edgepick.backends.llama_cpp_stream import generate_stream
from edgepick.backends.llama_cpp_support import (FALLBACK_TEMPLATE, KV_TYPES, LlamaCppSettings,
                                                 engine_version)
from edgepick.models.adapter import read_adapter


def whole_chars(data: bytes) -> str:
    """UTF-8 text of whole characters only. A byte-level token can end inside a multi-byte
    character (one Chinese character is often two tokens); when generation stops there, the
    partial bytes are dropped instead of decoded as U+FFFD."""
    return codecs.getincrementaldecoder("utf-8")(errors="replace").decode(data, final=False)


def _adapter_args(s, model: str) -> dict:
    """llama-cpp-python's LoRA arguments for the settings' adapter, checked first against the
    model (models/adapter.py) so a wrong file is one line, not an engine crash."""
    if s.adapter is None:
        return {}

    read_adapter(s.adapter.path, model)
    return {"lora_path": s.adapter.path, "lora_scale": s.adapter.scale}


class LlamaCppBackend(support.LlamaCppFiles, Backend):
    name: ClassVar[str] = "llama_cpp"
    capabilities: ClassVar[frozenset[str]] = frozenset({
        base.LOGITS, base.LOGPROBS, base.CONCURRENT_SEQUENCES, base.IN_PROCESS, base.TOKENIZE,
        base.VOCABULARY, base.CHAT_TEMPLATE, base.STREAMING, base.DECODE_TIMING, base.SAMPLING,
        base.GRAMMAR})
    maturity: ClassVar[float] = 1.0
    maturity_reason: ClassVar[str] = ("in-process llama.cpp: one pinned engine, the same code "
                                      "measured here and shipped")
    settings_model: ClassVar[type] = LlamaCppSettings
    # generate_many prefills a prompt prefix shared by several prompts once (llama_cpp_prefix);
    # False prefills every prompt whole (the side-by-side measurement switches it off)
    reuse_prefixes: ClassVar[bool] = True
    # all passed to llama-cpp-python's Llama in load (type_k/type_v, flash_attn, n_batch,
    # n_ubatch, n_threads/n_threads_batch, use_mmap, swa_full, n_ctx, seed; a placement's
    # n_gpu_layers and tensor_split where the build has a device: llama_cpp_placement.py,
    # which refuses the rest per candidate)
    honoured_settings: ClassVar[frozenset[str]] = frozenset({
        "threads", "n_ctx", "n_batch", "n_ubatch", "seed", "kv_type", "flash_attn", "swa_full",
        "mmap", "adapter", "constrain", "placement"})

    @staticmethod
    def settings_problem(settings) -> str | None:
        return support.settings_problem(settings) or placement_problem(settings)

    @classmethod
    def engine_label(cls) -> str:
        return support.engine_label()

    def __init__(self) -> None:
        self.llm = None
        self.candidate: Candidate | None = None
        self._sampler = None
        self._formatter = None
        self._multi_ctx = None
        self._step = None
        self._share = False  # prompts of generate_many share prefixes (llama_cpp_prefix)
        self.width = 0  # sequences decoded together (load's n_seq); 0: one context, one sequence
        # prompt tokens put through llama_decode (prefill only): what a prefix cache saves
        self.prompt_tokens_decoded = 0

    # -- lifecycle -------------------------------------------------------------------------
    def load(self, candidate: Candidate, options: LoadOptions | None = None) -> float:
        """`options.n_seq` > 1 sizes the context for that many concurrent sequences of `n_ctx`
        tokens each (see generate_concurrent); the single-sequence calls then use sequence 0."""
        import llama_cpp

        options = options or LoadOptions()
        path = candidate.model
        if not os.path.isfile(path):
            raise EdgepickError(f"{path}: model file not found")
        s = candidate.settings
        if s.kv_type not in KV_TYPES:
            raise EdgepickError(f"unknown KV cache type '{s.kv_type}'; known: {', '.join(KV_TYPES)}")
        own = LlamaCppSettings.of(s)
        t0 = time.perf_counter()
        try:
            with support.without_amx_repack():
                self.llm = llama_cpp.Llama(
                    model_path=path, n_ctx=s.n_ctx, n_batch=s.n_batch, n_ubatch=s.n_ubatch,
                    n_threads=s.threads, n_threads_batch=s.threads, seed=s.seed,
                    type_k=KV_TYPES[own.kv_type], type_v=KV_TYPES[own.kv_type],
                    flash_attn=own.flash_attn, swa_full=own.swa_full, use_mmap=own.mmap,
                    logits_all=options.need_logits,
                    verbose=False, **_adapter_args(s, path), **placement_args(s),
                )
        except (ValueError, RuntimeError) as exc:
            raise EdgepickError(f"{path}: llama.cpp could not load the model ({exc})") from None
        if options.n_seq > 1:
            self._resize_for_sequences(options.n_seq, options.shared_kv)
        load_s = time.perf_counter() - t0
        self.candidate = candidate
        self._sampler = llama_cpp.llama_sampler_init_greedy()
        return load_s

    def unload(self) -> None:
        import llama_cpp

        if self._step is not None:
            self._step.free()
            self._step = None
        if self._multi_ctx is not None:
            self._multi_ctx.close()  # before the model it belongs to
            self._multi_ctx = None
        self._share = False
        if self._sampler is not None:
            llama_cpp.llama_sampler_free(self._sampler)
            self._sampler = None
        if self.llm is not None:
            self.llm.close()
            self.llm = None

    # -- text ------------------------------------------------------------------------------
    def tokenize(self, text: str, add_bos: bool = True, parse_special: bool = True) -> list[int]:
        return self._require().tokenize(text.encode("utf-8"), add_bos=add_bos,
                                        special=parse_special)

    def detokenize(self, tokens: list[int]) -> str:
        return whole_chars(self._require().detokenize(tokens))

    def render_chat(self, messages: list[dict]) -> str:
        if self._formatter is None:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            llm = self._require()
            template = llm.metadata.get("tokenizer.chat_template") or FALLBACK_TEMPLATE
            bos = llm._model.token_get_text(llm.token_bos()) if llm.token_bos() >= 0 else ""
            eos = llm._model.token_get_text(llm.token_eos()) if llm.token_eos() >= 0 else ""
            self._formatter = Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos)
        return self._formatter(messages=messages).prompt

    @property
    def n_vocab(self) -> int:
        return self._require().n_vocab()

    @property
    def n_ctx(self) -> int:
        return self._require().n_ctx()

    # -- inference -------------------------------------------------------------------------
    def generate(self, prompt: str | list[dict] | list[int], max_tokens: int, *, chat: bool = False,
                 stop: list[str] | None = None, logprobs: bool = False,
                 ignore_eos: bool = False, sampling: dict | None = None,
                 constraint: dict | None = None) -> Generation:
        import llama_cpp

        llm = self._require()
        sampling = base.sampling_or_greedy(sampling)
        t0 = time.perf_counter()
        tokens = self._prompt_tokens(prompt, chat)
        max_tokens = self._budget(tokens, max_tokens)
        llm.reset()
        vocab = llm._model.vocab
        ctx = llm._ctx.ctx
        llm.eval(tokens)
        self.prompt_tokens_decoded += len(tokens)
        prefill_s = time.perf_counter() - t0
        step = self._stepper()
        chain = None
        if sampling is not None:
            chain = sampler_chain(sampling, self.candidate.settings.seed, llm.n_vocab())
            for t in tokens:  # the prompt counts for the repeat penalty, as in llama-server
                llama_cpp.llama_sampler_accept(chain, t)
        if constraint is not None:  # the grammar before the choice (greedy or the draw)
            chain = grammar_chain(vocab, constraint,
                                  chain or llama_cpp.llama_sampler_init_greedy())
        try:
            out, times, lps, finish = self._decode(step, ctx, vocab, chain, t0, max_tokens,
                                                   stop, logprobs, ignore_eos)
        finally:
            if chain is not None:
                llama_cpp.llama_sampler_free(chain)
        text = cut_at_stop(self.detokenize(out), stop)
        return Generation(text=text, prompt_tokens=len(tokens), generated_tokens=len(out),
                          token_times=times, prefill_s=prefill_s, finish_reason=finish,
                          token_logprobs=lps, token_ids=out)

    def _prompt_tokens(self, prompt, chat: bool) -> list[int]:
        llm = self._require()
        if isinstance(prompt, list) and prompt and isinstance(prompt[0], int):
            return list(prompt)
        text = self.render_chat(prompt) if chat or isinstance(prompt, list) else prompt
        # A chat template writes its own BOS; adding another would change the input.
        has_bos = bool(llm._model.token_get_text(llm.token_bos())) and chat and \
            text.startswith(llm._model.token_get_text(llm.token_bos()))
        return self.tokenize(text, add_bos=not has_bos)

    def _budget(self, tokens: list[int], max_tokens: int) -> int:
        """`max_tokens`, cut to what the context leaves after the prompt (one sequence's)."""
        import llama_cpp

        n_ctx = llama_cpp.llama_n_ctx_seq(self._require()._ctx.ctx)
        if len(tokens) + max_tokens > n_ctx:
            max_tokens = n_ctx - len(tokens)
            if max_tokens <= 0:
                raise EdgepickError(
                    f"prompt of {len(tokens)} tokens does not fit the context of {n_ctx}")
        return max_tokens

    def generate_many(self, requests: list[base.GenRequest],
                      done: Callable[[int, Generation], None] | None = None) -> list[Generation]:
        """Through as many slots as the model was loaded for (load with n_seq; shared_kv puts
        them in the one cache), continuously, each with its own budget and sampler; `done`
        hears each as it finishes (llama_cpp_stream)."""
        import llama_cpp

        if (len(requests) < 2 and not self._share) or \
                llama_cpp.llama_n_seq_max(self._require()._ctx.ctx) < 2 \
                or any(r.constraint is not None for r in requests):  # grammars: one at a time
            return super().generate_many(requests, done)

        prompts = [self._prompt_tokens(r.prompt, r.chat) for r in requests]
        limits = [self._budget(p, r.max_tokens) for p, r in zip(prompts, requests)]
        return generate_stream(self, prompts, limits,
                               [base.sampling_or_greedy(r.sampling) for r in requests], done)

    def _decode(self, step, ctx, vocab, chain, t0: float, max_tokens: int, stop, logprobs: bool,
                ignore_eos: bool):
        """(tokens, arrival times, log-probabilities, finish reason) of one generation; greedy
        without a sampler `chain`."""
        import llama_cpp

        out: list[int] = []
        times: list[float] = []
        lps: list[float] | None = [] if logprobs else None
        finish = "length"
        for _ in range(max_tokens):
            row = step.logits_row(ctx)
            # greedy: numpy's arg-max (see llama_cpp_step for why not the C sampler); sampled:
            # llama.cpp's chain, which also records the token for its repeat penalty
            tok = int(row.argmax()) if chain is None else \
                int(llama_cpp.llama_sampler_sample(chain, ctx, -1))
            times.append(time.perf_counter() - t0)
            if logprobs:
                lps.append(token_logprob(row, tok))
            if not ignore_eos and llama_cpp.llama_vocab_is_eog(vocab, tok):
                times.pop()
                if logprobs:
                    lps.pop()
                finish = "stop"
                break
            out.append(tok)
            if stop:
                text_so_far = self.detokenize(out)
                if any(s in text_so_far for s in stop):
                    finish = "stop"
                    break
            if len(out) < max_tokens:
                step.decode_one(tok)
        return out, times, lps, finish

    def logits(self, tokens: list[int]) -> np.ndarray:
        llm = self._require()
        if not llm._logits_all:
            raise EdgepickError("this model was loaded without full logits; load with need_logits")
        if len(tokens) > llm.n_ctx():
            raise EdgepickError(f"{len(tokens)} tokens do not fit the context of {llm.n_ctx()}")
        llm.reset()
        llm.eval(tokens)
        return np.array(llm.scores[: len(tokens)], dtype=np.float32, copy=True)

    def engine_version(self) -> str:
        return engine_version()

    def vocabulary(self) -> Vocabulary:
        import llama_cpp

        vocab = self._require()._model.vocab
        n = llama_cpp.llama_vocab_n_tokens(vocab)
        h = hashlib.sha256()
        for i in range(n):
            h.update(llama_cpp.llama_vocab_get_text(vocab, i) or b"")
            h.update(b"\0")
        return Vocabulary(n_vocab=n, fingerprint=h.hexdigest(),
                          add_bos=bool(llama_cpp.llama_vocab_get_add_bos(vocab)),
                          bos=int(llama_cpp.llama_vocab_bos(vocab)))

    def time_decode(self, tokens: list[int], fills: list[int], n_tokens: int,
                    repeats: int) -> dict[int, float]:
        return time_decode(self._require(), tokens, fills, n_tokens, repeats)

    def _stepper(self):
        if self._step is None:
            self._step = GreedyStepper(self._require())
        return self._step

    # -- concurrent sequences (additive; see llama_cpp_batched.py) ------------------------------
    def _resize_for_sequences(self, n_seq: int, shared: bool = False) -> None:
        self._share = self.reuse_prefixes and can_share(self.llm, n_seq, shared)
        self._multi_ctx = multi_sequence_context(self.llm, n_seq, shared)
        self.width = n_seq

    def shares_prefixes(self) -> bool:
        """Whether generate_many's prompts share their common prefixes (llama_cpp_prefix)."""
        return self._share

    def generate_concurrent(self, prompts: list[list[int]], max_tokens: int, *,
                            ignore_eos: bool = False) -> list[Generation]:
        """Several requests submitted at the same instant, decoded together in one batch per step
        (continuous batching, as llama-server's parallel slots do). Needs load(n_seq >= len)."""
        return generate_batched(self, prompts, max_tokens, ignore_eos=ignore_eos)

    def _require(self):
        if self.llm is None:
            raise EdgepickError("backend used before a model was loaded")
        return self.llm
