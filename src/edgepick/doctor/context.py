"""What every check shares: the target, the results store (a figure already measured for this
file and these settings is not measured again), one loaded engine per runtime setting, the
prompts, and the command that reproduces each figure."""

from __future__ import annotations

import hashlib
import json
import shlex
from dataclasses import dataclass, field
from typing import Any, Callable

from edgepick.backends import LoadOptions, get_backend
from edgepick.doctor.prompts import Prompt
from edgepick.doctor.target import Target
from edgepick.progress import ProgressEvent, Tick
from edgepick.records.candidate import Candidate, RuntimeSettings
from edgepick.records.model_ref import ModelRef
from edgepick.store.identity import model_identity

FIGURE_KIND = "doctor_figure"  # one measured figure set of one check


@dataclass
class Ctx:
    target: Target
    store: Any  # ResultStore or None
    progress: Tick
    reference: ModelRef | None = None
    prompts: list[Prompt] = field(default_factory=list)
    prompts_given: bool = False  # --prompts was given (not the built-in probes)
    budget_bytes: int | None = None
    sustain_worker: str | None = None  # "module:function" replacing bench's sustained worker
    threads: int = 2
    symptom: str | None = None
    reused: bool = False  # set by `measured` when the current check's figures came from the store
    memo: dict = field(default_factory=dict)  # figures two checks (or a check and its fix) share
    _engines: dict[str, Any] = field(default_factory=dict)

    # -- reproducing commands -------------------------------------------------------------
    def doctor_cmd(self, symptom: str | None = None) -> str:
        parts = ["edgepick", "doctor", self.target.text]
        if symptom or self.symptom:
            parts += ["--symptom", symptom or self.symptom]
        if self.reference is not None and self.reference.path:
            parts += ["--reference", self.reference.path]
        return shlex.join(parts)

    # -- the store ------------------------------------------------------------------------
    def key(self, check: str, *parts: Any, changes: dict | None = None) -> str:
        model = self.target.model_path or self.target.url or self.target.text
        ident = model_identity(model) if self.target.model_path else model
        settings = self.target.settings.model_copy(update=changes or {})
        blob = json.dumps([check, ident, settings.key_dict(), self.target.sampling,
                           list(parts)], sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:32]

    def measured(self, check: str, parts: list, measure: Callable[[], dict],
                 changes: dict | None = None) -> dict:
        """The stored figures of `check` for this file, settings (with `changes`: what a fix
        sets, so that the run after the fix finds them) and `parts`, else measured and stored
        (a figure already measured is not measured again)."""
        key = self.key(check, *parts, changes=changes)
        held = self.store.get(FIGURE_KIND, key) if self.store is not None else None
        if held is not None:
            self.reused = True
            return held
        out = measure()
        if self.store is not None and not out.get("error"):  # a failure is retried next time
            self.store.put(FIGURE_KIND, key, out, label=f"{check} {self.target.label}")
        return out

    # -- engines --------------------------------------------------------------------------
    def candidate(self, path: str | None = None, **changes: Any) -> Candidate:
        settings = self.target.settings.model_copy(update={"threads": self.threads, **changes})
        ref = ModelRef.file(path or self.target.model_path) if (path or self.target.model_path) \
            else ModelRef.of(self.target.url, backend=self.target.backend)
        return Candidate(ref=ref, settings=RuntimeSettings.model_validate(settings.model_dump()))

    def engine(self, path: str | None = None, need_logits: bool = False, **changes: Any):
        """A loaded engine for the target (or `path`) with `changes` to its settings, kept
        loaded for the next check that asks the same."""
        cand = self.candidate(path, **changes)
        name = json.dumps([cand.model, cand.backend, cand.settings.key_dict(), need_logits],
                          sort_keys=True)
        if name not in self._engines:
            if len(self._engines) >= 2:  # two small models at most: memory is the device's
                self.close_engines()
            backend = get_backend(cand.backend)
            backend.load(cand, LoadOptions(need_logits=need_logits))
            self._engines[name] = backend
        return self._engines[name]

    def close_engines(self) -> None:
        for b in self._engines.values():
            b.unload()
        self._engines.clear()

    def tick(self, done: int, total: int, what: str) -> None:
        self.progress(ProgressEvent(done, total, what))
