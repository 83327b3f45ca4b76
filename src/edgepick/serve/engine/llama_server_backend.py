"""Serve's engine as a `Backend`: a local GGUF run by llama-server with the command line serve
gives it (serve/engine/llama_server.py's `llama_server_argv`), measured over loopback HTTP.

What the in-process engine cannot do, this one can: llama-cpp-python 0.3.36 runs no speculative
decoding of llama-server's kinds (its `LlamaPromptLookupDecoding` is a prompt n-gram lookup of
its own, not llama.cpp's common/speculative.cpp), so a candidate with `speculative` set is
benched and evaluated here, on exactly the flags serve will start it with. Each generation
carries the server's own `timings` (draft_n, draft_n_accepted); the server runs at log
verbosity 4, where common/speculative.cpp writes each kind's cumulative time (`dur(b,g,a)`)
when a request ends, so the draft's time per request is the difference of two such lines.
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import tempfile
import time
from pathlib import Path
from typing import ClassVar

import httpx

from edgepick.backends import base
from edgepick.backends import llama_cpp_support as support
from edgepick.backends import llama_server_client as lsc
from edgepick.backends.base import Generation, LoadOptions
from edgepick.backends.llama_cpp_support import LlamaCppSettings
from edgepick.backends.openai_http import OpenAIHttpBackend
from edgepick.errors import EdgepickError
from edgepick.launch.process import free_port, start
from edgepick.launch.stop import stop
from edgepick.models.draft_vocab import draft_mismatch
from edgepick.records.candidate import Candidate
from edgepick.serve.engine.llama_server import llama_server_argv
from edgepick.serve.engine.process import EngineSpec

# common/speculative.cpp, common_speculative_print_stats (LOG_TRC): one line per kind
_STATS = re.compile(r"statistics\s+(\S+):.*?dur\(b,g,a\) = ([0-9.]+), ([0-9.]+), ([0-9.]+) ms")
START_TIMEOUT_S = 120.0


class LlamaServerBackend(support.LlamaCppFiles, OpenAIHttpBackend):
    name: ClassVar[str] = "llama_server"
    capabilities: ClassVar[frozenset[str]] = OpenAIHttpBackend.capabilities
    settings_model: ClassVar[type] = LlamaCppSettings
    # all on llama-server's command line (serve/engine/llama_server.py llama_server_command)
    honoured_settings: ClassVar[frozenset[str]] = frozenset({
        "threads", "n_ctx", "n_batch", "n_ubatch", "seed", "kv_type", "flash_attn", "swa_full",
        "mmap", "adapter", "constrain", "speculative", "placement"})
    maturity: ClassVar[float] = 1.0
    maturity_reason: ClassVar[str] = ("the pinned llama-server serve runs, started with serve's "
                                      "own command line")
    claim_priority: ClassVar[int] = -1  # a GGUF is llama_cpp's unless this one is asked for

    @classmethod
    def engine_label(cls) -> str:
        return f"llama-server ({support.engine_label()})"

    def __init__(self, timeout_s: float = 600.0) -> None:
        super().__init__(timeout_s)
        self.proc: subprocess.Popen | None = None
        self.log_path: Path | None = None
        self.command: list[str] = []
        self._draft_ms = 0.0  # the kinds' cumulative time at the last request's end

    def load(self, candidate: Candidate, options: LoadOptions | None = None) -> float:
        if options is not None and options.need_logits:
            self.require(base.LOGITS, "use an in-process backend (llama_cpp) for fidelity")
        ref = candidate.ref
        if ref.is_endpoint:
            raise EdgepickError(f"{ref.spec}: the llama_server engine runs a local GGUF; use "
                                "openai_http for a running server")
        spec = candidate.settings.speculative
        if spec is not None and spec.model:
            found = draft_mismatch(ref.path, spec.model)
            if found:
                raise EdgepickError(found)
        self.unload()
        slots = options.n_seq if options is not None else 1
        port, key = free_port(), secrets.token_urlsafe(24)
        es = EngineSpec(path=ref.path, name="edgepick-bench", runtime=candidate.settings,
                        slots=slots)
        # verbosity 4: the speculative kinds' timing lines (module docstring)
        self.command = llama_server_argv(es, port) + ["-lv", "4"]
        fd, log = tempfile.mkstemp(prefix="edgepick-llama-server-", suffix=".log")
        os.close(fd)
        self.log_path = Path(log)
        t0 = time.perf_counter()
        with open(self.log_path, "ab") as fh:
            self.proc = start(self.command, stdout=fh, stderr=subprocess.STDOUT,
                              env=dict(os.environ, LLAMA_API_KEY=key), new_session=True)
        root = f"http://127.0.0.1:{port}"
        proc = self.proc
        try:
            lsc.wait_healthy(f"{root}/health", lambda: proc.poll() is None, START_TIMEOUT_S,
                             what=os.path.basename(self.command[0]))
        except EdgepickError as exc:
            tail = self._log_tail()
            self.unload()
            raise EdgepickError(f"{ref.path}: {exc}; last log lines: {tail}") from None
        load_s = time.perf_counter() - t0
        self.base, self.root, self.model = f"{root}/v1", root, es.name
        self.width, self._props = slots, None
        self._client = httpx.Client(timeout=httpx.Timeout(self.timeout_s, connect=10.0),
                                    headers=lsc.bearer(key))
        self._draft_ms = self._draft_total()
        return load_s

    def unload(self) -> None:
        super().unload()
        if self.proc is not None:
            stop(self.proc, timeout=10.0)
            self.proc = None
        if self.log_path is not None:
            self.log_path.unlink(missing_ok=True)
            self.log_path = None

    def engine_version(self) -> str:
        build = (self.server_settings() or {}).get("build_info")
        return f"llama-server {build} ({support.engine_label()})" if build \
            else self.engine_label()

    def _submit(self, prompt, max_tokens: int, **kw) -> tuple[Generation, float]:
        g, t0 = super()._submit(prompt, max_tokens, **kw)
        timings = g.engine_timings
        if timings and "draft_n" in timings and self.width == 1:
            # one request at a time: the kinds' time since the last request is this one's
            total = self._draft_total(wait_s=2.0, above=self._draft_ms)
            timings["draft_ms"] = round(total - self._draft_ms, 3)
            self._draft_ms = total
        return g, t0

    def _draft_total(self, wait_s: float = 0.0, above: float = -1.0) -> float:
        """The speculative kinds' cumulative time (begin + draft + accept, ms) by the last lines
        the server wrote; waits up to `wait_s` for it to pass `above` (the line follows the
        response)."""
        end = time.monotonic() + wait_s
        while True:
            latest: dict[str, float] = {}
            try:
                text = self.log_path.read_text(errors="replace") if self.log_path else ""
            except OSError:
                text = ""
            for m in _STATS.finditer(text):
                latest[m.group(1)] = sum(float(x) for x in m.groups()[1:])
            total = sum(latest.values())
            if total > above or time.monotonic() >= end:
                return total
            time.sleep(0.02)

    def _log_tail(self, n: int = 3) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").strip().splitlines()
        except (OSError, AttributeError):
            return "(no log)"
        return " | ".join(lines[-n:]) or "(empty log)"
