"""Slow decoding with speculative decoding on: the same prompts decoded with it and without,
side by side on the engine that speculates (bench/speculation.py), and the acceptance rate as
the evidence. A kind whose drafts are mostly rejected costs the draft's time and a wider
verification step for nothing (llama.cpp's tracker has such reports), and which kind pays
depends on the text, so the fix is to turn it off or to try another kind."""

from __future__ import annotations

from edgepick.backends.registry import backend_class, backend_names
from edgepick.bench.speculation import figures, run_requests
from edgepick.doctor.checks import Skip, finding
from edgepick.doctor.finding import Evidence, Fix
from edgepick.errors import EdgepickError
from edgepick.evaluate.items import EvalItem
from edgepick.records.model_ref import ModelRef

TOKENS = 48  # per prompt: enough steps for drafts to be accepted or not
SLOWER = 0.95  # speculation's decode speed below this share of plain decoding's is the cause


def _engine(path: str) -> str:
    """The engine that applies speculative decoding and runs this file (declared, not named)."""
    for name in backend_names():
        try:
            cls = backend_class(name)
        except EdgepickError:  # an engine that cannot load does not qualify
            continue
        if "speculative" in cls.honoured_settings and cls.claims(path):
            return name
    raise Skip("no installed engine applies speculative decoding to this file")


def speculation(ctx):
    spec = ctx.target.settings.speculative
    if spec is None:
        raise Skip("the target decodes without speculative decoding")
    if not ctx.target.model_path:
        raise Skip("speculation is compared on a local file; an endpoint runs what it runs")
    engine = _engine(ctx.target.model_path)
    items = [EvalItem(id=p.id, task="generation", messages=p.messages, reference=None,
                      max_tokens=TOKENS) for p in ctx.prompts]
    rt = ctx.target.settings.model_copy(update={"threads": ctx.threads})

    def measure() -> dict:
        ref = ModelRef.of(ctx.target.model_path, backend=engine)
        reqs = run_requests(ref, rt, [rt], items, {})
        (row,) = figures(reqs)
        return row.model_dump()

    m = ctx.measured("speculation", [spec.key_dict(), [p.messages for p in ctx.prompts]],
                     measure)
    speed = m["speedup"]
    if speed is None or speed >= SLOWER:
        return None
    acc = m["acceptance"]
    over = m.get("drafting_items") or m["items"]  # the prompts it drafted on, else all
    span = "" if m["speedup_low"] is None else \
        f", 95% interval {m['speedup_low']:.2f}–{m['speedup_high']:.2f}"
    ev = [Evidence(what=f"decode speed with {spec.type} ÷ without (geometric mean over "
                        f"{over} prompts{span})",
                   value=round(speed, 2), baseline=1.0, unit="×",
                   command=ctx.doctor_cmd("slow")),
          Evidence(what="draft tokens accepted" + ("" if acc is None else
                   f" (95% interval {m['acceptance_low']:.2f}–{m['acceptance_high']:.2f})"),
                   value=None if acc is None else round(acc, 3), unit="share"),
          Evidence(what="the kind's share of decode time", value=None if m["draft_share"] is
                   None else round(m["draft_share"], 3), unit="share")]
    why = ("it drafted nothing on these prompts" if acc is None
           else f"{acc:.0%} of its draft tokens were accepted")
    return finding(
        ctx, "speculation",
        f"speculative decoding ({spec.tag()}) decodes at {speed:.2f}× the speed without it: "
        f"{why}",
        Fix(text="turn it off (deploy.yaml runtime.speculative: none), or measure another kind "
                 "on your own prompts (an n-gram kind such as ngram-mod for answers that copy "
                 "the prompt; a smaller draft model): `edgepick speculate` measures each kind per task "
                 "on your eval set (docs/bench.md)"),
        min(0.95, 0.5 + (1 - speed)) if m["verdict"] == "loses" else 0.45, ev,
        detail=spec.tag())
