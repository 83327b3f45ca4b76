"""The report's sequential-evaluation section: generations used against fixed
N, the time saved, and per candidate its items and generations against fixed N, why it stopped
and each gate's verdict with the look at which it settled; candidates not evaluated at all
(they fail a gate no routing avoids) are named. The figures are evaluate/savings.py's, read from
the eval row the run stored."""

from __future__ import annotations

from html import escape
from pathlib import Path

from edgepick.evaluate.eval_result import EVAL_KIND
from edgepick.evaluate.savings import savings
from edgepick.markup import html_table, md_table
from edgepick.records.evaluation import EvalResult
from edgepick.report.append import append_section
from edgepick.strings import texts
from edgepick.units import pct


def latest_sequential(store, names: list[str]) -> EvalResult | None:
    """The latest eval row of any of `names` (the decision's candidates), when it was
    sequential; None for a fixed-N one or none at all."""
    last = None
    for _, payload in store.items(EVAL_KIND):
        left_out = (payload.get("sequential") or {}).get("not_evaluated", {})
        if ({c.get("name") for c in payload.get("candidates", [])} | set(left_out)) & set(names):
            last = payload
    if last is None or last.get("sequential") is None:
        return None
    return EvalResult.model_validate(last)


def _gates(c, t: dict) -> str:
    return "; ".join(f"{g.metric}[{g.task or 'all'}] {g.verdict} "
                     + (f"({g.look}, {g.items})" if g.look else f"({t['open']}, {g.items})")
                     for g in c.gates)


def lines(res: EvalResult, lang: str) -> list[str]:
    t, seq, s = texts("savings_report", lang), res.sequential, savings(res)
    out = [t["lead"].format(used=s["generations"], fixed=s["fixed_generations"],
                            share=pct(s["share"]), looks=seq.looks, ref=seq.reference_items,
                            n=seq.fixed_items),
           t["no_time"] if s["time_saved_s"] is None else t["time"].format(t=s["time_saved_s"]),
           t["method"].format(method=seq.method, alpha=seq.alpha)]
    if seq.budget_exhausted:
        out.append(t["budget"].format(b=seq.budget_s or 0, what=", ".join(seq.undetermined)
                                      or "-"))
        out += [t["to_settle"].format(what=name, ids=", ".join(ids[:8]))
                for name, ids in seq.to_settle.items()]
    return out


def table(res: EvalResult, lang: str) -> tuple[list[str], list[list[str]]]:
    t, seq, s = texts("savings_report", lang), res.sequential, savings(res)
    rows = []
    for c in seq.candidates:
        gens, fixed = s["generations_per_candidate"][c.name]
        rows.append([c.name, f"{c.items} / {c.fixed_items}", f"{gens} / {fixed}", c.why,
                     _gates(c, t)])
    for name, gate in seq.not_evaluated.items():
        rows.append([name, f"0 / {seq.fixed_items}", f"0 / {seq.fixed_items * res.samples}",
                     t["not_evaluated"].format(gate=gate), "-"])
    ref = res.reference.name
    rows.append([f"{ref} (reference)", f"{seq.reference_items} / {seq.fixed_items}",
                 f"{seq.reference_items * res.samples} / {seq.fixed_items * res.samples}",
                 "-", "-"])
    return [t["candidate"], t["items"], t["generations"], t["why"], t["gates"]], rows


def render_markdown(res: EvalResult, lang: str) -> str:
    t = texts("savings_report", lang)
    return "\n".join([f"## {t['title']}", "", *[f"- {x}" for x in lines(res, lang)], "",
                      md_table(*table(res, lang)), ""])


def render_html(res: EvalResult, lang: str) -> str:
    t = texts("savings_report", lang)
    return "".join([f"<h2>{escape(t['title'])}</h2><ul>",
                    *[f"<li>{escape(x)}</li>" for x in lines(res, lang)], "</ul>",
                    html_table(*table(res, lang))])


def append_to_report(out: str | Path, res: EvalResult, langs: list[str]) -> list[Path]:
    """The section in the report's files, and data/sequential.json beside the other data."""
    data = Path(out) / "data"
    data.mkdir(parents=True, exist_ok=True)
    (data / "sequential.json").write_text(res.sequential.model_dump_json(indent=2),
                                          encoding="utf-8")
    return append_section(out, langs, lambda lg: render_markdown(res, lg),
                          lambda lg: render_html(res, lg))
