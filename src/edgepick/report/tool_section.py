"""The tool-calling table of a report (seed 004 §4, §6.4): per candidate (and so per quant
type), tool-choice and argument accuracy, schema validity, no-call precision, and how often the
agent's guard would repair or refuse its calls, each rate with its 95% Wilson interval."""

from __future__ import annotations

from edgepick.evaluate.intervals import wilson
from edgepick.records.decision import CandidateSummary

COLUMNS = ("tool_choice_accuracy", "argument_accuracy", "schema_valid_rate", "no_call_precision",
           "guard_repaired_rate", "guard_refused_rate")
TEXT = {
    "en": {"title": "Tool calling", "candidate": "candidate", "quant": "quant", "n": "items",
           "tool_choice_accuracy": "tool choice", "argument_accuracy": "arguments",
           "schema_valid_rate": "schema-valid calls", "no_call_precision": "no-call precision",
           "guard_repaired_rate": "guard repaired", "guard_refused_rate": "guard refused",
           "note": "Arguments: reference fields matched, on items whose tool was chosen right. "
                   "Guard: of the replies that try to call, what `edgepick agent` would repair "
                   "(and log) or send back as an error. Undefined rates are shown as -."},
    "zh": {"title": "工具调用", "candidate": "候选", "quant": "量化", "n": "样本数",
           "tool_choice_accuracy": "工具选择", "argument_accuracy": "参数",
           "schema_valid_rate": "符合 schema 的调用", "no_call_precision": "不调用的精确率",
           "guard_repaired_rate": "守卫修复", "guard_refused_rate": "守卫拒绝",
           "note": "参数：在工具选对的样本上，参考答案字段的匹配比例。守卫：在尝试调用的回复中，"
                   "`edgepick agent` 会修复（并记录）或作为错误返回给模型的比例。无定义的比率显示为 -。"},
}


def _cell(metrics: dict, name: str) -> str:
    rate, n = metrics.get(name), metrics.get(f"{name}_n")
    if rate is None or not n:
        return "-"
    lo, hi = wilson(round(rate * n), int(n))
    return f"{rate:.1%} [{lo:.0%}, {hi:.0%}]"


def tool_table(summaries: list[CandidateSummary],
               lang: str) -> tuple[str, list[str], list[list[str]], str] | None:
    """(title, header, rows, note), or None when no candidate was evaluated on tool calls."""
    t = TEXT.get(lang, TEXT["en"])
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
