"""Progress when stderr is not a terminal: a line when a step starts and one every 10 s while it
runs (here every 0.05 s), so a long step never looks hung."""

from __future__ import annotations

import time

from edgepick.cli.progress_lines import progress_lines
from edgepick.progress import ProgressEvent


def test_a_long_step_says_itself_at_once_and_then_regularly():
    lines: list[str] = []
    with progress_lines(lines.append, every_s=0.05) as tick:
        tick(ProgressEvent(0, 3, "threads=1"))
        tick(ProgressEvent(0, 3, "threads=1"))  # the same step: not repeated at once
        assert lines == ["threads=1 (0/3), 0 s"]
        time.sleep(0.3)
        tick(ProgressEvent(1, 3, "threads=2"))
    assert sum(line.startswith("threads=1") for line in lines) >= 3  # the heartbeat
    assert any(line.startswith("threads=2 (1/3)") for line in lines)
