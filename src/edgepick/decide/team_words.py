"""The team decision in words (decide/team.py): the assignment, what each member fails alone,
the memory plan, the swap cost, and the hybrid option beside it; or why no team was proposed."""

from __future__ import annotations

from edgepick.decide.hybrid import edge_ok
from edgepick.decide.texts import t
from edgepick.records.decision import Decision, TeamPlan
from edgepick.strings import say
from edgepick.units import mib, whole_pct


def _ci(low: float | None, high: float | None, lang: str) -> str:
    return t("ci", lang, lo=f"{low:.0f}", hi=f"{high:.0f}") if low is not None else ""


def _members(p: TeamPlan) -> str:
    return ", ".join(m.candidate for m in p.members)


def team_lines(d: Decision, sc_name: str, lang: str) -> list[str]:
    p = d.team
    pin = {True: say("report", "pinned", lang), False: say("report", "on_demand", lang)}
    sep = "；" if lang == "zh" else "; "
    assign = sep.join(t("team_member", lang, c=m.candidate, k=", ".join(m.tasks),
                        s=whole_pct(m.share), pin=pin[m.pin]) for m in p.members)
    out = [t("team", lang, sc=sc_name, n=len(p.members), a=assign, b=f"{p.badcases_per_1000:.0f}",
             ci=_ci(p.low, p.high, lang), mix=say("labels", p.mix_source, lang))]
    tasks = [r.task for r in p.routes]
    for m in p.members:
        ranked = next(r for r in d.ranking if r.candidate == m.candidate)
        fails = [x for x in tasks if not edge_ok(ranked.task_gates.get(x, []))]
        out.append(t("team_alone", lang, c=m.candidate, k=", ".join(fails)))
    pinned = [f"{m.candidate} {mib(m.need_bytes)}" for m in p.members if m.pin]
    od = max((m for m in p.members if not m.pin), key=lambda m: m.need_bytes or 0, default=None)
    nothing = say("labels", "nothing_pinned", lang)
    out.append(t("team_memory", lang, p=", ".join(pinned) or nothing,
                 o=f"{od.candidate} {mib(od.need_bytes)}" if od else nothing,
                 t=mib(p.memory_bytes), l=mib(p.budget_bytes)))
    ms = say("labels", "unmeasured_load", lang) if p.swap_ms_per_request is None \
        else f"{p.swap_ms_per_request:.0f} ms"
    out.append(t("team_swaps", lang, w=f"{p.swaps_per_1000:.0f}", ms=ms))
    h = p.hybrid
    if h is None:
        out.append(t("team_no_hybrid", lang))
    else:
        out.append(t("team_vs_hybrid", lang, c=h.candidate, p=whole_pct(h.cloud_share),
                     k=", ".join(r.task for r in h.routes if r.route == "cloud"),
                     b=f"{h.badcases_per_1000:.0f}", ci=_ci(h.low, h.high, lang)))
    return out


def refused_line(p: TeamPlan, lang: str) -> str:
    """Why the smallest team serving every task was not proposed."""
    unmeasured = [m.candidate for m in p.members if m.need_bytes is None]
    if unmeasured:
        why = t("team_noneed", lang, k=", ".join(unmeasured))
    elif p.budget_bytes is None:
        why = t("team_nolimit", lang)
    else:
        why = t("team_over", lang, t=mib(p.memory_bytes), l=mib(p.budget_bytes))
    return t("team_refused", lang, a=_members(p), why=why)
