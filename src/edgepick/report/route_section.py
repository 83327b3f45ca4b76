"""The routing section of a report: the quality-vs-cloud-share curve (chart + table), cascade
vs random and by-task routing at equal cloud share with intervals, and the edge/cloud
consistency rate (seed 001 §6.3, seed 000 §6.3, seed 003 §8.3). Renders a `RouteEvalResult`
(from `edgepick route eval`) in Markdown and HTML, alone or inside the main report."""

from __future__ import annotations

from html import escape
from pathlib import Path

from edgepick.markup import html_table, md_table
from edgepick.report.append import append_section
from edgepick.report.charts import _svg, plt
from edgepick.report.html import CSS
from edgepick.route.route_eval import ROUTE_EVAL_KIND, RouteEvalResult
from edgepick.route.tiers import PASS_ALL
from edgepick.strings import say, texts
from edgepick.units import pct



def curve_rows(res: RouteEvalResult, max_rows: int = 11) -> list[dict]:
    """The curve thinned to about `max_rows` points, the two ends always included."""
    pts = res.curve
    step = max(1, round((len(pts) - 1) / (max_rows - 1))) if len(pts) > max_rows else 1
    keep = pts[::step] + ([pts[-1]] if (len(pts) - 1) % step else [])
    return [p.model_dump() for p in keep]


def curve_chart(res: RouteEvalResult) -> str:
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    xs = [p.cloud_share * 100 for p in res.curve]
    ax.plot(xs, [p.quality * 100 for p in res.curve], marker=".", label="cascade (edge confidence)")
    ax.plot([0, 100], [res.edge_only * 100, res.cloud_only * 100], linestyle="--", color="grey",
            label="random (expected)")
    bt = [c for c in res.comparisons if c.other == "by_task"]
    if bt:
        ax.scatter([c.cloud_share * 100 for c in bt], [c.other_quality * 100 for c in bt],
                   marker="s", color="#2ca02c", label="by task", zorder=3)
    if res.calibration is not None:
        ax.scatter([res.calibration.cloud_share * 100], [res.calibration.quality * 100],
                   marker="*", s=160, color="#d62728", label="calibrated", zorder=4)
    ax.set_xlabel("requests sent to the cloud (%)")
    ax.set_ylabel("quality (mean item score, %)")
    ax.set_title(f"{res.edge} → {res.cloud}: quality vs cloud share")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _svg(fig)


def tables(res: RouteEvalResult, lang: str) -> dict[str, tuple[list[str], list[list[str]]]]:
    t = texts("route_report", lang)
    curve = ([t["share"], t["quality"], t["threshold"]],
             [[pct(r["cloud_share"]), f"{r['quality']:.3f}",
               "-" if r["threshold"] is None else f"{r['threshold']:.4f}"] for r in curve_rows(res)])
    comp = ([t["share"], t["router"], "cascade", t["quality"], t["diff"], t["ci"], t["verdict"]],
            [[pct(c.cloud_share), c.other, f"{c.cascade:.3f}", f"{c.other_quality:.3f}",
              f"{c.diff:+.3f}", f"[{c.ci95[0]:+.3f}, {c.ci95[1]:+.3f}]",
              say("route_verdicts", c.verdict, lang)]
             for c in res.comparisons])
    return {"curve": curve, "compare": comp}


def summary_lines(res: RouteEvalResult, lang: str) -> list[str]:
    t = texts("route_report", lang)
    lines = [f"{res.edge} → {res.cloud}, {res.n_items} items, confidence = {res.confidence.method}"
             + (f" (k={res.confidence.k})" if res.confidence.method == "first_k" else "") + "; "
             + t["ends"].format(e=res.edge_only, c=res.cloud_only)]
    if res.gap_recovered is not None:
        lines.append(f"{t['apgr']}: {res.gap_recovered:.3f}")
    cal = res.calibration
    if cal is not None:
        lines.append(f"{t['calib']} ({cal.target} {cal.wanted:g}): {cal.threshold if cal.threshold is None else round(cal.threshold, 4)}"
                     f" → {t['share']} {pct(cal.cloud_share)}, {t['quality']} {cal.quality:.3f}"
                     + ("" if cal.reachable else " (target not reachable)"))
    rnd = [c for c in res.comparisons if c.other == "random"]
    if rnd:  # at the calibrated share when there is one, else where the cascade does best
        at = next((c for c in rnd if cal is not None and c.cloud_share == cal.cloud_share),
                  max(rnd, key=lambda c: c.diff))
        verdict = say("route_verdicts", at.verdict, lang)
        lines.append(f"{t['vs_random']} {pct(at.cloud_share)}: {at.diff:+.3f} "
                     f"[{at.ci95[0]:+.3f}, {at.ci95[1]:+.3f}] → {verdict}")
    rm = res.router_model
    if rm is not None:
        per = ", ".join(f"{task} {c}/{n}" for task, (c, n) in rm.per_task.items())
        lines.append(t["router_model"].format(m=rm.model) + f": {rm.correct}/{rm.n} = "
                     f"{pct(rm.accuracy)} [{pct(rm.ci95[0])}, {pct(rm.ci95[1])}] ({per}); "
                     + t["router_majority"].format(task=rm.majority_task, p=pct(rm.majority)))
    cs = res.consistency
    flag = t["alert"] if cs.alert else t["ok"]
    if cs.verdict == "undetermined":
        flag += f" ({t['undetermined']})"
    lines.append(f"{t['consistency']}: {cs.disagreements}/{cs.n} = {pct(cs.rate)} "
                 f"[{pct(cs.ci95[0])}, {pct(cs.ci95[1])}] — {flag}")
    return lines


def _threshold(v: float, lang: str) -> str:
    return texts("route_report", lang)["pass_all"] if v >= PASS_ALL else f"{v:.3f}"


def tier_lines(tr, lang: str) -> list[str]:
    """The tiers, each alone, and how the thresholds were chosen and judged."""
    t = texts("route_report", lang)
    alone = ", ".join(f"{m} {q:.3f}" for m, q in zip(tr.models, tr.tier_only))
    lines = [" → ".join(tr.models), f"{t['tier_only']}: {alone}",
             t["tier_split"].format(c=tr.calibration_items, h=tr.held_out_items)]
    c = tr.calibrated
    if c is not None:
        lines.append(f"{t['tier_calibrated']} ({t['tier_cap']} {pct(c.cloud_share_cap)}): "
                     f"{' / '.join(_threshold(v, lang) for v in c.thresholds)} → "
                     f"{' / '.join(pct(x) for x in c.shares)}, {t['quality']} {c.cascade:.3f}; "
                     f"{t['tier_random']} {c.random:.3f}, {c.diff:+.3f} "
                     f"[{c.ci95[0]:+.3f}, {c.ci95[1]:+.3f}] → "
                     f"{say('route_verdicts', c.verdict, lang)}")
    return lines


def tier_table(tr, lang: str) -> tuple[list[str], list[list[str]]]:
    """At each cloud-share cap: the calibrated thresholds, the held-out shares per tier, the
    cascade against random assignment at those shares."""
    t = texts("route_report", lang)
    head = [t["tier_cap"], t["tier_keep"], t["tier_shares"], "cascade", t["tier_random"],
            t["diff"], t["ci"], t["verdict"]]
    rows = [[pct(c.cloud_share_cap), " / ".join(_threshold(v, lang) for v in c.thresholds),
             " / ".join(pct(x) for x in c.shares), f"{c.cascade:.3f}", f"{c.random:.3f}",
             f"{c.diff:+.3f}", f"[{c.ci95[0]:+.3f}, {c.ci95[1]:+.3f}]",
             say("route_verdicts", c.verdict, lang)] for c in tr.comparisons]
    return head, rows


def tier_chart(tr) -> str:
    """Quality against cloud share: the best thresholds at each share (all items), random
    assignment with the same shares, and the calibrated point judged held out."""
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    xs = [p.shares[-1] * 100 for p in tr.front]
    ax.plot(xs, [p.quality * 100 for p in tr.front], marker=".", label="cascade over tiers")
    rnd = [sum(s * q for s, q in zip(p.shares, tr.tier_only)) * 100 for p in tr.front]
    ax.plot(xs, rnd, linestyle="--", color="grey", label="random at equal shares (expected)")
    c = tr.calibrated
    if c is not None:
        ax.scatter([c.shares[-1] * 100], [c.cascade * 100], marker="*", s=160, color="#d62728",
                   label="calibrated, held out", zorder=4)
    ax.set_xlabel("requests answered by the cloud (%)")
    ax.set_ylabel("quality (mean item score, %)")
    ax.set_title(" → ".join(tr.models))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _svg(fig)


def _tier_md(res: RouteEvalResult, lang: str, h: str, chart: str) -> list[str]:
    if res.tiered is None:
        return []
    t = texts("route_report", lang)
    return [f"{h}# {t['tiers']}", "", *[f"- {x}" for x in tier_lines(res.tiered, lang)], "",
            f"![{t['tier_curve']}]({chart})", "", md_table(*tier_table(res.tiered, lang)), ""]


def render_markdown(res: RouteEvalResult, lang: str = "en", chart: str = "charts/route_curve.svg",
                    level: int = 2, tier_chart_path: str = "charts/route_tiers.svg") -> str:
    t, h = texts("route_report", lang), "#" * level
    tb = tables(res, lang)
    return "\n".join([f"{h} {t['title']}", "", *[f"- {x}" for x in summary_lines(res, lang)], "",
                      f"![{t['curve']}]({chart})", "", f"{h}# {t['curve']}", "",
                      md_table(*tb["curve"]), "", f"{h}# {t['compare']}", "",
                      md_table(*tb["compare"]), "", f"*{t['by_task_note']}*", "",
                      *_tier_md(res, lang, h, tier_chart_path)])


def _tier_html(res: RouteEvalResult, lang: str, svg: str | None) -> str:
    if res.tiered is None:
        return ""
    t = texts("route_report", lang)
    return "".join([f"<h3>{escape(t['tiers'])}</h3><ul>",
                    *[f"<li>{escape(x)}</li>" for x in tier_lines(res.tiered, lang)], "</ul>",
                    f"<div class='chart' id='chart-route-tiers'>{svg or tier_chart(res.tiered)}"
                    "</div>", html_table(*tier_table(res.tiered, lang))])


def render_html(res: RouteEvalResult, lang: str = "en", svg: str | None = None,
                tiers_svg: str | None = None) -> str:
    t = texts("route_report", lang)
    tb = tables(res, lang)
    return "".join([f"<h2>{escape(t['title'])}</h2><ul>",
                    *[f"<li>{escape(x)}</li>" for x in summary_lines(res, lang)], "</ul>",
                    f"<div class='chart' id='chart-route'>{svg or curve_chart(res)}</div>",
                    f"<h3>{escape(t['curve'])}</h3>", html_table(*tb["curve"]),
                    f"<h3>{escape(t['compare'])}</h3>", html_table(*tb["compare"]),
                    f"<p class='muted'>{escape(t['by_task_note'])}</p>",
                    _tier_html(res, lang, tiers_svg)])


def _write_charts(res: RouteEvalResult, out: Path) -> tuple[str, str | None]:
    """charts/route_curve.svg (and route_tiers.svg over tiers) and data/route_eval.json."""
    (out / "charts").mkdir(parents=True, exist_ok=True)
    (out / "data").mkdir(parents=True, exist_ok=True)
    svg = curve_chart(res)
    (out / "charts" / "route_curve.svg").write_text(svg, encoding="utf-8")
    tiers_svg = None
    if res.tiered is not None:
        tiers_svg = tier_chart(res.tiered)
        (out / "charts" / "route_tiers.svg").write_text(tiers_svg, encoding="utf-8")
    (out / "data" / "route_eval.json").write_text(res.model_dump_json(indent=2), encoding="utf-8")
    return svg, tiers_svg


def write_route_report(res: RouteEvalResult, out: str | Path, lang: str = "en") -> list[Path]:
    """route.md, route.html, charts/route_curve.svg and data/route_eval.json in `out`."""
    out = Path(out)
    svg, tiers_svg = _write_charts(res, out)
    md = out / f"route.{lang}.md"
    md.write_text(render_markdown(res, lang, level=1), encoding="utf-8")

    html = out / f"route.{lang}.html"
    title = escape(texts("route_report", lang)["title"])
    html.write_text(f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>"
                    f"{title}</title><style>{CSS}</style></head><body>"
                    f"{render_html(res, lang, svg, tiers_svg)}</body></html>\n", encoding="utf-8")
    return [html, md]


def latest_route_eval(store) -> RouteEvalResult | None:
    """The most recent `route eval` stored in a results store, if any."""
    last = None
    for _, payload in store.items(ROUTE_EVAL_KIND):
        last = payload
    return None if last is None else RouteEvalResult.model_validate(last)


def append_to_report(out: str | Path, res: RouteEvalResult, langs: list[str]) -> list[Path]:
    """Add the routing section to the main report's files in `out` (Markdown appended, HTML
    inserted before </body>), with its chart and data beside the others."""
    out = Path(out)
    svg, tiers_svg = _write_charts(res, out)

    return append_section(out, langs, lambda lg: render_markdown(res, lg),
                          lambda lg: render_html(res, lg, svg, tiers_svg))
