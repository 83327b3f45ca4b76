"""Charts as inline SVG strings (matplotlib's SVG backend, text as paths: no fonts needed) and
the data behind each, which export.py writes as CSV/JSON."""

from __future__ import annotations

import io
import re

import matplotlib

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402

from edgepick.records.decision import CandidateSummary, Decision  # noqa: E402
from edgepick.records.decision_texts import DecisionTexts  # noqa: E402

plt.rcParams.update({"svg.fonttype": "path", "font.size": 9, "figure.dpi": 100,
                     "svg.hashsalt": "edgepick"})


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    # Inline SVG in HTML needs neither the XML declaration nor the DTD reference.
    text = re.sub(r"<\?xml[^>]*\?>\s*", "", text)
    text = re.sub(r"<!DOCTYPE[^>]*>\s*", "", text)
    return text.strip()


def pareto_data(summaries: list[CandidateSummary], decision: Decision,
                texts: DecisionTexts) -> list[dict]:
    """Quality is the score's own figure (task accuracy under the scenario's task weights), and
    memory the figure the tables and the memory gate show (the need), both as decide stored
    them."""
    front = set(decision.pareto)
    eliminated = {r.candidate for r in decision.ranking if r.eliminated}
    rows = []
    for s in summaries:
        said = texts.of(s.candidate)
        if said.quality is not None and s.decode_tps is not None:
            rows.append({"candidate": s.candidate, "quality": said.quality,
                         "decode_tps": s.decode_tps,
                         "memory_mib": None if said.memory_need is None
                         else said.memory_need / 2**20,
                         "pareto": s.candidate in front, "eliminated": s.candidate in eliminated})
    return rows


def pareto_chart(rows: list[dict]) -> str | None:
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    mem = [r["memory_mib"] or 0 for r in rows]
    top = max(mem) or 1
    for r, m in zip(rows, mem):
        ax.scatter(r["decode_tps"], r["quality"] * 100, s=60 + 600 * m / top,
                   alpha=0.2 if r.get("eliminated") else 0.55,
                   color="#d62728" if r["pareto"] else "#1f77b4",
                   edgecolors="black", linewidths=0.6)
        ax.annotate(f"{r['candidate']}\n{m:.0f} MiB" if m else r["candidate"],
                    (r["decode_tps"], r["quality"] * 100), textcoords="offset points",
                    xytext=(6, 6), fontsize=8)
    ax.margins(x=0.25, y=0.2)
    ax.set_xlabel("decode speed (tok/s), higher is better")
    ax.set_ylabel("task accuracy (%)")
    ax.set_title("Pareto front of survivors (red), eliminated faded - bubble area = memory need")
    ax.grid(alpha=0.3)
    return _svg(fig)


def curve_data(summaries: list[CandidateSummary], attr: str, x: str, y: str) -> list[dict]:
    return [{"candidate": s.candidate, x: p.x, y: p.y} for s in summaries for p in getattr(s, attr)]


def curve_chart(rows: list[dict], x: str, y: str, xlabel: str, ylabel: str,
                title: str) -> str | None:
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    for name in dict.fromkeys(r["candidate"] for r in rows):
        pts = sorted((r[x], r[y]) for r in rows if r["candidate"] == name)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _svg(fig)


def timeline_data(summaries: list[CandidateSummary]) -> list[dict]:
    """The sustained runs' timelines (bench): speed, hottest sensor, power, memory."""
    return [{"candidate": s.candidate, "t_s": p.get("t_s"), "decode_tps": p.get("decode_tps"),
             "temperature_c": p.get("temperature_c"), "power_w": p.get("power_w"),
             "anon_swap_mib": None if p.get("anon_swap_bytes") is None
             else p["anon_swap_bytes"] / 2**20}
            for s in summaries for p in s.sustained_timeline]


def timeline_chart(rows: list[dict]) -> str | None:
    """Decode speed per window, with temperature and power on a second axis where measured."""
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    second = None
    for name in dict.fromkeys(r["candidate"] for r in rows):
        pts = sorted((r for r in rows if r["candidate"] == name), key=lambda r: r["t_s"])
        line, = ax.plot([r["t_s"] for r in pts], [r["decode_tps"] for r in pts], marker="o",
                        label=f"{name} tok/s")
        for key, style, unit in (("temperature_c", "--", "°C"), ("power_w", ":", "W")):
            got = [(r["t_s"], r[key]) for r in pts if r[key] is not None]
            if got:
                second = second or ax.twinx()
                second.plot([t for t, _ in got], [v for _, v in got], linestyle=style,
                            color=line.get_color(), label=f"{name} {unit}")
    ax.set_xlabel("seconds into the run")
    ax.set_ylabel("decode tok/s (window)")
    ax.grid(alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    if second is not None:
        second.set_ylabel("°C (dashed) / W (dotted)")
        h2, l2 = second.get_legend_handles_labels()
        handles, labels = handles + h2, labels + l2
    ax.set_title("Sustained run: speed" + (", temperature and power" if second else
                                           " (no temperature or power sensor)"))
    ax.legend(handles, labels, fontsize=8)
    return _svg(fig)


def task_data(summaries: list[CandidateSummary]) -> list[dict]:
    rows = []
    for s in summaries:
        for task, q in sorted(s.tasks.items()):
            if q.score is None:
                continue
            # The score's own bootstrap interval, inside [0, 1] by construction (never score ±
            # a gap interval, which can leave the score's range).
            lo, hi = (q.score_ci95 or [None, None])[:2]
            lo = None if lo is None else max(0.0, min(lo, q.score))
            hi = None if hi is None else min(1.0, max(hi, q.score))
            rows.append({"candidate": s.candidate, "task": task, "score": q.score,
                         "ci_low": lo, "ci_high": hi, "ref_score": q.ref_score})
    return rows


def task_chart(rows: list[dict]) -> str | None:
    if not rows:
        return None
    tasks = list(dict.fromkeys(r["task"] for r in rows))
    names = list(dict.fromkeys(r["candidate"] for r in rows))
    width = 0.8 / len(names)
    fig, ax = plt.subplots(figsize=(max(6.4, 1.2 * len(tasks)), 3.8))
    for i, name in enumerate(names):
        xs, ys, err = [], [], [[], []]
        for j, t in enumerate(tasks):
            r = next((r for r in rows if r["candidate"] == name and r["task"] == t), None)
            if r is None:
                continue
            xs.append(j + i * width - 0.4 + width / 2)
            ys.append(r["score"] * 100)
            lo = r["ci_low"] if r["ci_low"] is not None else r["score"]
            hi = r["ci_high"] if r["ci_high"] is not None else r["score"]
            err[0].append(max(0.0, r["score"] - lo) * 100)
            err[1].append(max(0.0, hi - r["score"]) * 100)
        ax.bar(xs, ys, width, yerr=err, capsize=3, label=name)
    refs = {r["task"]: r["ref_score"] for r in rows if r["ref_score"] is not None}
    if refs:
        ax.scatter([tasks.index(t) for t in refs], [v * 100 for v in refs.values()], marker="_",
                   s=800, color="black", label="reference", zorder=3)
    ax.set_xticks(range(len(tasks)), tasks)
    ax.set_ylabel("score (%)")
    ax.set_title("Quality per task, 95% bootstrap interval")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    return _svg(fig)


def _mib(v: int | None) -> float | None:
    return v / 2**20 if v else None


def pvm_data(summaries: list[CandidateSummary]) -> list[dict]:
    return [{"candidate": s.candidate,
             "predicted_peak_mib": s.predicted_peak_bytes / 2**20 if s.predicted_peak_bytes else None,
             "measured_peak_mib": _mib(s.peak_need_bytes or s.peak_rss_bytes),  # need, like fit
             "vmhwm_mib": _mib(s.peak_rss_bytes),
             "predicted_decode_tps": s.predicted_decode_tps, "measured_decode_tps": s.decode_tps}
            for s in summaries]


def pvm_chart(rows: list[dict]) -> str | None:
    rows = [r for r in rows if any(r[k] is not None for k in ("predicted_peak_mib",
                                                              "predicted_decode_tps"))]
    if not rows:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(7.6, 3.4))
    for ax, (p, m, label) in zip(axes, (("predicted_peak_mib", "measured_peak_mib", "need MiB"),
                                        ("predicted_decode_tps", "measured_decode_tps", "tok/s"))):
        xs = range(len(rows))
        ax.bar([x - 0.2 for x in xs], [r[p] or 0 for r in rows], 0.4, label="predicted")
        ax.bar([x + 0.2 for x in xs], [r[m] or 0 for r in rows], 0.4, label="measured")
        ax.set_xticks(list(xs), [r["candidate"] for r in rows], rotation=20, fontsize=7)
        ax.set_ylabel(label)
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle("Predicted (fit) vs measured (bench)")
    return _svg(fig)


def all_charts(summaries: list[CandidateSummary], decision: Decision,
               texts: DecisionTexts) -> dict[str, dict]:
    """name -> {"svg": str | None, "data": list[dict]}; one entry per chart of the report."""
    ttft = curve_data(summaries, "ttft_curve", "prompt_tokens", "ttft_ms")
    sus = curve_data(summaries, "sustained_curve", "t_s", "decode_tps")
    timeline = timeline_data(summaries)
    pareto, tasks, pvm = (pareto_data(summaries, decision, texts), task_data(summaries),
                          pvm_data(summaries))
    return {
        "pareto": {"svg": pareto_chart(pareto), "data": pareto},
        "ttft_vs_length": {"svg": curve_chart(ttft, "prompt_tokens", "ttft_ms", "prompt tokens",
                                              "TTFT median (ms)", "TTFT vs prompt length"),
                           "data": ttft},
        "sustained": {"svg": timeline_chart(timeline), "data": timeline} if timeline else
        {"svg": curve_chart(sus, "t_s", "decode_tps", "seconds into the run",
                            "decode tok/s (window)", "Sustained decode speed"), "data": sus},
        "task_quality": {"svg": task_chart(tasks), "data": tasks},
        "predicted_vs_measured": {"svg": pvm_chart(pvm), "data": pvm},
    }
