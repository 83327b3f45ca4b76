"""Any OpenAI-compatible server (llama-server, MLC, vLLM, …) measured from the outside.

The model is named by a URL, `http(s)://host:port/v1#model-name` (the fragment picks the served
model; without it the first one listed by /v1/models is used); a key-protected endpoint names
the environment variable holding its key (`ModelRef.api_key_env`), sent as a Bearer token. Generation always streams (SSE)
so each chunk's arrival time is known; TTFT is the arrival of the first chunk that carries
generated text, never the empty chunk that only announces the assistant role. Token counts come
from the server's usage block; tokenizing needs the server's own /tokenize (llama-server has it).
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Callable, ClassVar

import httpx

from edgepick.backends import base
from edgepick.backends import llama_server_client as lsc
from edgepick.backends.base import Backend, Generation, LoadOptions
from edgepick.backends.llama_cpp_grammar import request_fields
from edgepick.errors import EdgepickError
from edgepick.records.candidate import Candidate


class OpenAIHttpBackend(Backend):
    name: ClassVar[str] = "openai_http"
    # Not in process: memory and load time belong to the server, not to us. Tokenizing needs the
    # server's /tokenize (llama-server has it; others answer 404, reported in one line).
    capabilities: ClassVar[frozenset[str]] = frozenset({
        base.LOGPROBS, base.CONCURRENT_SEQUENCES, base.TOKENIZE, base.STREAMING, base.SAMPLING,
        base.GRAMMAR})
    # a remote server's threads, cache and batches are its own; a constraint rides on each request
    honoured_settings: ClassVar[frozenset[str]] = frozenset({"constrain"})
    maturity: ClassVar[float] = 0.7
    maturity_reason: ClassVar[str] = ("a remote OpenAI-compatible server: the engine on the device "
                                      "is whatever it runs, measured only through HTTP")

    def __init__(self, timeout_s: float = 600.0) -> None:
        self.base: str | None = None
        self.root: str | None = None
        self.model: str | None = None
        self.timeout_s = timeout_s
        self._client = None
        self._props: dict | None = None
        self.width = 1  # requests in flight at once in generate_many (load's n_seq)

    # -- lifecycle -------------------------------------------------------------------------
    def load(self, candidate: Candidate, options: LoadOptions | None = None) -> float:
        """Connect and check the model is served; returns the time that took (not a load time:
        the server loaded its model before we arrived)."""
        if options is not None and options.need_logits:
            self.require(base.LOGITS, "use an in-process backend (llama_cpp) for fidelity")
        if not candidate.ref.is_endpoint:
            raise EdgepickError(f"{candidate.ref.spec}: the openai_http backend needs an "
                                "endpoint, http://host:port/v1#model-name")
        self.base, self.model = candidate.ref.url, candidate.ref.served_name
        self.width = options.n_seq if options is not None else 1
        self._props = None  # the server's own settings (its slots): read again for this one
        self.root = lsc.root_of(self.base)
        self.key_env = getattr(candidate.ref, "api_key_env", None)  # named in a refusal's hint
        # httpx verifies https against certifi's CAs, or SSL_CERT_FILE / SSL_CERT_DIR when set
        self._client = httpx.Client(timeout=httpx.Timeout(self.timeout_s, connect=10.0),
                                    headers=auth_headers(candidate.ref))
        t0 = time.perf_counter()
        served = [m.get("id") for m in self._get_json(f"{self.base}/models").get("data", [])]
        if self.model is None:
            if not served:
                raise EdgepickError(f"{self.base}: the server lists no models")
            self.model = served[0]
        elif served and self.model not in served:
            raise EdgepickError(f"{self.base}: model '{self.model}' is not served "
                                f"(served: {', '.join(map(str, served))})")
        return time.perf_counter() - t0

    def unload(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def engine_version(self) -> str:
        props = self.server_settings() or {}
        build = props.get("build_info")
        return f"{build} at {self.base}" if build else f"OpenAI-compatible server at {self.base}"

    def server_settings(self) -> dict | None:
        """What the server says about itself (llama-server's /props), when it says anything."""
        if self._props is None:
            self._props = {}
            p = lsc.props(self._http(), self.root or "")
            if isinstance(p, dict):
                gen = p.get("default_generation_settings") or {}
                self._props = {"build_info": p.get("build_info"), "n_ctx": gen.get("n_ctx"),
                               "total_slots": p.get("total_slots"),
                               "model_path": p.get("model_path")}
        return self._props or None

    # -- text ------------------------------------------------------------------------------
    def tokenize(self, text: str, add_bos: bool = True, parse_special: bool = True) -> list[int]:
        return lsc.tokenize(self._http(), text, add_bos, parse_special, root=self.root or "")

    def detokenize(self, tokens: list[int]) -> str:
        return lsc.detokenize(self._http(), tokens, root=self.root or "")

    # -- inference -------------------------------------------------------------------------
    def generate(self, prompt: str | list[dict] | list[int], max_tokens: int, *,
                 chat: bool = False, stop: list[str] | None = None, logprobs: bool = False,
                 ignore_eos: bool = False, sampling: dict | None = None,
                 constraint: dict | None = None) -> Generation:
        return self._submit(prompt, max_tokens, chat=chat, stop=stop, logprobs=logprobs,
                            ignore_eos=ignore_eos, sampling=sampling, constraint=constraint)[0]

    def _submit(self, prompt, max_tokens: int, *, chat: bool = False, stop=None,
                logprobs: bool = False, ignore_eos: bool = False,
                sampling: dict | None = None,
                constraint: dict | None = None) -> tuple[Generation, float]:
        as_chat = chat or (isinstance(prompt, list) and bool(prompt)
                           and isinstance(prompt[0], dict))
        body: dict = {"model": self.model, "max_tokens": max_tokens, "temperature": 0.0,
                      "seed": 42, "stream": True, "stream_options": {"include_usage": True},
                      # llama-server extensions; other servers ignore unknown fields. A prompt
                      # cache would turn repeated runs into measurements of nothing.
                      "cache_prompt": False}
        sampling = base.sampling_or_greedy(sampling)
        if sampling is not None:
            # OpenAI's names (temperature, top_p, seed) and llama-server's (top_k, repeat_penalty);
            # an unset field is left to the server's default
            body.update({k: v for k, v in sampling.items() if v is not None})
        if constraint is not None:
            body.update(request_fields(constraint))
        if ignore_eos:
            body["ignore_eos"] = True
        if stop:
            body["stop"] = stop
        if as_chat:
            msgs = prompt if isinstance(prompt, list) else [{"role": "user", "content": prompt}]
            body["messages"] = msgs
            if logprobs:
                body["logprobs"] = True
            path = "/chat/completions"
        else:
            body["prompt"] = prompt
            if logprobs:
                body["logprobs"] = 1
            path = "/completions"
        return self._stream(path, body, as_chat, logprobs)

    def generate_many(self, requests: list[base.GenRequest],
                      done: Callable[[int, Generation], None] | None = None) -> list[Generation]:
        """As many requests in flight at once as load's n_seq, and no more than the server's
        slots when it says how many it has (llama-server's /props): more would only queue there.
        `done` hears each in the caller's thread as it arrives. A request that fails does not
        stop the others; the first failure is raised once all have answered, and the caller
        retries only the requests `done` has not heard."""
        slots = (self.server_settings() or {}).get("total_slots")
        width = min(self.width, len(requests), slots if isinstance(slots, int) and slots > 0
                    else self.width)
        if width < 2:
            return super().generate_many(requests, done)
        out: list = [None] * len(requests)
        failure: EdgepickError | None = None
        with ThreadPoolExecutor(width, thread_name_prefix="edgepick-http") as pool:
            pending = {pool.submit(self.generate, r.prompt, r.max_tokens, chat=r.chat,
                                   **base.request_options(r)): i for i, r in enumerate(requests)}
            for fut in as_completed(pending):
                try:
                    out[pending[fut]] = fut.result()
                except EdgepickError as exc:
                    failure = failure or exc
                    continue
                if done is not None:
                    done(pending[fut], out[pending[fut]])
        if failure is not None:
            raise failure
        return out

    def generate_concurrent(self, prompts: list, max_tokens: int, *,
                            ignore_eos: bool = False) -> list[Generation]:
        """All requests released at the same instant from their own threads; times are from that
        instant, so TTFT includes any queueing the server does."""
        n = len(prompts)
        results: list[Generation | BaseException | None] = [None] * n
        gate = threading.Barrier(n + 1)
        t0_box: list[float] = []

        def worker(i: int) -> None:
            gate.wait()
            try:
                g, submitted = self._submit(prompts[i], max_tokens, ignore_eos=ignore_eos)
                shift = submitted - t0_box[0]
                g.token_times = [t + shift for t in g.token_times]
                if g.prefill_s is not None:
                    g.prefill_s += shift
                results[i] = g
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller below
                results[i] = exc

        threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(n)]
        for t in threads:
            t.start()
        t0_box.append(time.perf_counter())
        gate.wait()
        for t in threads:
            t.join()
        for r in results:
            if isinstance(r, BaseException):
                raise r
        return results  # type: ignore[return-value]

    # -- plumbing --------------------------------------------------------------------------
    def _stream(self, path: str, body: dict, as_chat: bool,
                logprobs: bool) -> tuple[Generation, float]:
        times: list[float] = []
        pieces: list[str] = []
        lps: list[float] = []
        usage: dict = {}
        timings: dict = {}
        finish = "length"
        t0 = time.perf_counter()
        try:
            with self._http().stream("POST", f"{self.base}{path}", json=body) as r:
                if r.status_code >= 400:
                    r.read()
                    self._check(r)
                for chunk in lsc.iter_sse_chunks(r.iter_bytes(), f"{self.base}{path}"):
                    now = time.perf_counter() - t0
                    usage = chunk.get("usage") or usage
                    timings = chunk.get("timings") or timings
                    for choice in chunk.get("choices") or []:
                        text = (choice.get("delta") or {}).get("content") if as_chat \
                            else choice.get("text")
                        if text:  # the role-only and the closing chunks carry no text
                            times.append(now)
                            pieces.append(text)
                            if logprobs:
                                lps.extend(_chunk_logprobs(choice.get("logprobs")))
                        if choice.get("finish_reason"):
                            finish = "stop" if choice["finish_reason"] == "stop" else "length"
        except httpx.HTTPError as exc:
            raise EdgepickError(f"{self.base}{path}: request failed ({exc})") from None
        n_gen = usage.get("completion_tokens", len(times))
        n_prompt = usage.get("prompt_tokens", timings.get("prompt_n", 0))
        prefill_s = timings["prompt_ms"] / 1e3 if "prompt_ms" in timings else None
        g = Generation(text="".join(pieces), prompt_tokens=n_prompt or 0, generated_tokens=n_gen,
                       token_times=times, prefill_s=prefill_s, finish_reason=finish,
                       token_logprobs=lps if logprobs else None,
                       engine_timings=timings or None)
        return g, t0

    def _http(self):
        if self._client is None:
            raise EdgepickError("backend used before a model was loaded")
        return self._client

    def _get_json(self, url: str) -> dict:
        try:
            r = self._http().get(url)
        except httpx.HTTPError as exc:
            raise EdgepickError(f"{url}: cannot reach the server ({exc})") from None
        self._check(r)
        return r.json()

    def _check(self, r) -> None:
        if r.status_code in (401, 403):
            name = getattr(self, "key_env", None)
            hint = (f"the key in {name} was refused: check its value (the variable was sent as "
                    "a Bearer token)" if name else
                    "a key-protected endpoint: name the variable holding its key "
                    "(--reference-key-env / --model-key-env NAME, or api_key_env in a plan)")
            try:
                lsc.check(r)
            except EdgepickError as exc:
                raise EdgepickError(f"{exc} — {hint}") from None
        lsc.check(r)


def auth_headers(ref) -> dict[str, str]:
    """`Authorization: Bearer <key>` from the variable the endpoint names; the key lives only in
    this client's headers, never in a record, the store, a report or a message."""
    name = getattr(ref, "api_key_env", None)
    if not name:
        return {}
    key = os.environ.get(name, "").strip()
    if not key:
        raise EdgepickError(f"{ref.spec}: the API key variable {name} is not set (export "
                            f"{name}=... before running)")
    return {"Authorization": f"Bearer {key}"}


def _chunk_logprobs(lp) -> list[float]:
    """Log-probabilities from either the chat shape ({content: [{logprob}]}) or the legacy
    completions shape ({token_logprobs: [...]})."""
    if not lp:
        return []
    if isinstance(lp.get("content"), list):
        return [float(x["logprob"]) for x in lp["content"] if "logprob" in x]
    return [float(x) for x in lp.get("token_logprobs") or [] if x is not None]
