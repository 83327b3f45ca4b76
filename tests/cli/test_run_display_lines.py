"""`edgepick run` with its output in a file: a line per step, not a bar drawn only at the end."""

import io

from rich.console import Console

from edgepick.cli.run_display import RichRunDisplay
from edgepick.progress import ProgressEvent


def test_a_run_writes_lines_where_no_bar_can_be_drawn():
    buf = io.StringIO()
    display = RichRunDisplay(Console(file=buf, force_terminal=False, width=100))
    with display.bars(3) as bars:
        bars.overall("fit", advance=1)
        tick = bars.stage("quantize")
        tick(ProgressEvent(0, 2, "Q4_0"))
        tick(ProgressEvent(1, 2, "Q4_0"))  # the same step: said once, repeated by the heartbeat
        tick(ProgressEvent(1, 2, "Q8_0"))
    lines = buf.getvalue().splitlines()
    assert lines[0] == "fit"
    assert [line.split(",")[0] for line in lines[1:]] == ["quantize: Q4_0 (0/2)",
                                                         "quantize: Q8_0 (1/2)"], lines
    assert "━" not in buf.getvalue()
