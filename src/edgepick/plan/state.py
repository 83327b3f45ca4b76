"""A run's state for one device: the plan, the store, the device and the candidates, with what
each stage found (skipped candidates, counted context lengths, notes)."""

from __future__ import annotations

from dataclasses import dataclass, field

from edgepick.clock import now
from edgepick.plan.loader import LoadedPlan
from edgepick.records.candidate import Candidate, RuntimeSettings
from edgepick.records.device import DeviceProfile
from edgepick.records.model_ref import ModelRef
from edgepick.store import ResultStore


@dataclass
class RunCandidate:
    name: str
    ref: ModelRef  # for a planned build, the file it will be written to
    reference: ModelRef | None = None  # same-tokenizer reference for fidelity
    source: ModelRef | None = None  # planned build: quantize `source` to `qtype`
    qtype: str | None = None
    imatrix: str | None = None
    skipped: str | None = None  # why it is not measured (does not fit, build failed)
    build: object | None = None  # planned engine conversion (convert/plan_section.py)
    # one combination of the plan's runtime axes (its `variant` names it); None: plan.runtime
    settings: RuntimeSettings | None = None
    device: str | None = None  # the plan entry's `device`: measured on that device only
    prune: object | None = None  # a pruned build: the cut `source` is (plan/prune_section.py)

    @property
    def variant(self) -> str | None:
        return self.settings.variant if self.settings is not None else None


@dataclass
class RunState:
    lp: LoadedPlan
    store: ResultStore  # with this device's run begun
    device: DeviceProfile
    candidates: list[RunCandidate] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # candidate name -> its ContextTokens counted from the scenario's context_from (its gates' lengths)
    context: dict = field(default_factory=dict)
    deadline: float | None = None  # `run --budget`: edgepick.clock.now() at which to stop

    def remaining_s(self) -> float | None:
        if self.deadline is None:
            return None

        return max(1e-3, self.deadline - now())

    def __post_init__(self) -> None:
        for c in self.candidates:
            if c.ref.is_remote:
                self.notes.append(f"{c.name}: only its header was read ({c.ref.spec}): fit "
                                  "estimates it, nothing measures it (`edgepick models pull "
                                  f"{c.ref.spec} --registry DIR` downloads it)")

    def active(self, local_only: bool = False) -> list[RunCandidate]:
        """The candidates to measure: not skipped, and with a file (a remote GGUF's header is
        fit's alone)."""
        return [c for c in self.candidates if not c.skipped and not c.ref.is_remote
                and (not local_only or not c.ref.is_endpoint)]

    def settings(self, c: RunCandidate) -> RuntimeSettings:
        """The runtime settings `c` is measured with: its combination, else the plan's."""
        return c.settings if c.settings is not None else self.lp.plan.runtime

    def candidate(self, c: RunCandidate) -> Candidate:
        return Candidate(ref=c.ref, label=c.name, settings=self.settings(c))
