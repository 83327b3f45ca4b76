"""The routing section of a report: the quality-vs-cloud-share curve (chart + table), cascade
vs random and by-task routing at equal cloud share with intervals, and the edge/cloud
consistency rate (seed 001 §6.3, seed 000 §6.3, seed 003 §8.3). Renders a `RouteEvalResult`
(from `edgepick route eval`) in Markdown and HTML, alone or inside the main report."""

from __future__ import annotations

from html import escape
from pathlib import Path

from edgepick.markup import html_table, md_table
from edgepick.route.route_eval import RouteEvalResult
from edgepick.strings import say, texts
from edgepick.units import pct



def curve_rows(res: RouteEvalResult, max_rows: int = 11) -> list[dict]:
    """The curve thinned to about `max_rows` points, the two ends always included."""
    pts = res.curve
    step = max(1, round((len(pts) - 1) / (max_rows - 1))) if len(pts) > max_rows else 1
    keep = pts[::step] + ([pts[-1]] if (len(pts) - 1) % step else [])
    return [p.model_dump() for p in keep]


def curve_chart(res: RouteEvalResult) -> str:
    from edgepick.report.charts import _svg, plt

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
    cs = res.consistency
    flag = t["alert"] if cs.alert else t["ok"]
    if cs.verdict == "undetermined":
        flag += f" ({t['undetermined']})"
    lines.append(f"{t['consistency']}: {cs.disagreements}/{cs.n} = {pct(cs.rate)} "
                 f"[{pct(cs.ci95[0])}, {pct(cs.ci95[1])}] — {flag}")
    return lines


def render_markdown(res: RouteEvalResult, lang: str = "en", chart: str = "charts/route_curve.svg",
                    level: int = 2) -> str:
    t, h = texts("route_report", lang), "#" * level
    tb = tables(res, lang)
    return "\n".join([f"{h} {t['title']}", "", *[f"- {x}" for x in summary_lines(res, lang)], "",
                      f"![{t['curve']}]({chart})", "", f"{h}# {t['curve']}", "",
                      md_table(*tb["curve"]), "", f"{h}# {t['compare']}", "",
                      md_table(*tb["compare"]), "", f"*{t['by_task_note']}*", ""])


def render_html(res: RouteEvalResult, lang: str = "en", svg: str | None = None) -> str:
    t = texts("route_report", lang)
    tb = tables(res, lang)
    return "".join([f"<h2>{escape(t['title'])}</h2><ul>",
                    *[f"<li>{escape(x)}</li>" for x in summary_lines(res, lang)], "</ul>",
                    f"<div class='chart' id='chart-route'>{svg or curve_chart(res)}</div>",
                    f"<h3>{escape(t['curve'])}</h3>", html_table(*tb["curve"]),
                    f"<h3>{escape(t['compare'])}</h3>", html_table(*tb["compare"]),
                    f"<p class='muted'>{escape(t['by_task_note'])}</p>"])


def write_route_report(res: RouteEvalResult, out: str | Path, lang: str = "en") -> list[Path]:
    """route.md, route.html, charts/route_curve.svg and data/route_eval.json in `out`."""
    out = Path(out)
    (out / "charts").mkdir(parents=True, exist_ok=True)
    (out / "data").mkdir(parents=True, exist_ok=True)
    svg = curve_chart(res)
    (out / "charts" / "route_curve.svg").write_text(svg, encoding="utf-8")
    (out / "data" / "route_eval.json").write_text(res.model_dump_json(indent=2), encoding="utf-8")
    md = out / f"route.{lang}.md"
    md.write_text(render_markdown(res, lang, level=1), encoding="utf-8")
    from edgepick.report.html import CSS

    html = out / f"route.{lang}.html"
    title = escape(texts("route_report", lang)["title"])
    html.write_text(f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>"
                    f"{title}</title><style>{CSS}</style></head><body>"
                    f"{render_html(res, lang, svg)}</body></html>\n", encoding="utf-8")
    return [html, md]


def latest_route_eval(store) -> RouteEvalResult | None:
    """The most recent `route eval` stored in a results store, if any."""
    from edgepick.route.route_eval import ROUTE_EVAL_KIND

    last = None
    for _, payload in store.items(ROUTE_EVAL_KIND):
        last = payload
    return None if last is None else RouteEvalResult.model_validate(last)


def append_to_report(out: str | Path, res: RouteEvalResult, langs: list[str]) -> list[Path]:
    """Add the routing section to the main report's files in `out` (Markdown appended, HTML
    inserted before </body>), with its chart and data beside the others."""
    out = Path(out)
    svg = curve_chart(res)
    (out / "charts").mkdir(parents=True, exist_ok=True)
    (out / "charts" / "route_curve.svg").write_text(svg, encoding="utf-8")
    (out / "data").mkdir(parents=True, exist_ok=True)
    (out / "data" / "route_eval.json").write_text(res.model_dump_json(indent=2), encoding="utf-8")
    from edgepick.report.append import append_section

    return append_section(out, langs, lambda lg: render_markdown(res, lg),
                          lambda lg: render_html(res, lg, svg))
