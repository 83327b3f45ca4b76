"""The recommendation in the seeds' terms: why the winner, its cost against the runner-up, what
to watch (seed 000 §3.3: ask how many badcases the gap becomes and whether there is a fallback).
Pure: the report calls it again with lang="zh" for the Chinese page."""

from __future__ import annotations

from edgepick.decide.closest import best_value, binding_constraints
from edgepick.decide.gates import constraint_of, gate_text, measured_memory
from edgepick.decide.hybrid import routable
from edgepick.decide.scenarios import Scenario
from edgepick.decide.team_words import refused_line, team_lines
from edgepick.decide.texts import (advice, constraint_advice, gate_label, gate_phrase, label,
                                   reasons_text, t, unchecked_text)
from edgepick.records.decision import CandidateSummary, Decision, Explanation, RankedCandidate
from edgepick.strings import say
from edgepick.units import mib, pct, whole_pct


class _Fmt:
    def __init__(self, lang: str):
        self.lang = lang
        self.nm = t("nm", lang)

    def pct(self, v: float | None) -> str:
        return pct(v, self.nm)

    def mib(self, v: float | None) -> str:
        return mib(v, self.nm)

    def num(self, v: float | None, unit: str, fmt: str = "{:.1f}") -> str:
        return self.nm if v is None else fmt.format(v) + f" {unit}"


def _layer_facts(layer: str, w: CandidateSummary, r: CandidateSummary, f: _Fmt) -> str:
    if layer == "quality":
        return t("q_facts", f.lang, a=f.pct(w.quality_overall), b=f.pct(r.quality_overall),
                 c=f.pct(w.format_compliance), d=f.pct(r.format_compliance))
    if layer == "efficiency":
        return t("e_facts", f.lang, a=f.num(w.decode_tps, "tok/s"), b=f.num(r.decode_tps, "tok/s"),
                 c=f.num(w.ttft_p50_ms, "ms", "{:.0f}"), d=f.num(r.ttft_p50_ms, "ms", "{:.0f}"),
                 e=f.mib(measured_memory(w)), f=f.mib(measured_memory(r)))
    if layer == "robustness":
        return t("r_facts", f.lang, a=f.pct(w.decay), b=f.pct(r.decay))
    return t("g_facts", f.lang, a=w.backend, b=r.backend, c=w.quant or "?", d=r.quant or "?")


def _per_1000(fig) -> str:
    return "?" if fig is None else f"{fig.value * 1000:.0f}"


def _task_costs(w: CandidateSummary, r: CandidateSummary, lang: str) -> list[str]:
    """Badcases counted per item, never a score gap read as a badcase rate (seed 000 §3.3)."""
    out = []
    for task, q in sorted(w.tasks.items()):
        rq = r.tasks.get(task)
        if q.badcases is None or rq is None or rq.badcases is None:
            continue
        extra = (q.badcases.value - rq.badcases.value) * 1000
        if extra <= 0:
            continue
        out.append(t("task_cost", lang, t=task, a=_per_1000(q.badcases), b=_per_1000(rq.badcases),
                     n=f"{extra:.0f}", w=w.candidate))
    return out


def _ci(ci: list[float] | None, lang: str) -> str:
    return t("ci", lang, lo=f"{ci[0]:.0f}", hi=f"{ci[1]:.0f}") if ci else ""


def _status_lines(top: RankedCandidate, sc: Scenario, lang: str) -> list[str]:
    if top.status == "proven":
        return [t("proven", lang, sc=sc.name)]
    open_ = [gate_phrase(g, lang) for g in top.gates if g.verdict in ("undetermined", "unmeasured")]
    open_ += [unchecked_text(u, lang) for u in top.unchecked
              if u not in {constraint_of(g.metric) for g in top.gates}]
    return [t("provisional", lang, u="; ".join(open_))]


def _hybrid_lines(d: Decision, by_name: dict[str, CandidateSummary], sc: Scenario,
                  lang: str) -> list[str]:
    h = d.hybrid
    s = by_name[h.candidate]
    ranked = next(r for r in d.ranking if r.candidate == h.candidate)
    edge = [r.task for r in h.routes if r.route == "edge"]
    cloud = [r.task for r in h.routes if r.route == "cloud"]
    ci = t("ci", lang, lo=f"{h.low:.0f}", hi=f"{h.high:.0f}") if h.low is not None else ""
    out = [t("hybrid", lang, sc=sc.name, c=h.candidate, e=", ".join(edge), k=", ".join(cloud),
             r=s.reference_name or "reference", p=whole_pct(h.cloud_share),
             mix=say("labels", h.mix_source, lang), b=f"{h.badcases_per_1000:.0f}", ci=ci)]
    for r in h.routes:
        rci = t("ci", lang, lo=f"{r.low:.0f}", hi=f"{r.high:.0f}") if r.low is not None else ""
        out.append(t("route", lang, t=r.task, r=r.route, s=whole_pct(r.share or 0), ci=rci,
                     b="?" if r.badcases_per_1000 is None else f"{r.badcases_per_1000:.0f}"))
        if r.latency_ms is not None:
            note = "" if r.route == "edge" else f" ({t('budget_word', lang)})"
            out.append(t("route_latency", lang, t=r.task, r=r.route, ms=f"{r.latency_ms:.0f}",
                         note=note))
    if h.cost_per_1000 is not None:
        out.append(t("route_cost", lang, c=f"{h.cost_per_1000:.2f}",
                     p=f"{sc.cloud.price_per_1k_tokens:g}"))
    for task in cloud:
        bad = [g for g in ranked.task_gates.get(task, []) if g.verdict == "fail"
               or (g.verdict != "pass" and g.value is not None and g.limit is not None
                   and (g.value > g.limit if g.direction == "max" else g.value < g.limit))]
        why = "; ".join(f"{gate_label(g, lang)} {gate_text(g)} "
                        f"({g.verdict})" for g in bad) or t("nm", lang)
        out.append(t("task_fail", lang, t=task, why=why))

    open_ = [gate_phrase(g, lang) for g in ranked.gates
             if g.verdict in ("undetermined", "unmeasured")
             and constraint_of(g.metric) not in routable()]
    if open_:  # the edge side itself is only provisionally cleared on speed, memory, decay
        out.append(t("edge_open", lang, u="; ".join(open_)))
    return out


def _gates_text(gates, lang: str) -> str:
    return "; ".join(f"{gate_label(g, lang)} {gate_text(g)} ({g.verdict})"
                     for g in gates) or t("nm", lang)


def _unserved_lines(d: Decision, by_name: dict[str, CandidateSummary], sc: Scenario,
                    lang: str) -> list[str]:
    """Status none because task types have no side that serves them: each named, with what
    fails on the edge, why not the cloud, and the seeds' remedies."""
    near = d.closest or "?"
    s = by_name.get(near)
    ref = (s.reference_name if s else None) or "reference"
    tasks = ", ".join(u.task for u in d.unserved)
    out = [t("none_tasks", lang, sc=sc.name, k=tasks, c=near)]
    for u in d.unserved:
        if u.cloud_blocked == "network: offline":
            why = t("cloud_blocked", lang, b=t("blocked_offline", lang))
        elif u.cloud_blocked == "edge_only_tasks":
            why = t("cloud_blocked", lang, b=t("blocked_private", lang))
        elif u.cloud_blocked == "max_cloud_share":
            why = t("cloud_blocked", lang,
                    b=t("blocked_share", lang, m=whole_pct(sc.max_cloud_share),
                        p=whole_pct(_cloud_share_needed(d))))
        elif u.cloud_no_better and u.extra:
            why = t("cloud_no_better", lang, r=ref, x=f"{u.extra[0]:+.0f}", lo=f"{u.extra[1]:+.0f}",
                    hi=f"{u.extra[2]:+.0f}")
        elif u.cloud_no_better:
            why = t("cloud_unpaired", lang, r=ref)
        else:
            why = t("cloud_fails", lang, r=ref, f=_gates_text(u.cloud_fails, lang))
        remedies = [constraint_advice(constraint_of(g.metric), lang) for g in u.edge_fails[:1]]
        if not u.cloud_blocked:  # the task's own advice may well be "route it to the cloud"
            remedies.append(advice(u.task, lang))
        out.append(t("unserved", lang, t=u.task, s=whole_pct(u.share or 0),
                     e=_gates_text(u.edge_fails, lang), why=why,
                     adv=("；" if lang == "zh" else "; ").join(remedies)))
    return out


def _cloud_share_needed(d: Decision) -> float:
    return sum(u.share or 0 for u in d.unserved if u.cloud_blocked == "max_cloud_share")


def _watch(w: CandidateSummary, ranked: RankedCandidate, sc: Scenario, budget: int | None,
           f: _Fmt) -> list[str]:
    c, lang = sc.constraints, f.lang
    out = []
    for task, q in sorted(w.tasks.items(), key=lambda kv: -(kv[1].badcases_per_1000 or 0)):
        if q.badcases_per_1000 is None or q.badcases_per_1000 <= 20:
            continue
        out.append(t("gap", lang, t=task, n=f"{q.badcases_per_1000:.0f}",
                     ci=_ci(q.badcases_per_1000_ci95, lang), adv=advice(task, lang)))
    if w.format_compliance is not None and w.format_compliance < 0.99:
        out.append(t("format", lang, v=f.pct(w.format_compliance)))
    if w.unacceptable_rate is not None and c.unacceptable_rate_max \
            and w.unacceptable_rate > 0.6 * c.unacceptable_rate_max:
        out.append(t("unacc", lang, v=f.pct(w.unacceptable_rate),
                     l=whole_pct(c.unacceptable_rate_max)))
    if w.decay is not None and c.decay_max and w.decay > 0.6 * c.decay_max:
        out.append(t("decay", lang, v=f.pct(w.decay), l=whole_pct(c.decay_max)))
    limit = c.memory_limit(budget)
    mem = measured_memory(w)
    if mem and limit and mem > 0.8 * limit:
        out.append(t("mem", lang, v=f.mib(mem), p=whole_pct(mem / limit),
                     l=f.mib(limit)))
    if w.ttft_p99_ms and c.ttft_p99_ms_max and w.ttft_p99_ms > 0.8 * c.ttft_p99_ms_max:
        out.append(t("p99", lang, v=f"{w.ttft_p99_ms:.0f} ms", l=f"{c.ttft_p99_ms_max:.0f} ms"))
    out += [t("measure", lang, u=unchecked_text(u, lang)) for u in ranked.unchecked]
    return out


def explain(d: Decision, by_name: dict[str, CandidateSummary], sc: Scenario,
            lang: str = "en") -> Explanation:
    ex = _explain(d, by_name, sc, lang)
    if d.team_refused is not None:  # whatever the decision became instead of a team
        ex.why.append(refused_line(d.team_refused, lang))
    return ex


def _explain(d: Decision, by_name: dict[str, CandidateSummary], sc: Scenario,
             lang: str) -> Explanation:
    ranking, budget = d.ranking, d.budget_bytes
    f = _Fmt(lang)
    alive = [r for r in ranking if not r.eliminated]
    dead = [r for r in ranking if r.eliminated]
    ex = Explanation()
    elim = [t("elim", lang, c=r.candidate, r="; ".join(reasons_text(r, lang))) for r in dead]
    if d.team is not None:
        ex.why += team_lines(d, sc.name, lang)
        ex.watch += elim
        return ex
    if d.recommendation is None and d.unserved:
        ex.why += _unserved_lines(d, by_name, sc, lang)
        ex.watch += elim
        return ex
    if d.recommendation is None and alive:  # every task type would have gone to the cloud
        ex.why.append(t("all_cloud", lang, sc=sc.name, c=d.closest or alive[0].candidate))
        ex.watch += elim
        return ex
    if d.hybrid is not None:
        ex.why += _hybrid_lines(d, by_name, sc, lang)
        ex.watch += elim
        return ex
    if not alive:
        ex.why.append(t("none", lang, sc=sc.name))
        if dead:  # the decision ranks the eliminated nearest-first
            near = dead[0]
            ex.why.append(t("closest", lang, c=near.candidate, n=len(near.violations),
                            r="; ".join(reasons_text(near, lang))))
            ex.why += [gate_phrase(g, lang) for g in near.gates if g.verdict == "undetermined"]
        for constraint in binding_constraints(dead):
            cand, v = best_value(dead, constraint)
            ex.why.append(t("binding", lang, m=label(constraint, lang), l=v.limit_text, c=cand,
                            v=v.value_text, adv=constraint_advice(constraint, lang)))
        ex.watch += elim
        return ex
    top = alive[0]
    w = by_name[top.candidate]
    weights = sc.weights.normalised()
    wtext = ", ".join(f"{label(k, lang)} {whole_pct(v)}" for k, v in weights.items())
    if len(alive) == 1:
        ex.why.append(t("only", lang, w=top.candidate, sc=sc.name, s=f"{top.score:.3f}",
                        wt=wtext))
        ex.why += _status_lines(top, sc, lang)
    else:
        ru = alive[1]
        r = by_name[ru.candidate]
        ex.why.append(t("beats", lang, w=top.candidate, s=f"{top.score:.3f}", r=ru.candidate,
                        rs=f"{ru.score:.3f}", sc=sc.name, wt=wtext))
        ex.why += _status_lines(top, sc, lang)
        diffs = []
        for layer, wt in weights.items():
            a, b = top.layer_scores.get(layer), ru.layer_scores.get(layer)
            if a is not None and b is not None:
                diffs.append((wt * (a - b), layer, a, b, wt))
        for d, layer, a, b, wt in sorted(diffs, reverse=True):
            text = t("layer", lang, layer=label(layer, lang), a=f"{a:.2f}", b=f"{b:.2f}",
                     wt=whole_pct(wt), facts=_layer_facts(layer, w, r, f))
            if d > 0:
                ex.why.append(text)
            elif d < 0:
                ex.cost.append(text)
        ex.cost = _task_costs(w, r, lang) + ex.cost
        if not ex.cost:
            ex.cost.append(t("no_cost", lang, w=top.candidate, r=ru.candidate))
    ex.why += elim
    ex.watch = _watch(w, top, sc, budget, f)
    return ex
