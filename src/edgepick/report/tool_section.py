"""The tool-calling table of a report (seed 004 §4, §6.4): per candidate (and so per quant
type), tool-choice and argument accuracy, schema validity, no-call precision, and how often the
agent's guard would repair or refuse its calls, each rate with its 95% Wilson interval."""

from __future__ import annotations

from edgepick.evaluate.intervals import wilson
from edgepick.records.decision import CandidateSummary
from edgepick.strings import texts
from edgepick.units import pct, whole_pct

COLUMNS = ("tool_choice_accuracy", "argument_accuracy", "schema_valid_rate", "no_call_precision",
           "guard_repaired_rate", "guard_refused_rate")


def _cell(metrics: dict, name: str) -> str:
    rate, n = metrics.get(name), metrics.get(f"{name}_n")
    if rate is None or not n:
        return "-"
    lo, hi = wilson(round(rate * n), int(n))
    return f"{pct(rate)} [{whole_pct(lo)}, {whole_pct(hi)}]"


def tool_table(summaries: list[CandidateSummary],
               lang: str) -> tuple[str, list[str], list[list[str]], str] | None:
    """(title, header, rows, note), or None when no candidate was evaluated on tool calls."""
    t = texts("tool_report", lang)
    rows = []
    for s in summaries:
        tq = s.tasks.get("tool_call")
        if tq is None or not tq.metrics:
            continue
        rows.append([s.candidate, s.quant or "-", str(tq.n or "-")]
                    + [_cell(tq.metrics, c) for c in COLUMNS])
    if not rows:
        return None
    header = [t["candidate"], t["quant"], t["n"]] + [t[c] for c in COLUMNS]
    return t["title"], header, rows, t["note"]
