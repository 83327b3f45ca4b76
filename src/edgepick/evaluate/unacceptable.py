"""The unacceptable-output rule of seed 004 §2.3 (胡言乱语: output a product cannot use at all),
item by item. A correct answer wrapped in a sentence is acceptable; verbosity is not a reason.

Reasons (an output may have several; examples for each in docs/evaluate.md):
- engine_error: the engine failed on this item (e.g. the prompt did not fit the context);
- empty: nothing but whitespace ("");
- no_answer: the task needs a form and none is there: no label from the set ("I cannot tell"),
  no number ("many"), no JSON object ("Name: Zhang Wei");
- invalid_json: a JSON answer that does not parse as an object, or breaks the item's schema
  ('{"name": "张伟", "age": 30,,}'; '{"age": "thirty"}' when age must be an integer);
- truncated: generation hit its budget before a parseable answer ('{"name": "张伟", "ci' cut
  at max_tokens); replaces no_answer / invalid_json (not a complete object breaking the
  schema: a larger budget would not fix that);
- repetition_loop: see `repetition_loop` ("yes yes yes yes yes yes yes yes yes yes yes yes");
- wrong_language: the item's language (`meta.lang`, or a tag `zh` / `en`) is written in one
  script and the answer has letters only of another ("positive" to a Chinese item whose
  labels are 正面/负面/中性);
- critical_wrong: the item is marked `critical` and the answer fails its pass rule (not judged
  on an item without a reference).
"""

from __future__ import annotations

import re

from edgepick.evaluate.scorers.extraction import find_json_object
from edgepick.evaluate.text import TOKEN_PATTERN, nfkc

LOOP_MIN_REPEATS = 3  # a block seen this many times back to back …
LOOP_MIN_UNITS = 12  # … covering at least this many units in all
LOOP_MAX_BLOCK = 40  # longest block (in units) looked for
MIN_FOREIGN_LETTERS = 3  # fewer letters than this say nothing about the language

# A scorer's format_error -> the unacceptable reason it counts as.
FORMAT_REASON = {"no_answer": "no_answer", "invalid_json": "invalid_json",
                 "invalid_schema": "invalid_json"}
# Language code -> the script its answers are written in.
SCRIPTS = {"zh": "han", "zh-cn": "han", "zh-tw": "han", "ja": "han", "en": "latin", "fr": "latin",
           "de": "latin", "es": "latin", "it": "latin", "pt": "latin", "nl": "latin"}
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff]")
_LATIN = re.compile(r"[A-Za-z\u00c0-\u024f]")


_UNIT = re.compile(rf"{TOKEN_PATTERN}|[^\s\w]", re.UNICODE)


def _units(text: str) -> list[str]:
    # Words, CJK characters and each punctuation mark: "；；；；；；；；；；；；" after a few
    # words is a loop as much as "yes yes yes …" is.
    return _UNIT.findall(nfkc(text).casefold())


def repetition_loop(text: str) -> bool:
    """True when some block of 1..LOOP_MAX_BLOCK units occurs LOOP_MIN_REPEATS or more times in a
    row and the repeats cover at least LOOP_MIN_UNITS units (e.g. one word ×12, a 4-word phrase
    ×3). Units are words for Latin text, characters for Chinese, and punctuation marks."""
    u = _units(text)
    n = len(u)
    for size in range(1, min(LOOP_MAX_BLOCK, n // LOOP_MIN_REPEATS) + 1):
        need = max(LOOP_MIN_REPEATS, -(-LOOP_MIN_UNITS // size))
        for start in range(0, n - need * size + 1):
            block = u[start:start + size]
            count, pos = 1, start + size
            while count < need and u[pos:pos + size] == block:
                count += 1
                pos += size
            if count >= need:
                return True
    return False


def expected_script(item) -> str | None:
    """The script the item's answer should be in, or None when the item does not say."""
    lang = (item.meta or {}).get("lang") if isinstance(getattr(item, "meta", None), dict) else None
    codes = [str(lang).lower()] if lang else [t.lower() for t in item.tags if t.lower() in SCRIPTS]
    scripts = {SCRIPTS[c] for c in codes if c in SCRIPTS}
    if len(scripts) != 1:
        return None
    script = scripts.pop()
    # A reference written in another script (a brand name, a code) makes the check meaningless.
    ref = _text_of(item.reference)
    if _letters(ref) and not _letters(ref).get(script):
        return None
    return script


def _text_of(value) -> str:
    """The words an answer shows a reader: JSON string values, not keys."""
    if isinstance(value, dict):
        return " ".join(_text_of(v) for v in value.values())
    if isinstance(value, list):
        return " ".join(_text_of(v) for v in value)
    return value if isinstance(value, str) else ""


def _letters(text: str) -> dict[str, int]:
    t = nfkc(text)
    return {k: n for k, n in (("han", len(_HAN.findall(t))), ("latin", len(_LATIN.findall(t))))
            if n}


def answer_text(task: str, output: str) -> str:
    """For JSON tasks the values of the object; otherwise the output itself."""
    if task in ("extraction", "tool_call"):
        obj, _ = find_json_object(output)
        if obj is not None:
            return _text_of(obj)
    return output


def wrong_language(item, output: str) -> bool:
    script = expected_script(item)
    if script is None:
        return False
    seen = _letters(answer_text(item.task, output))
    foreign = sum(n for s, n in seen.items() if s != script)
    return not seen.get(script) and foreign >= MIN_FOREIGN_LETTERS


def reasons(item, output: str, finish_reason: str, score) -> list[str]:
    """The unacceptable reasons of one output; `score` is the scorer's ItemScore for it."""
    if finish_reason == "error":
        return ["engine_error"]
    out: list[str] = []
    if not output.strip():
        out.append("empty")
    elif score.format_error:
        # Cut off before a parseable answer; a complete object that breaks the schema is not
        # something a larger budget would fix.
        cut = finish_reason == "length" and score.format_error != "invalid_schema"
        out.append("truncated" if cut else FORMAT_REASON[score.format_error])
    if output.strip() and repetition_loop(output):
        out.append("repetition_loop")
    if output.strip() and wrong_language(item, output):
        out.append("wrong_language")
    if item.critical and not score.correct and item.reference is not None:  # needs the answer
        out.append("critical_wrong")
    return out

