"""ONNX Runtime GenAI in process: a second engine beside llama.cpp (seed 003 §4.1-4.3).

The model is an onnxruntime-genai folder (genai_config.json, model.onnx, tokenizer files); a GGUF
named for this engine is converted before it gets here, by the input layer (edgepick.inputs).
Generation uses og's own greedy search, token by token, so every token's arrival time is known;
full logits come from the decoder's `logits` output. One sequence at a time.
"""

from __future__ import annotations

import gc
import hashlib
import importlib
import json
import os
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import ClassVar

import numpy as np

from edgepick.backends import base
from edgepick.backends.base import Backend, Generation, LoadOptions, Vocabulary
from edgepick.backends.llama_cpp_support import FALLBACK_TEMPLATE, architecture_of
from edgepick.errors import EdgepickError
from edgepick.records.candidate import Candidate

GENAI_CONFIG = "genai_config.json"
# Architectures (llama.cpp's names) whose graph edgepick's torch-free converter builds for this
# engine: convert/gguf_source.py refuses any other, and the support check reads the same list.
SUPPORTED_ARCHS = ("llama",)
ONNX_EXTRA = "pip install 'edgepick[onnx]'"


def require_onnx() -> None:
    """One line naming every missing part of the engine (and of its converter)."""
    missing = []
    for m in ("onnxruntime_genai", "onnxruntime", "onnx", "onnx_ir", "tokenizers"):
        try:
            importlib.import_module(m)
        except ImportError:
            missing.append(m.replace("_", "-"))
    if missing:
        raise EdgepickError(f"the onnxruntime-genai engine needs {', '.join(missing)}: "
                            f"{ONNX_EXTRA}")


def is_og_folder(path: str | os.PathLike) -> bool:
    return os.path.isfile(os.path.join(path, GENAI_CONFIG))


def engine_version() -> str:
    """onnxruntime-genai's version (its installed metadata: `og.__version__`), read without
    loading the engine."""
    try:
        return f"onnxruntime-genai {version('onnxruntime-genai')}"
    except PackageNotFoundError:
        raise EdgepickError(f"the onnxruntime-genai engine is not installed: {ONNX_EXTRA}") \
            from None


class OnnxGenaiBackend(Backend):
    name: ClassVar[str] = "onnxruntime_genai"
    # No concurrent sequences: og batches only requests started together, and edgepick's
    # concurrency measure needs requests decoded while others run.
    capabilities: ClassVar[frozenset[str]] = frozenset({
        base.LOGITS, base.LOGPROBS, base.IN_PROCESS, base.TOKENIZE, base.VOCABULARY,
        base.CHAT_TEMPLATE, base.STREAMING})
    # its session options take the thread count; the context is the build's own
    honoured_settings: ClassVar[frozenset[str]] = frozenset({"threads", "n_ctx"})
    maturity: ClassVar[float] = 0.8
    maturity_reason: ClassVar[str] = ("a pinned engine measured here, but its model is a "
                                      "converted build whose conversion is one more step to keep "
                                      "working (seed 003 §4.3)")

    @classmethod
    def claims(cls, path: str) -> bool:
        return is_og_folder(path)

    @classmethod
    def architectures(cls) -> frozenset[str]:
        return frozenset(SUPPORTED_ARCHS)

    @classmethod
    def architecture_of(cls, spec) -> str | None:
        return architecture_of(spec)  # converted from a GGUF: llama.cpp's names

    @classmethod
    def engine_label(cls) -> str:
        try:
            return f"onnxruntime-genai {version('onnxruntime-genai')}"
        except PackageNotFoundError:
            return "onnxruntime-genai"

    def __init__(self) -> None:
        self.model = None
        self.tokenizer = None
        self.folder: Path | None = None
        self.candidate: Candidate | None = None
        self._n_ctx = 0
        self._tok_config: dict = {}
        self._specials: list[str] = []
        self._og = None  # the engine's library, once a model is loaded

    # -- lifecycle -------------------------------------------------------------------------
    def load(self, candidate: Candidate, options: LoadOptions | None = None) -> float:
        require_onnx()
        # the engine's library loads with its first model: the registry imports this class to
        # ask which folders it claims, which must not load it
        import onnxruntime_genai as og

        self._og = og
        options = options or LoadOptions()
        if options.n_seq > 1:
            self.require(base.CONCURRENT_SEQUENCES)
        folder = self._folder(candidate)
        s = candidate.settings
        cfg = json.loads((folder / GENAI_CONFIG).read_text(encoding="utf-8"))
        limit = int(cfg["model"]["context_length"])
        if s.n_ctx > limit:
            raise EdgepickError(f"{folder}: n_ctx {s.n_ctx} exceeds the build's context length "
                                f"{limit} (convert again with a larger --context-length)")
        if s.kv_type != "f16":
            raise EdgepickError(f"the onnxruntime_genai backend keeps its KV cache in the build's "
                                f"activation type; kv_type '{s.kv_type}' cannot be applied")
        t0 = time.perf_counter()
        try:
            config = og.Config(str(folder))
            config.overlay(json.dumps({"model": {"decoder": {"session_options": {
                "intra_op_num_threads": s.threads, "inter_op_num_threads": 1}}}}))
            self.model = og.Model(config)
            self.tokenizer = og.Tokenizer(self.model)
        except RuntimeError as exc:
            raise EdgepickError(f"{folder}: onnxruntime-genai could not load the model "
                                f"({exc})") from None
        load_s = time.perf_counter() - t0
        self.folder, self.candidate, self._n_ctx = folder, candidate, s.n_ctx
        tc = folder / "tokenizer_config.json"
        self._tok_config = json.loads(tc.read_text(encoding="utf-8")) if tc.is_file() else {}
        self._specials = self._special_tokens()
        return load_s

    def _folder(self, candidate: Candidate) -> Path:
        path = candidate.ref.path
        if path is None:
            raise EdgepickError(f"{candidate.ref.spec}: the onnxruntime_genai backend needs a "
                                "model folder or a GGUF, not an endpoint")
        if is_og_folder(path):
            return Path(path)
        raise EdgepickError(f"{path}: not an onnxruntime-genai folder (no {GENAI_CONFIG}); "
                            "convert it first (edgepick convert)")

    def unload(self) -> None:
        self.tokenizer = None
        self.model = None
        gc.collect()  # og frees the session when the last reference goes

    def engine_version(self) -> str:
        return engine_version()

    # -- text ------------------------------------------------------------------------------
    def _special_tokens(self) -> list[str]:
        data = json.loads((self.folder / "tokenizer.json").read_text(encoding="utf-8"))
        return [t["content"] for t in data.get("added_tokens", [])]

    @property
    def _bos(self) -> int:
        return int(self.tokenizer.bos_token_id)

    def tokenize(self, text: str, add_bos: bool = True, parse_special: bool = True) -> list[int]:
        tok = self._require()
        if not parse_special:
            hit = next((s for s in self._specials if s in text), None)
            if hit is not None:
                raise EdgepickError(f"onnxruntime-genai's tokenizer always reads special tokens; "
                                    f"the text contains '{hit}'")
        ids = [int(t) for t in tok.encode(text)]
        # the tokenizer's post-processor adds BOS when the model wants it (llama.cpp's rule:
        # add_bos=True adds it only for such models)
        if ids and ids[0] == self._bos and not add_bos and self._tok_config.get("add_bos_token"):
            ids = ids[1:]
        return ids

    def detokenize(self, tokens: list[int]) -> str:
        return self._require().decode(np.asarray(tokens, dtype=np.int32)) if tokens else ""

    def vocabulary(self) -> Vocabulary:
        self._require()
        data = json.loads((self.folder / "tokenizer.json").read_text(encoding="utf-8"))
        table = {i: t for t, i in data["model"]["vocab"].items()}
        table.update({t["id"]: t["content"] for t in data.get("added_tokens", [])})
        h = hashlib.sha256()  # the same fingerprint as llama_cpp's: each token's text, then \0
        for i in range(max(table) + 1):
            h.update(table.get(i, "").encode("utf-8"))
            h.update(b"\0")
        return Vocabulary(n_vocab=max(table) + 1, fingerprint=h.hexdigest(),
                          add_bos=bool(self._tok_config.get("add_bos_token", False)),
                          bos=self._bos)

    def render_chat(self, messages: list[dict]) -> str:
        tok = self._require()
        template = None if self._tok_config.get("chat_template") else FALLBACK_TEMPLATE
        try:
            return tok.apply_chat_template(json.dumps(messages), template_str=template,
                                           add_generation_prompt=True)
        except RuntimeError as exc:
            raise EdgepickError(f"{self.folder}: onnxruntime-genai could not render the chat "
                                f"template ({exc})") from None

    # -- inference -------------------------------------------------------------------------
    def _params(self, max_length: int, min_length: int = 0):
        params = self._og.GeneratorParams(self.model)
        params.set_search_options(max_length=max_length, min_length=min_length, do_sample=False,
                                  batch_size=1)
        return params

    def generate(self, prompt: str | list[dict] | list[int], max_tokens: int, *,
                 chat: bool = False, stop: list[str] | None = None, logprobs: bool = False,
                 ignore_eos: bool = False) -> Generation:
        self._require()
        og = self._og
        t0 = time.perf_counter()
        if isinstance(prompt, list) and prompt and isinstance(prompt[0], int):
            tokens = list(prompt)
        else:
            text = self.render_chat(prompt) if chat or isinstance(prompt, list) else prompt
            bos_text = self.tokenizer.decode(np.asarray([self._bos], dtype=np.int32))
            has_bos = chat and bool(bos_text) and text.startswith(bos_text)
            tokens = self.tokenize(text, add_bos=not has_bos)
        if len(tokens) + max_tokens > self._n_ctx:
            max_tokens = self._n_ctx - len(tokens)
            if max_tokens <= 0:
                raise EdgepickError(
                    f"prompt of {len(tokens)} tokens does not fit the context of {self._n_ctx}")
        # The KV buffer is sized to n_ctx, as llama.cpp's is, so memory compares like for like.
        # ignore_eos: og suppresses EOS until min_length (llama_cpp instead emits it and goes on).
        gen = og.Generator(self.model, self._params(
            self._n_ctx, len(tokens) + max_tokens if ignore_eos else 0))
        gen.append_tokens(np.asarray(tokens, dtype=np.int32))
        prefill_s = time.perf_counter() - t0
        eos = set(int(e) for e in self.tokenizer.eos_token_ids)
        out: list[int] = []
        times: list[float] = []
        lps: list[float] | None = [] if logprobs else None
        finish = "length"
        while len(out) < max_tokens:
            row = np.asarray(gen.get_logits())[0].reshape(-1) if logprobs else None
            gen.generate_next_token()
            tok = int(gen.get_next_tokens()[0])
            if not ignore_eos and tok in eos:
                finish = "stop"
                break
            times.append(time.perf_counter() - t0)
            out.append(tok)
            if logprobs:
                m = float(row.max())
                lps.append(float(row[tok]) - m - float(np.log(np.exp(row - m).sum())))
            if stop and any(s in self.detokenize(out) for s in stop):
                finish = "stop"
                break
            if gen.is_done():
                break
        del gen
        text = self.detokenize(out)
        if stop:
            cut = min((text.find(s) for s in stop if s in text), default=-1)
            if cut >= 0:
                text = text[:cut]
        return Generation(text=text, prompt_tokens=len(tokens), generated_tokens=len(out),
                          token_times=times, prefill_s=prefill_s, finish_reason=finish,
                          token_logprobs=lps, token_ids=out)

    def logits(self, tokens: list[int]) -> np.ndarray:
        self._require()
        og = self._og
        if len(tokens) > self._n_ctx:
            raise EdgepickError(f"{len(tokens)} tokens do not fit the context of {self._n_ctx}")
        gen = og.Generator(self.model, self._params(self._n_ctx))
        gen.append_tokens(np.asarray(tokens, dtype=np.int32))
        out = np.array(gen.get_output("logits"), dtype=np.float32, copy=True)[0]
        del gen
        return out

    def _require(self):
        if self.model is None or self.tokenizer is None:
            raise EdgepickError("backend used before a model was loaded")
        return self.tokenizer
