"""The clock a run's time budget is counted on: `run --budget`, eval's deadline and its looks
all read `now()`. One module at the base, so no stage owns the run's clock; a test replaces
`clock` to drive time by hand."""

from __future__ import annotations

import time

clock = time.monotonic


def now() -> float:
    return clock()
