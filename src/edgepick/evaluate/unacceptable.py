"""The unacceptable-output rule of seed 004 §2.3, item by item.

Reasons (an output may have several):
- empty: nothing but whitespace;
- invalid_format: the task expects a form (a label, a JSON object valid for its schema, a
  number) and the output does not have it;
- repetition_loop: see `repetition_loop`;
- over_length_budget: generation hit max_tokens without the model ending its answer;
- critical_wrong: the item is marked critical and the answer is wrong;
- error: the engine failed on this item (e.g. the prompt did not fit the context).
"""

from __future__ import annotations

from edgepick.evaluate.text import tokens

FORMAT_TASKS = {"classification", "yes_no", "extraction", "math"}
LOOP_MIN_REPEATS = 3  # a block seen this many times back to back …
LOOP_MIN_UNITS = 12  # … covering at least this many units in all
LOOP_MAX_BLOCK = 40  # longest block (in units) looked for


def _units(text: str) -> list[str]:
    # Punctuation counts too, so "!!!!!!!!!!!!" is a loop; words / CJK characters otherwise.
    toks = tokens(text)
    if toks:
        return toks
    return [c for c in text if not c.isspace()]


def repetition_loop(text: str) -> bool:
    """True when some block of 1..LOOP_MAX_BLOCK units occurs LOOP_MIN_REPEATS or more times in a
    row and the repeats cover at least LOOP_MIN_UNITS units (e.g. one word ×12, a 4-word phrase
    ×3). Units are words for Latin text and characters for Chinese, punctuation ignored."""
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


def reasons(task: str, output: str, finish_reason: str, format_ok: bool, correct: bool,
            critical: bool) -> list[str]:
    out: list[str] = []
    if finish_reason == "error":
        return ["error"]
    if not output.strip():
        out.append("empty")
    elif task in FORMAT_TASKS and not format_ok:
        out.append("invalid_format")
    if output.strip() and repetition_loop(output):
        out.append("repetition_loop")
    if finish_reason == "length":
        out.append("over_length_budget")
    if critical and not correct:
        out.append("critical_wrong")
    return out
