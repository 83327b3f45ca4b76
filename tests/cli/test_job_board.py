"""The live table of jobs by device reads at 80 columns: every device and every count is shown,
no cell is cut to "…" (a tag longer than its column folds inside its cell, and the table stays
a table: cli/output.fit_table)."""

from __future__ import annotations

import io

from rich.console import Console

from edgepick.cluster.jobs import Job
from edgepick.cli.job_board import STATES, DeviceBoard


def _job(i: int, device: str | None) -> Job:
    return Job(id=f"bench/{device}/c{i}", kind="bench", device=device, candidate=f"c{i}",
               entry="x:y", request={}, keys=())


def _render(width: int, devices: list[str | None]) -> str:
    out = io.StringIO()
    jobs = [_job(i, d) for d in devices for i in range(3)]
    board = DeviceBoard(jobs, Console(width=width, file=out, color_system=None))
    for j, state in zip(jobs, ["running", "done", "failed", "stored", "queued", "done"] * 9):
        board.event(j.id, state)
    board.console.print(board.table())
    return out.getvalue()


def test_the_device_table_reads_at_80_columns_with_long_tags():
    devices = ["jetson-orin-nano-8gb-lab-bench-2", "raspberry-pi-5-8gb-with-active-cooler", None]
    text = _render(80, devices)
    assert "…" not in text and max(map(len, text.splitlines())) <= 80
    # the device column read top to bottom: a folded tag continues on the cell's next line
    column = "".join(line.split("│")[1].strip() for line in text.splitlines()
                     if line.startswith("│"))
    for d in ("jetson-orin-nano-8gb-lab-bench-2", "raspberry-pi-5-8gb-with-active-cooler",
              "(any node)"):
        assert d in column
    for s in STATES:
        assert s in text


def test_short_tags_keep_one_row_per_device():
    text = _render(80, ["pi5", "laptop"])
    header = next(line for line in text.splitlines() if "queued" in line)
    assert "device" in header and all(s in header for s in STATES)  # one header line
    assert sum("pi5" in line for line in text.splitlines()) == 1
