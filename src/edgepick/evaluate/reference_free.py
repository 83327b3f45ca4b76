"""Items without a reference (sampled traffic served without a cloud: `reference: null`).
They count toward the figures that need no reference: the unacceptable rate (all
its reasons but critical_wrong), format compliance and output length. Scores, the gap to the
reference and badcases per 1000 need the reference's answer, so they leave these items out
and the result says so."""

from __future__ import annotations

SKIPPED = ("score", "gap to the reference", "badcases per 1000")
USED = ("unacceptable rate", "format compliance", "output length")

# Stand-in references under which each scorer still judges the form of an output; the scores
# it gives are discarded (the outcome is marked reference_free).
_STAND_IN = {"math": 0, "extraction": {}, "tool_call": "none", "yes_no": "yes"}


def stand_in(item):
    """A copy of a reference-free item the task's scorer can read, for its format verdict."""
    ref = item.labels[0] if item.task == "classification" and item.labels else \
        _STAND_IN.get(item.task, "-")
    return item.model_copy(update={"reference": ref})


def note(n: int, total: int) -> str | None:
    """The one line eval prints and stores; None when every item has a reference."""
    if not n:
        return None
    return (f"{n}/{total} item(s) without a reference: counted for {', '.join(USED)}; "
            f"left out of {', '.join(SKIPPED)}")
