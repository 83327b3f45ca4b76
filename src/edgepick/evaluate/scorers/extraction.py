"""JSON field extraction: format compliance and field-level precision / recall / F1.

Finding the JSON in an answer, in this order: the whole answer; the body of the first ```
fence (```json or bare); the first `{...}` in the surrounding prose that parses as an object.
`json_ok` is "an object was found", `strict_json` is "the whole answer was that object", and
`schema_ok` is "the object validates against the item's schema". format_ok = json_ok and
schema_ok (schema_ok is true when the item has no schema).
Pass rule: the object is valid and every field equals the reference's, with no extra field.
Unacceptable when required: no object and no "{" at all is "no_answer"; a "{" that never parses
as an object, or an object breaking the schema, is "invalid_json". Strict format: strict_json.
"""

from __future__ import annotations

import json
import numbers
from typing import Any

import jsonschema

from edgepick.evaluate.scorers import ItemScore, mean_of
from edgepick.evaluate.text import nfkc, strip_fences

_DECODER = json.JSONDecoder()


def _as_object(body: str, start: int | None = None) -> dict | None:
    """The JSON object that `body` is (no `start`), or that begins at index `start` of it."""
    try:
        obj = json.loads(body) if start is None else _DECODER.raw_decode(body, start)[0]
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def find_json_object(text: str) -> tuple[dict | None, bool]:
    """(the object, whether the whole answer was exactly that object)."""
    obj = _as_object(text.strip())
    if obj is not None:
        return obj, True
    for body in (strip_fences(text), text):
        body = body.strip()
        obj = _as_object(body)
        start = body.find("{")
        while obj is None and start >= 0:
            obj = _as_object(body, start)
            start = body.find("{", start + 1)
        if obj is not None:
            return obj, False
    return None, False


def flatten(obj: Any, prefix: str = "") -> dict[str, Any]:
    """Nested objects become dotted paths; null values count as absent fields."""
    out: dict[str, Any] = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            path = f"{prefix}.{k}" if prefix else str(k)
            if isinstance(v, dict):
                out.update(flatten(v, path))
            elif v is not None:
                out[path] = v
    return out


def canon(value: Any) -> Any:
    """Values compare after NFKC, case folding and trimming; "42" equals 42; lists as multisets."""
    if isinstance(value, bool):
        return value
    if isinstance(value, numbers.Number):
        return float(value)
    if isinstance(value, str):
        s = " ".join(nfkc(value).casefold().split())
        try:
            return float(s.replace(",", "")) if s else s
        except ValueError:
            return s
    if isinstance(value, list):
        return tuple(sorted((repr(canon(v)) for v in value)))
    if isinstance(value, dict):
        return tuple(sorted((k, repr(canon(v))) for k, v in value.items()))
    return value


def field_prf(pred: dict, gold: dict) -> tuple[int, int, int]:
    """(matching fields, predicted fields, gold fields)."""
    p, g = flatten(pred), flatten(gold)
    tp = sum(1 for k, v in g.items() if k in p and canon(p[k]) == canon(v))
    return tp, len(p), len(g)


class ExtractionScorer:
    name = "extraction"
    pass_rule = "a valid JSON object whose fields all equal the reference's, nothing extra"

    def score(self, item, output: str) -> ItemScore:
        obj, strict = find_json_object(output)
        schema_ok = True
        if obj is not None and item.schema_ is not None:
            schema_ok = jsonschema.validators.validator_for(item.schema_)(item.schema_).is_valid(obj)
        tp, n_pred, n_gold = field_prf(obj or {}, item.reference)
        prec = tp / n_pred if n_pred else (1.0 if n_gold == 0 else 0.0)
        rec = tp / n_gold if n_gold else 1.0
        f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
        if obj is None:
            f1 = 0.0
        fmt_ok = obj is not None and schema_ok
        correct = fmt_ok and tp == n_gold == n_pred
        if obj is None:
            why = "no JSON object in the answer"
        elif not schema_ok:
            why = "JSON does not satisfy the schema"
        elif not correct:
            wrong = sorted(k for k, v in flatten(item.reference).items()
                           if canon(flatten(obj).get(k)) != canon(v))
            extra = sorted(set(flatten(obj)) - set(flatten(item.reference)))
            why = "; ".join(x for x in (f"wrong or missing: {', '.join(wrong)}" if wrong else "",
                                        f"unexpected: {', '.join(extra)}" if extra else "") if x)
        else:
            why = ""
        fmt_err = None if fmt_ok else ("invalid_schema" if obj is not None else
                                       "no_answer" if "{" not in output else "invalid_json")
        return ItemScore(score=f1, correct=correct, format_ok=fmt_ok, why=why,
                         strict_format=strict and fmt_ok, format_error=fmt_err, details={
            "json_ok": obj is not None, "strict_json": strict, "schema_ok": obj is not None and schema_ok,
            "tp": tp, "n_pred": n_pred, "n_gold": n_gold, "field_f1": f1})

    def aggregate(self, items: list, scores: list[ItemScore]) -> dict[str, float]:
        tp = sum(s.details["tp"] for s in scores)
        n_pred = sum(s.details["n_pred"] for s in scores)
        n_gold = sum(s.details["n_gold"] for s in scores)
        p = tp / n_pred if n_pred else 0.0
        r = tp / n_gold if n_gold else 0.0
        return {"field_precision": p, "field_recall": r,
                "field_f1_micro": 2 * p * r / (p + r) if p + r else 0.0,
                "field_f1": mean_of(scores, "field_f1"),
                "json_ok_rate": mean_of(scores, "json_ok"),
                "strict_json_rate": mean_of(scores, "strict_json"),
                "schema_ok_rate": mean_of(scores, "schema_ok"),
                "all_fields_correct": sum(s.correct for s in scores) / max(1, len(scores))}
