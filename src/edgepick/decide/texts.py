"""Sentences of the decision in English and Chinese, rendered from structured facts so that the
report can state the same explanation in either language; the strings are in data/strings.yaml."""

from __future__ import annotations

from edgepick.decide.gates import constraint_of, gate_text, ruled_out_before_eval
from edgepick.evaluate.seq_gates import eval_metrics
from edgepick.gate_spec import gate_table
from edgepick.records.decision import Violation
from edgepick.records.deploy import Gate
from edgepick.strings import catalog, entry, in_lang, say
from edgepick.units import whole_pct


def t(key: str, lang: str = "en", **kw: object) -> str:
    """A sentence of the decision (`sentences` in data/strings.yaml) with its fields filled in."""
    return in_lang(catalog()["sentences"][key], lang).format(**kw)


def label(key: str, lang: str = "en") -> str:
    """A gate's own label (the gate table), else the catalog's `labels`."""
    g = gate_table().get(key)
    return g.text(lang) if g else say("labels", key, lang)


def gate_label(g, lang: str = "en") -> str:
    """A gate's name with the prompt length its figure was read at ("TTFT P99 at 3000 tokens")."""
    name = label(constraint_of(g.metric), lang)
    return name + (t("at_len", lang, n=g.at_tokens) if g.at_tokens else "")


def advice(task: str, lang: str = "en") -> str:
    return in_lang(entry("advice", task) or catalog()["default_advice"], lang)


def constraint_advice(constraint: str, lang: str = "en") -> str:
    g = gate_table().get(constraint)
    e = (g.advice if g else None) or entry("constraint_advice", constraint)
    return in_lang(e or catalog()["default_advice"], lang)


def violation_text(v: Violation, lang: str = "en") -> str:
    if v.constraint == "runs":
        return t("failed", lang, d=v.detail)
    if v.constraint == "skipped":
        return t("skipped", lang, d=v.detail)
    if v.constraint == "measured":
        return t("nothing", lang)
    if v.constraint == "fit":
        d = f": {v.value_text} > {v.limit_text}" if v.value_text and v.limit_text else ""
        return t("nofit", lang, d=d)
    return f"{label(v.constraint, lang)} {v.value_text} {v.op} {t('limit', lang)} {v.limit_text}"


def unchecked_text(constraint: str, lang: str = "en") -> str:
    if constraint == "peak_memory_budget":
        return t("nobudget", lang)
    return t("unchecked", lang, m=label(constraint, lang), c=constraint)


def gate_phrase(g, lang: str) -> str:
    """An undetermined or unmeasured gate in a sentence, with the items that would settle it."""
    m = gate_label(g, lang)
    if g.verdict == "unmeasured":
        return t("unmeasured", lang, m=m)
    n = t("settle", lang, k=g.items_to_settle) if g.items_to_settle else t("nosettle", lang)
    if g.contended_share is not None:  # a speed gate failed on a busy host
        n = t("contended", lang, share=whole_pct(g.contended_share))
    limit = gate_text(Gate(metric=g.metric, value=g.limit))
    return t("undetermined", lang, m=m, v=gate_text(g), l=limit, n=n)


def evaluation_text(ranked, lang: str = "en") -> list[str]:
    """Why the candidate's quality was or was not evaluated, where a bench gate decided it: not,
    when it fails a gate no routing avoids (gates.ruled_out_before_eval, the rule sequential
    evaluation skips on); yes, when its speed gates failed only on contended measurements."""
    in_looks = eval_metrics()
    measured = any(g.verdict != "unmeasured" for g in ranked.gates if g.metric in in_looks) \
        or any(ranked.task_gates.values())
    blocker = ruled_out_before_eval(ranked.gates)
    if blocker is not None:
        return [] if measured else [t("not_evaluated", lang, m=gate_label(blocker, lang))]
    busy = [gate_label(g, lang) for g in ranked.gates if g.contended_share is not None]
    return [t("evaluated_busy", lang, m=", ".join(busy))] if busy and measured else []


def reasons_text(ranked, lang: str = "en") -> list[str]:
    """A ranked candidate's reasons: violations, or notes on what is undetermined or was not
    measured; then why its quality was or was not evaluated."""
    if ranked.violations:
        return [violation_text(v, lang) for v in ranked.violations] + \
            evaluation_text(ranked, lang)
    return [gate_phrase(g, lang) for g in ranked.gates if g.verdict == "undetermined"] + \
        [t("scored0", lang, m=label(m, lang)) for m in ranked.missing] + \
        [unchecked_text(c, lang) for c in ranked.unchecked] + evaluation_text(ranked, lang)
