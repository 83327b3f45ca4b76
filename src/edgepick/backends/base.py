"""The Backend contract: the methods every engine has, and the capabilities it declares
(docs/engines.md).

Shared code talks to an engine only through this contract. What not every engine can do (full
logits, concurrent sequences in one process, its own tokenizer…) is a declared capability that
callers check with `supports`, never with `hasattr`; calling an undeclared feature raises one
line naming the engine and the feature. Engines are found through the registry (registry.py).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Callable, ClassVar, NoReturn

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from edgepick.errors import EdgepickError, pydantic_problem
from edgepick.records.candidate import ENGINE_FLAT, Candidate, RuntimeSettings

# The capabilities an engine may declare. A name outside this set is a typo, caught at import.
LOGITS = "logits"  # logits(tokens): next-token logits at every position (fidelity, seed 000 §5.3)
LOGPROBS = "logprobs"  # generate(logprobs=True) fills Generation.token_logprobs
# generate_concurrent / generate_many: requests decoded together
CONCURRENT_SEQUENCES = "concurrent_sequences"
IN_PROCESS = "in_process"  # runs in this process: its load time and memory are ours to measure
TOKENIZE = "tokenize"  # tokenize / detokenize with the model's own vocabulary
VOCABULARY = "vocabulary"  # vocabulary(): the token table's fingerprint and its BOS rule
CHAT_TEMPLATE = "chat_template"  # render_chat: the prompt text the model's template makes
STREAMING = "streaming"  # the arrival time of each generated token is known
EMBEDDINGS = "embeddings"  # embed(texts)
DECODE_TIMING = "decode_timing"  # time_decode: seconds per token after a given cached fill
SAMPLING = "sampling"  # generate(sampling={temperature, top_p, top_k, repeat_penalty, seed})
# generate(constraint={"json_schema": {...}} or {"labels": [...]}): only a valid answer decodes
GRAMMAR = "grammar"
CAPABILITIES = frozenset({LOGITS, LOGPROBS, CONCURRENT_SEQUENCES, IN_PROCESS, TOKENIZE, VOCABULARY,
                          CHAT_TEMPLATE, STREAMING, EMBEDDINGS, DECODE_TIMING, SAMPLING,
                          GRAMMAR})
# The fields of a `sampling` map, as OpenAI and llama-server name them.
SAMPLING_FIELDS = ("temperature", "top_p", "top_k", "repeat_penalty", "seed")


class LoadOptions(BaseModel):
    """What a caller needs from a loaded model beyond its runtime settings."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    need_logits: bool = False  # keep the logits of every position (needs LOGITS)
    n_seq: int = Field(default=1, ge=1)  # concurrent sequences to size the context for
    # the n_seq sequences share the one cache of n_ctx cells (llama-server's unified KV): no
    # more memory than one sequence; each has n_ctx cells of its own otherwise
    shared_kv: bool = False


class GenRequest(BaseModel):
    """One generation of a group (`generate_many`), with its own prompt, budget and sampling."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt: str | list[dict] | list[int]
    max_tokens: int = Field(ge=1)
    chat: bool = False
    sampling: dict | None = None  # None: greedy (SAMPLING_FIELDS and a seed otherwise)
    constraint: dict | None = None  # GRAMMAR: {"json_schema": …} or {"labels": […]}; None: free


def request_options(r: GenRequest) -> dict:
    """The keyword options of `generate` a request sets: an engine that does not take one is
    never handed it (a plugin written before sampling or constraints still works)."""
    out: dict = {}
    if r.sampling is not None:
        out["sampling"] = r.sampling
    if r.constraint is not None:
        out["constraint"] = r.constraint
    return out


class Generation(BaseModel):
    """One generation with its timings, all in seconds from the moment the request was submitted."""

    text: str
    prompt_tokens: int
    generated_tokens: int
    token_times: list[float] = Field(default_factory=list)  # arrival time of each generated token
    prefill_s: float | None = None  # time to process the prompt (engine-side when known)
    finish_reason: str = "length"  # "length" | "stop"
    token_logprobs: list[float] | None = None  # log-probability of each generated token, if asked
    # the generated token ids as the engine chose them (in-process engines); their text may
    # tokenize back to other ids, so a caller that needs the ids reads them here
    token_ids: list[int] | None = None
    # leading prompt tokens whose KV an engine's prefix cache reused instead of prefilling
    # (llama-server's tokens_cached): prefill_s then covers only the rest
    cached_tokens: int = 0
    # what a server measured itself (llama-server's `timings`: predicted_n, predicted_ms, and
    # draft_n / draft_n_accepted when it speculated); None when it says nothing
    engine_timings: dict | None = None

    @property
    def ttft_s(self) -> float | None:
        return self.token_times[0] if self.token_times else None

    @property
    def e2e_s(self) -> float | None:
        return self.token_times[-1] if self.token_times else None

    @property
    def decode_tps(self) -> float | None:
        """Tokens after the first ÷ time after the first."""
        if len(self.token_times) < 2:
            return None
        span = self.token_times[-1] - self.token_times[0]
        return (len(self.token_times) - 1) / span if span > 0 else None


def cut_at_stop(text: str, stop: list[str] | None) -> str:
    """`text` up to the first stop string, which is not returned (as OpenAI's API does)."""
    cut = min((text.find(s) for s in stop or [] if s in text), default=-1)
    return text[:cut] if cut >= 0 else text


def token_logprob(row: np.ndarray, token: int) -> float:
    """Log-probability of `token` under the logits `row` (a stable log-softmax)."""
    m = float(row.max())
    return float(row[token]) - m - float(np.log(np.exp(row - m).sum()))


class Vocabulary(BaseModel):
    """What 'the same tokenizer' means for comparing two models' next-token distributions."""

    n_vocab: int
    fingerprint: str  # SHA-256 of the token id → text table
    add_bos: bool
    bos: int


class EngineSettings(BaseModel):
    """An engine's own knobs, read from the flat runtime settings (records/candidate.py keeps
    them flat so that plans and stored keys stay as they were) or their `engine` map. The base
    has none; each engine subclasses it with what only it understands."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    @classmethod
    def of(cls, settings) -> "EngineSettings":
        """This engine's knobs from a RuntimeSettings: its `engine` map over the flat fields. A
        knob it does not have, or a value it refuses, raises one line (problem())."""
        found = cls.problem(settings)
        if found:
            raise EdgepickError(f"runtime.{found[0]}: {found[1]}")
        return cls.model_validate(cls._data(settings))

    @classmethod
    def _data(cls, settings) -> dict:
        data = {k: getattr(settings, k) for k in cls.model_fields if hasattr(settings, k)}
        data.update(getattr(settings, "engine", None) or {})
        return data

    @classmethod
    def problem(cls, settings) -> tuple[str, str] | None:
        """(field, why) when `settings` (a RuntimeSettings) gives this engine a knob it does not
        have (in `engine`, or one of another engine's flat knobs set away from its default) or
        a value its model refuses; None when the engine takes them all."""
        own = ", ".join(sorted(cls.model_fields)) or "none"
        for key in getattr(settings, "engine", None) or {}:
            if key not in cls.model_fields:
                return f"engine.{key}", f"not a setting of this engine (its own: {own})"
        for key in sorted(ENGINE_FLAT & settings.model_fields_set - set(cls.model_fields)):
            if getattr(settings, key) != RuntimeSettings.model_fields[key].default:
                return key, f"not a setting of this engine (its own: {own})"
        try:
            cls.model_validate(cls._data(settings))
        except ValidationError as exc:
            field, why = pydantic_problem(exc.errors()[0])
            field = field or "engine"
            in_map = field.split(".")[0] in (getattr(settings, "engine", None) or {})
            return ("engine." if in_map else "") + field, why
        return None


class Backend(ABC):
    """Base class of every engine. Subclasses set `name` (the registry sets it too) and
    `capabilities`, and implement load / generate / unload / engine_version; the optional
    methods below raise unless the engine declares their capability and overrides them.

    What the engine knows about itself it declares here, so shared code never names it: which
    files or folders it `claims`, its `maturity` (the decision's engineering layer), the model
    `architectures` it runs, and its `settings_model`."""

    name: ClassVar[str] = ""
    capabilities: ClassVar[frozenset[str]] = frozenset()
    # how much of a model's path to the device this engine has proven, 0-1 (seed 000 §2.5), and why
    maturity: ClassVar[float] = 0.5
    maturity_reason: ClassVar[str] = "an engine edgepick has no record of"
    settings_model: ClassVar[type[EngineSettings]] = EngineSettings
    # The RuntimeSettings fields this engine applies when it loads a model (a plan's runtime
    # axes may vary only these: plan/runtime_axes.py refuses the rest in one line, since a
    # setting the engine ignores would be measured as a difference it never made).
    honoured_settings: ClassVar[frozenset[str]] = frozenset()
    # tried first when several engines claim one path (a plugin may outrank a built-in)
    claim_priority: ClassVar[int] = 0

    @classmethod
    def claims(cls, path: str) -> bool:
        """Whether `path` (a file or folder on disk) is in this engine's own format."""
        return False

    @classmethod
    def settings_problem(cls, settings) -> str | None:
        """Why this engine cannot run with `settings` (a RuntimeSettings) at all, in one line;
        None when it can. A plan's runtime axes leave such a combination unmeasured, saying so."""
        return None

    @classmethod
    def architectures(cls) -> frozenset[str] | None:
        """Model architectures (llama.cpp's names, as GGUF `general.architecture` spells them)
        the engine runs; None when it cannot say (a remote server runs what it runs)."""
        return None

    @classmethod
    def architecture_of(cls, spec) -> str | None:
        """The name `architectures` would list for the model described by `spec` (a ModelSpec):
        a GGUF's own; for a config.json, what the engine's converter turns it into (None: no
        way to tell)."""
        return spec.architecture if spec.source_kind == "gguf" else None

    @classmethod
    def engine_label(cls) -> str:
        """The engine and version as the support check names it, without loading it."""
        return cls.name or cls.__name__

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        unknown = set(cls.capabilities) - CAPABILITIES
        if unknown:
            raise TypeError(f"{cls.__name__} declares unknown capabilities {sorted(unknown)}; "
                            f"known: {', '.join(sorted(CAPABILITIES))}")
        # A declared capability whose methods are not overridden is a bug in the engine: say so
        # when the class is defined, not when a caller first needs it.
        missing = [m for cap in cls.capabilities for m in _METHODS.get(cap, ())
                   if getattr(cls, m) is getattr(Backend, m, None)]
        if missing:
            raise TypeError(f"{cls.__name__} declares capabilities without implementing "
                            f"{', '.join(sorted(missing))}")

    @classmethod
    def supports(cls, capability: str) -> bool:
        if capability not in CAPABILITIES:
            raise ValueError(f"unknown capability '{capability}'")
        return capability in cls.capabilities

    def require(self, capability: str, why: str = "") -> None:
        """Raise one line when this engine lacks `capability` (`why`: what needed it)."""
        if not self.supports(capability):
            self._lacks(capability, why)

    def _lacks(self, capability: str, why: str = "") -> NoReturn:
        raise EdgepickError(f"the {self.name or type(self).__name__} backend cannot "
                            f"{_VERBS[capability]}{'; ' + why if why else ''}")

    # -- every engine ------------------------------------------------------------------------
    @abstractmethod
    def load(self, candidate: Candidate, options: LoadOptions | None = None) -> float:
        """Load (or connect to) the model; return the seconds that took."""

    @abstractmethod
    def generate(self, prompt: str | list[dict] | list[int], max_tokens: int, *,
                 chat: bool = False, stop: list[str] | None = None, logprobs: bool = False,
                 ignore_eos: bool = False, sampling: dict | None = None) -> Generation:
        """Greedy generation; a list of messages is rendered with the model's chat template,
        a list of ints is taken as token ids. `sampling` (only for an engine that declares
        SAMPLING) samples with SAMPLING_FIELDS instead; None or temperature 0 is greedy."""

    @abstractmethod
    def unload(self) -> None:
        """Free the model and its state (or close the connection)."""

    @abstractmethod
    def engine_version(self) -> str:
        """The engine and its version, as stored beside every measurement."""

    def server_settings(self) -> dict | None:
        """What a server says about its own settings; None for an in-process engine."""
        return None

    # -- declared capabilities -----------------------------------------------------------------
    def tokenize(self, text: str, add_bos: bool = True, parse_special: bool = True) -> list[int]:
        self._lacks(TOKENIZE)

    def detokenize(self, tokens: list[int]) -> str:
        self._lacks(TOKENIZE)

    def vocabulary(self) -> Vocabulary:
        self._lacks(VOCABULARY)

    def render_chat(self, messages: list[dict]) -> str:
        self._lacks(CHAT_TEMPLATE)

    def logits(self, tokens: list[int]) -> np.ndarray:
        """Next-token logits at every position of one sequence, shape (len(tokens), n_vocab)."""
        self._lacks(LOGITS, "fidelity needs an in-process engine such as llama_cpp")

    def generate_concurrent(self, prompts: list, max_tokens: int, *,
                            ignore_eos: bool = False) -> list[Generation]:
        """Several requests submitted at the same instant; times are from that instant."""
        self._lacks(CONCURRENT_SEQUENCES)

    def generate_many(self, requests: list[GenRequest],
                      done: Callable[[int, Generation], None] | None = None) -> list[Generation]:
        """Each request's generation, in order; `done(i, generation)` hears each as it finishes,
        so a caller can keep it before the rest are done. An engine with CONCURRENT_SEQUENCES
        decodes them together, as many at a time as the model was loaded for; here, one after
        another."""
        out = []
        for i, r in enumerate(requests):
            out.append(self.generate(r.prompt, r.max_tokens, chat=r.chat, **request_options(r)))
            if done is not None:
                done(i, out[-1])
        return out

    def embed(self, texts: list[str]) -> np.ndarray:
        self._lacks(EMBEDDINGS)

    def time_decode(self, tokens: list[int], fills: list[int], n_tokens: int,
                    repeats: int) -> dict[int, float]:
        """Seconds per single-token decode after each cached `fill` of `tokens`: the fastest of
        `repeats` passes of `n_tokens` decodes, after one warm-up pass."""
        self._lacks(DECODE_TIMING)


# The methods a capability promises; the base versions only say the engine lacks it.
_METHODS = {LOGITS: ("logits",), TOKENIZE: ("tokenize", "detokenize"), VOCABULARY: ("vocabulary",),
            CHAT_TEMPLATE: ("render_chat",), CONCURRENT_SEQUENCES: ("generate_concurrent",),
            EMBEDDINGS: ("embed",), DECODE_TIMING: ("time_decode",)}

_VERBS = {LOGITS: "return full logits", LOGPROBS: "return token log-probabilities",
          CONCURRENT_SEQUENCES: "decode concurrent sequences", IN_PROCESS: "run in process",
          TOKENIZE: "tokenize text", VOCABULARY: "show its vocabulary",
          CHAT_TEMPLATE: "render a chat template here (the server applies it)",
          STREAMING: "stream tokens", EMBEDDINGS: "compute embeddings",
          DECODE_TIMING: "time single-token decodes",
          SAMPLING: "sample (it generates greedily only)"}


def sampling_or_greedy(sampling: dict | None) -> dict | None:
    """The sampling map to apply, or None for greedy (no map, or temperature 0 or unset)."""
    if not sampling or not sampling.get("temperature"):
        return None
    unknown = set(sampling) - set(SAMPLING_FIELDS)
    if unknown:
        raise EdgepickError(f"unknown sampling field(s) {', '.join(sorted(unknown))}; "
                            f"known: {', '.join(SAMPLING_FIELDS)}")
    return sampling
