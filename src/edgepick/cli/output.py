"""Shared output helpers: JSON to stdout, tables and progress to the terminal."""

from __future__ import annotations

import io
import json
import sys
from typing import Any

from pydantic import BaseModel
from rich.console import Console, Group
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from edgepick.units import human_bytes  # noqa: F401  (the commands take it from here)


def fit_table(table: Table, width: int) -> Table | Group:
    """`table` as it reads best in `width` columns, never with a cell cut to "…": as it is when
    it fits; as a table with its cells wrapped at spaces when its columns fit at their longest
    words (a path or hash folds in its cell); else one small key/value table per row (the
    vertical layout). A key/value table (two columns, or no header) stays as it is, its values
    wrapped at spaces."""
    for col in table.columns:
        col.overflow = "fold"
    probe = _probe_console(10_000)  # a table's measure is clamped to the width it is given
    if Measurement.get(probe, probe.options, table).maximum <= width:
        return table
    if len(table.columns) <= 2 or not table.show_header:
        for col in table.columns:
            col.no_wrap = False
        return table
    if _wrapped_width(table) <= width and _renders_whole(table, width):
        return table  # a table with its cells wrapped at spaces (a long path folds in its cell)
    headers = [str(c.header) for c in table.columns]
    parts: list[Any] = [Text(str(table.title), style="italic")] if table.title else []
    for cells in zip(*(list(c.cells) for c in table.columns)):
        # the row's name on a line of its own: as a table title it would wrap at the block's
        # width, cutting a long file name mid-word
        name = Text.from_markup(cells[0], style="bold") if isinstance(cells[0], str) else cells[0]
        block = Table(show_header=False, box=None)
        block.add_column(style="dim", overflow="fold")
        block.add_column(overflow="fold")
        for head, cell in zip(headers[1:], cells[1:]):
            block.add_row(head, cell)
        parts += [name, block, Text("")]
    return Group(*parts[:-1])


FOLD_WORD = 20  # a word longer than this (a path, a hash) folds inside its cell


def _plain(cell: Any) -> str | None:
    if isinstance(cell, Text):
        return cell.plain
    if isinstance(cell, str):
        return Text.from_markup(cell).plain
    return None


def _wrapped_width(table: Table) -> int:
    """The narrowest the table reads at with its cells wrapped at spaces: each column as wide
    as its longest word (at most FOLD_WORD), plus padding and borders."""
    probe = _probe_console(10_000)
    total = 1
    for col in table.columns:
        longest = 1
        for cell in [col.header, *col.cells]:
            text = _plain(cell)
            if text is None:
                longest = max(longest, Measurement.get(probe, probe.options, cell).minimum)
            else:
                longest = max([longest, *(min(len(w), FOLD_WORD) for w in text.split())])
        total += min(longest, FOLD_WORD) + 3  # a space either side and the border
    return total


def _renders_whole(table: Table, width: int) -> bool:
    """Whether the table, its cells wrapped, shows every column at `width` (rich crops the
    columns that do not fit when its own minimums, min_width included, add up to more)."""
    wrap = [col.no_wrap for col in table.columns]
    for col in table.columns:
        col.no_wrap = False
    probe = _probe_console(width)
    probe.print(table, crop=False)  # a cropped line would pass for one that fits
    text = probe.file.getvalue()  # type: ignore[attr-defined]
    lastw = [w for w in str(table.columns[-1].header).split() if w]
    whole = all(len(line) <= width for line in text.splitlines()) and \
        (not lastw or lastw[-1] in text) and text.rstrip().endswith(("┘", "╯", "+", "─"))
    if not whole:
        for col, nw in zip(table.columns, wrap):
            col.no_wrap = nw
    return whole


def _probe_console(width: int) -> Console:
    return Console(width=width, file=io.StringIO(), color_system=None)


class _FittingConsole(Console):
    """A console whose tables always read at its width (see fit_table): every command's table
    goes through here, so none is cut at 80 columns."""

    def print(self, *objects: Any, **kwargs: Any) -> None:  # type: ignore[override]
        super().print(*[fit_table(o, self.width) if isinstance(o, Table) else o
                        for o in objects], **kwargs)


console = _FittingConsole()
err_console = _FittingConsole(stderr=True)


def to_jsonable(obj: Any) -> Any:
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json")
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(o) for o in obj]
    if isinstance(obj, dict):
        return {k: to_jsonable(v) for k, v in obj.items()}
    return obj


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(to_jsonable(obj), indent=2, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()

