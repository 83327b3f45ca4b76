"""A doctor report as table rows and evidence lines in English or Chinese: the console table,
the JSON's companion, and the report's doctor section all read these."""

from __future__ import annotations

import json

from edgepick.doctor.finding import DoctorReport, Finding
from edgepick.strings import texts
from edgepick.units import whole_pct


def _value(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, (list, dict)):
        return json.dumps(v, ensure_ascii=False)[:160]
    return str(v)


def fix_text(f: Finding, lang: str) -> str:
    t = texts("doctor", lang)
    parts = [f.fix.text]
    if f.fix.deploy_edit:
        parts.append(f"{t['deploy_edit']}: " + ", ".join(f"{k}: {_value(v)}"
                                                          for k, v in f.fix.deploy_edit.items()))
    if f.fix.command:
        parts.append(f"$ {f.fix.command}")
    if f.fix.verified:
        parts.append(f"{t['verified']}: {f.fix.verified}")
    return "; ".join(parts)


def findings_table(report: DoctorReport, lang: str) -> tuple[list[str], list[list[str]]]:
    t = texts("doctor", lang)
    rows = [[str(i), t.get(f.cause, f.cause), f.detail or "", f.summary,
             whole_pct(f.confidence), fix_text(f, lang)]
            for i, f in enumerate(report.findings, 1)]
    return [t["rank"], t["cause"], t["detail"], t["finding"], t["confidence"], t["fix"]], rows


def _in_unit(v, unit: str) -> tuple[object, str]:
    """Bytes in MiB, the unit the summaries and fit use."""
    if unit == "bytes" and isinstance(v, (int, float)) and not isinstance(v, bool):
        return round(v / 2**20, 1), "MiB"
    return v, unit


def evidence_lines(f: Finding, lang: str) -> list[str]:
    t = texts("doctor", lang)
    out = []
    for e in f.evidence:
        value, unit = _in_unit(e.value, e.unit)
        line = f"{e.what}: {_value(value)}"
        if unit:
            line += f" {unit}"
        for key, zh in (("baseline", "基线"), ("limit", "限值")):
            other = getattr(e, key)
            if other is not None:
                shown = _value(_in_unit(other, e.unit)[0])
                line += f" ({key} {shown})" if lang == "en" else f"（{zh} {shown}）"
        if e.command:
            line += f" — {t['reproduce']}: {e.command}"
        out.append(line)
    return out


def checks_table(report: DoctorReport, lang: str) -> tuple[list[str], list[list[str]]]:
    t = texts("doctor", lang)
    rows = [[c.check, c.status + (" (store)" if c.reused else ""), f"{c.seconds:.1f}", c.note]
            for c in report.checks]
    return [t["check"], t["status"], t["seconds"], t["note"]], rows
