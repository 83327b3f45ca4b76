"""doctor's entry point: the checks of the symptom's plan (or the quick health checks), most
likely first, within a time budget, stopping once an axis explains the symptom; findings ranked
and stored so a report of this model can show them."""

from __future__ import annotations

import hashlib
import json
import time
from typing import Callable

from pydantic import BaseModel, ConfigDict, Field, field_validator

from edgepick.doctor import prompts as pr
from edgepick.doctor.checks import Skip
from edgepick.doctor.context import Ctx
from edgepick.doctor.finding import SYMPTOMS, CheckRun, DoctorReport, ranked
from edgepick.doctor.plan import BLOCKING, CHECKS, STOP_CONFIDENCE, plan
from edgepick.doctor.target import resolve_target
from edgepick.errors import EdgepickError, known_name
from edgepick.progress import ProgressEvent, Tick, silent
from edgepick.records.model_ref import ModelRef

KIND = "doctor"  # one stored report per target and symptom (report/doctor_section.py reads it)
QUICK_BUDGET_S = 180.0
SYMPTOM_BUDGET_S = 600.0


class DoctorRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    target: str  # a GGUF, a deploy.yaml or the URL of a running `edgepick serve`
    symptom: str | None = None
    reference: ModelRef | None = None  # a known-good GGUF of the same vocabulary (F16)
    prompts: str | None = None  # an eval JSONL or one prompt a line
    budget_bytes: int | None = Field(None, gt=0)  # the memory budget, over the deploy's own
    budget_s: float | None = Field(None, gt=0)  # time budget; default by mode
    threads: int = Field(2, ge=1)
    checks: list[str] | None = None  # run only these (by name), in plan order
    sustain_worker: str | None = None  # "module:function" replacing bench's sustained worker

    @field_validator("symptom")
    @classmethod
    def _symptom(cls, v: str | None) -> str | None:
        return None if v is None else known_name(v, SYMPTOMS, "symptom")


def store_key(report: DoctorReport) -> str:
    blob = json.dumps([report.target, report.model, report.symptom])
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def _context(req: DoctorRequest, store, progress: Tick):
    target = resolve_target(req.target)
    reference = req.reference
    given = pr.load(req.prompts) if req.prompts else None
    return Ctx(target=target, store=store, progress=progress, reference=reference,
               prompts=given or pr.builtin(), prompts_given=given is not None,
               budget_bytes=req.budget_bytes, sustain_worker=req.sustain_worker,
               threads=req.threads, symptom=req.symptom)


def run(req: DoctorRequest, store, progress: Tick = silent,
        on_check: Callable[[CheckRun, float], None] | None = None) -> DoctorReport:
    """Run the plan; `on_check(run, seconds_left)` after each check (the CLI prints it)."""
    ctx = _context(req, store, progress)
    checks = plan(req.symptom)
    if ctx.target.model_path and not req.checks:
        # a file that does not load explains any symptom: checked first whatever was asked
        first = [CHECKS[n] for n in ("file_integrity", "engine_support")
                 if n not in {c.name for c in checks}]
        checks = first + checks
    if req.checks:
        unknown = set(req.checks) - {c.name for c in checks}
        if unknown:
            raise EdgepickError(f"--check {', '.join(sorted(unknown))}: not in the plan for "
                                f"{req.symptom or 'the quick checks'} "
                                f"({', '.join(c.name for c in checks)})")
        checks = [c for c in checks if c.name in req.checks]
    budget = req.budget_s or (SYMPTOM_BUDGET_S if req.symptom else QUICK_BUDGET_S)
    report = DoctorReport(target=req.target, kind=ctx.target.kind, model=ctx.target.model_path,
                          symptom=req.symptom, budget_s=budget, created=time.time())
    t0 = time.monotonic()
    try:
        for i, check in enumerate(checks):
            left = budget - (time.monotonic() - t0)
            progress(ProgressEvent(i, len(checks), check.name))
            if check.needs_file and not ctx.target.model_path:
                cr = CheckRun(check=check.name, cause=check.cause, status="skipped",
                              note="needs a local GGUF (the target is a URL)")
            elif check.cost_s > left:
                cr = CheckRun(check=check.name, cause=check.cause, status="skipped",
                              note=f"over the time budget ({check.cost_s:.0f} s expected, "
                                   f"{max(left, 0):.0f} s left)")
            else:
                cr = _one(ctx, check, report)
            if ran(report, cr, req, on_check, budget - (time.monotonic() - t0)):
                break
        progress(ProgressEvent(len(checks), len(checks), "done"))
    finally:
        ctx.close_engines()
    return finished(report, req, t0, store, ctx.target.label)


def ran(report: DoctorReport, cr: CheckRun, req: DoctorRequest,
        on_check: Callable[[CheckRun, float], None] | None, left: float) -> bool:
    """`cr` joins the report and is shown; True when the run stops after it: a blocking
    finding (the model cannot load), or one that explains the symptom (`report.stopped`)."""
    report.checks.append(cr)
    if on_check:
        on_check(cr, left)
    found = [f for f in report.findings if f.check == cr.check]
    if found and cr.check in BLOCKING:
        report.stopped = f"{cr.check}: the model cannot load as it is"
    elif req.symptom and any(f.confidence >= STOP_CONFIDENCE for f in found):
        report.stopped = f"{cr.cause} explains the symptom"
    return bool(report.stopped)


def finished(report: DoctorReport, req: DoctorRequest, t0: float, store,
             label: str) -> DoctorReport:
    """The findings ranked, the time taken, and the report stored under its key."""
    report.findings = ranked(report.findings, req.symptom)
    report.elapsed_s = round(time.monotonic() - t0, 1)
    if store is not None:
        store.put(KIND, store_key(report), report.model_dump(mode="json"),
                  label=f"doctor {label}")
    return report


def timed_check(name: str, cause: str, call: Callable[[], object],
                report: DoctorReport) -> CheckRun:
    """One check's run: its finding joins `report`; a Skip or an EdgepickError is its status."""
    t = time.monotonic()
    try:
        found = call()
        status, note = ("finding", found.summary) if found else ("clear", "")
        if found:
            report.findings.append(found)
    except Skip as exc:
        status, note = "skipped", str(exc)
    except EdgepickError as exc:
        status, note = "error", str(exc)
    return CheckRun(check=name, cause=cause, status=status,
                    seconds=round(time.monotonic() - t, 1), note=note)


def _one(ctx, check, report: DoctorReport) -> CheckRun:
    ctx.reused = False
    cr = timed_check(check.name, check.cause, lambda: check.run(ctx), report)
    return cr.model_copy(update={"reused": ctx.reused})
