"""doctor on a GGUF that lives on a server (`https://…/x.gguf`, `hf:ORG/REPO/FILE.gguf`): the
checks that need only its header, read with range requests (models/remote_header.py), run as they
run on the file; the checks that load the model or read its tensors are listed as not run, with
the command that downloads the file. Nothing past the header is downloaded."""

from __future__ import annotations

import shlex
import time
from typing import Callable

from edgepick.doctor import served_template as st
from edgepick.doctor.checks import finding
from edgepick.doctor.checks_file import unsupported_finding
from edgepick.doctor.checks_memory import LOWER_TYPES, _device
from edgepick.doctor.checks_template import _render_error, _template_and_vocab, _template_source
from edgepick.doctor.context import Ctx
from edgepick.doctor.finding import CheckRun, DoctorReport, Evidence, Fix
from edgepick.doctor.plan import CHECKS, plan
from edgepick.doctor.runner import (QUICK_BUDGET_S, SYMPTOM_BUDGET_S, DoctorRequest, finished,
                                    ran, timed_check)
from edgepick.doctor.target import Target
from edgepick.errors import EdgepickError
from edgepick.fit.planner import fit_one
from edgepick.models.remote_spec import remote_spec
from edgepick.progress import ProgressEvent, Tick, silent
from edgepick.records.model import ModelSpec
from edgepick.records.model_ref import ModelRef
from edgepick.units import human_bytes

# The checks a header answers. file_integrity's header part is the header read itself (a
# truncated or foreign header fails the resolution); its NaN scan and sha256 need the tensors.
STATIC = ("engine_support", "chat_template", "memory_budget")


def pull_cmd(ref: ModelRef) -> str:
    return shlex.join(["edgepick", "models", "pull", ref.spec, "--registry", "REGISTRY"])


def planned(req: DoctorRequest) -> list[str]:
    """The checks doctor would run on the file, in the order runner.run runs them."""
    names = [c.name for c in plan(req.symptom)]
    if not req.checks:
        names = [n for n in ("file_integrity", "engine_support") if n not in names] + names
    else:
        unknown = set(req.checks) - set(names)
        if unknown:
            raise EdgepickError(f"--check {', '.join(sorted(unknown))}: not in the plan for "
                                f"{req.symptom or 'the quick checks'} ({', '.join(names)})")
        names = [n for n in names if n in req.checks]
    return names


def not_run_line(report: DoctorReport, ref: ModelRef) -> str | None:
    """One line: the checks that need the file, and how to get it."""
    names = [c.check for c in report.checks if c.status == "skipped" and c.check not in STATIC]
    if not names:
        return None
    return (f"not run without the file: {', '.join(names)} (they load the model or read its "
            f"tensors); download it with `{pull_cmd(ref)}` and run doctor on the file")


def _spec_fit_need(ctx: Ctx, spec: ModelSpec, n_ctx: int | None = None,
                   quant: str | None = None) -> int:
    """fit's need as checks_memory.fit_need predicts it, from the header's spec."""
    s = ctx.target.settings
    return fit_one(spec, quant, n_ctx or s.n_ctx,
                   _device(ctx, ctx.target.budget(ctx.budget_bytes).bytes),
                   kv_type=s.kv_type, n_ubatch=s.n_ubatch, swa_full=s.swa_full,
                   mmap=s.mmap).total_bytes


def engine_support(ctx: Ctx, ref: ModelRef, spec: ModelSpec):
    return unsupported_finding(ctx, spec, shlex.join(["edgepick", "inspect", "-m", ref.spec]))


def chat_template(ctx: Ctx, ref: ModelRef, spec: ModelSpec):
    """A template that does not render is the finding it is on the file; a missing one is
    reported from the vocabulary alone (which format serve's ChatML fallback is to this model):
    which format answers best is measured on the file."""
    template, fp, tokens = _template_and_vocab(ctx.target.model_path)
    inspect = shlex.join(["edgepick", "inspect", "-m", ref.spec])
    if template:
        err = _render_error(template)
        if err is None:
            return None
        source = _template_source(ctx, fp)
        return finding(ctx, "chat_template", f"the GGUF's chat template does not render: {err}",
                       Fix(text="replace the template with one that renders"
                                + (f" (the one in {source[1]})" if source else "")
                                + f"; doctor writes the fixed file once it is downloaded "
                                  f"({pull_cmd(ref)})"),
                       1.0, [Evidence(what="template render", value=err, command=inspect)],
                       detail="malformed")
    native = "chatml" in st.trained_formats(set(tokens))
    return finding(
        ctx, "chat_template",
        f"{spec.name} has no chat template: serve's llama-server falls back to ChatML "
        "(llama.cpp common/chat.cpp)" + (", this vocabulary's own turn format" if native else
                                         ", whose <|im_start|> markers are not tokens of this "
                                         "vocabulary"),
        Fix(text="download it and run doctor on the file: it measures the answers in each "
                 "format the model may know and writes the file with the best one",
            command=pull_cmd(ref)),
        0.4 if native else 0.6,
        [Evidence(what="prompt format serve uses", value="ChatML (no tokenizer.chat_template)",
                  command=inspect)], detail="missing")


def memory_budget(ctx: Ctx, ref: ModelRef, spec: ModelSpec):
    """fit's need against the budget (the measured need is what the file adds)."""
    budget = ctx.target.budget(ctx.budget_bytes)
    s = ctx.target.settings
    predicted = _spec_fit_need(ctx, spec)
    if predicted <= budget.bytes:
        return None
    weights = sum(t.n_bytes for t in spec.tensors)
    phase = "load (the weights alone)" if weights > budget.bytes else \
        "inference (KV cache and compute buffers on top of the weights)"
    needs = {t: _spec_fit_need(ctx, spec, quant=t) for t in LOWER_TYPES}
    fits = [t for t in LOWER_TYPES if needs[t] < predicted and needs[t] <= budget.bytes]
    fit_cmd = shlex.join(["edgepick", "fit", "-m", ref.spec, "--ctx", str(s.n_ctx),
                          "--kv-type", s.kv_type])
    if fits:
        text = (f"a {fits[0]} build needs {human_bytes(needs[fits[0]])} by fit: choose it "
                "(after `edgepick doctor` on it with --symptom garbled shows its quality holds)")
    else:
        text = (f"the weights alone ({human_bytes(weights)}) leave no room in "
                f"{human_bytes(budget.bytes)}: choose a smaller model, a shorter context or a "
                "device with more memory (the command lists this model's lower-bit builds)")
    return finding(
        ctx, "memory_budget",
        f"need {human_bytes(predicted)} by fit over the budget {human_bytes(budget.bytes)} "
        f"({budget.source}); it peaks at {phase}",
        Fix(text=text, command=shlex.join(["edgepick", "fit", "-m", ref.spec, "--quant",
                                           ",".join(LOWER_TYPES)])),
        0.8, [Evidence(what="need (fit's prediction)", value=predicted, limit=budget.bytes,
                       unit="bytes", command=fit_cmd),
              Evidence(what="weights", value=weights, unit="bytes"),
              Evidence(what=f"budget ({budget.source})", value=budget.bytes, unit="bytes")],
        detail=phase.split(" (")[0])


RUN = {"engine_support": engine_support, "chat_template": chat_template,
       "memory_budget": memory_budget}


def run_remote(req: DoctorRequest, ref: ModelRef, store=None, progress: Tick = silent,
               on_check: Callable[[CheckRun, float], None] | None = None) -> DoctorReport:
    """The plan of runner.run for `ref` (a resolved remote ModelRef): its header-only checks
    run, the others skipped with what they need; stored as runner.run stores a report."""
    spec = remote_spec(ref.remote)
    target = Target(text=ref.spec, kind="gguf", model_path=ref.remote.parts[0].header,
                    backend=ref.backend)
    ctx = Ctx(target=target, store=store, progress=progress, reference=req.reference,
              budget_bytes=req.budget_bytes, threads=req.threads, symptom=req.symptom)
    names = planned(req)
    budget = req.budget_s or (SYMPTOM_BUDGET_S if req.symptom else QUICK_BUDGET_S)
    report = DoctorReport(target=req.target, kind="remote", model=ref.spec, symptom=req.symptom,
                          budget_s=budget, created=time.time())
    t0 = time.monotonic()
    for i, name in enumerate(names):
        check = CHECKS[name]
        progress(ProgressEvent(i, len(names), name))
        if name in RUN:
            cr = timed_check(name, check.cause, lambda: RUN[name](ctx, ref, spec), report)
        else:
            cr = CheckRun(check=name, cause=check.cause, status="skipped", seconds=0.0,
                          note="needs the file (the header alone does not answer it)")
        if ran(report, cr, req, on_check, budget - (time.monotonic() - t0)):
            break
    progress(ProgressEvent(len(names), len(names), "done"))
    return finished(report, req, t0, store, ref.label)
