"""The one progress event every long step reports, and the callback type that receives it.

Stage entry points take `progress: Tick` and call it with a `ProgressEvent`; inner loops (a
quantize tool's tensors, a conversion's blocks, a fidelity pass's chunks) report the same event,
so one display adapter serves them all (one callback type instead of three).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True, slots=True)
class ProgressEvent:
    done: int  # steps finished
    total: int | None  # steps in all; None while unknown
    what: str = ""  # what is running, for the display


Tick = Callable[[ProgressEvent], None]


def silent(event: ProgressEvent) -> None:
    """For callers that show no progress."""
