"""Built-in tools for the demo agent: files inside one sandbox folder, a calendar, unit conversion
and a note search (seed 004 §4: file reading, calendar and search are the on-device agent's
first tools). No built-in ever hands a model argument to a shell; file paths are resolved and
must stay inside the sandbox (no `..`, no absolute paths, no symlink out).

Each built-in is `fn(sandbox: Path, **arguments) -> str` with its JSON-schema parameters and
whether it is destructive (it changes or removes data: run only after confirmation).
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import re
import sqlite3
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from edgepick.errors import EdgepickError
from edgepick.evaluate.text import normalize, tokens

MAX_READ_CHARS = 4000
CALENDAR_FILE = ".calendar.sqlite"


class ToolFailure(EdgepickError):
    """The tool ran and refused its input: the message goes back to the model."""


def inside(sandbox: Path, path: str) -> Path:
    """`path` resolved inside the sandbox, or a ToolFailure naming why not."""
    if not isinstance(path, str) or not path.strip():
        raise ToolFailure("path must be a non-empty string")
    root = sandbox.resolve()
    target = (root / path.strip()).resolve()
    if target != root and root not in target.parents:
        raise ToolFailure(f"'{path}' is outside the sandbox")
    return target


def read_file(sandbox: Path, path: str) -> str:
    f = inside(sandbox, path)
    if not f.is_file():
        raise ToolFailure(f"no such file: {path}")
    text = f.read_text(encoding="utf-8", errors="replace")
    return text if len(text) <= MAX_READ_CHARS else text[:MAX_READ_CHARS] + "\n[… cut]"


def list_files(sandbox: Path, directory: str = ".") -> str:
    d = inside(sandbox, directory)
    if not d.is_dir():
        raise ToolFailure(f"no such folder: {directory}")
    names = sorted(p.name + ("/" if p.is_dir() else "") for p in d.iterdir()
                   if not p.name.startswith("."))
    return "\n".join(names) or "(empty)"


def write_file(sandbox: Path, path: str, content: str) -> str:
    f = inside(sandbox, path)
    existed = f.exists()
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(content, encoding="utf-8")
    return f"{'overwrote' if existed else 'wrote'} {path} ({len(content)} characters)"


def delete_file(sandbox: Path, path: str) -> str:
    f = inside(sandbox, path)
    if not f.is_file():
        raise ToolFailure(f"no such file: {path}")
    f.unlink()
    return f"deleted {path}"


@contextmanager
def _calendar(sandbox: Path) -> Iterator[sqlite3.Connection]:
    db = sqlite3.connect(sandbox / CALENDAR_FILE)
    try:
        with db:  # one transaction
            db.execute("CREATE TABLE IF NOT EXISTS events (id INTEGER PRIMARY KEY, title TEXT, "
                       "date TEXT, time TEXT, duration_minutes INTEGER)")
            yield db
    finally:
        db.close()


def _date(value: str) -> str:
    try:
        return dt.date.fromisoformat(value).isoformat()
    except (TypeError, ValueError):
        raise ToolFailure(f"date '{value}' is not YYYY-MM-DD") from None


def add_event(sandbox: Path, title: str, date: str, time: str | None = None,
              duration_minutes: int = 60) -> str:
    day = _date(date)
    if time is not None:
        m = re.fullmatch(r"\s*(\d{1,2}):(\d{2})\s*", str(time))
        if not m or int(m[1]) > 23 or int(m[2]) > 59:
            raise ToolFailure(f"time '{time}' is not HH:MM")
        time = f"{int(m[1]):02d}:{m[2]}"
    with _calendar(sandbox) as db:
        db.execute("INSERT INTO events (title, date, time, duration_minutes) VALUES (?,?,?,?)",
                   (title, day, time, duration_minutes))
    return f"added '{title}' on {day}" + (f" at {time}" if time else "")


def list_events(sandbox: Path, date: str) -> str:
    day = _date(date)
    with _calendar(sandbox) as db:
        rows = db.execute("SELECT time, title, duration_minutes FROM events WHERE date = ? "
                          "ORDER BY time", (day,)).fetchall()
    return "\n".join(f"{t or 'all day'} {title} ({d} min)" for t, title, d in rows) \
        or f"no events on {day}"


def convert_units(sandbox: Path, value: float, from_unit: str, to_unit: str) -> str:
    pint, ureg = _pint()
    try:
        q = ureg.Quantity(value, from_unit).to(to_unit)
    except (pint.errors.PintError, AttributeError, TypeError, ValueError) as exc:
        raise ToolFailure(f"cannot convert {from_unit} to {to_unit}: {exc}") from None
    return f"{value:g} {from_unit} = {q.magnitude:.6g} {to_unit}"


@functools.cache
def _pint():
    """pint and its unit registry, loaded by the first conversion: pint takes about 0.3 s to
    import, which every other tool and every agent run without this one would pay."""
    import pint

    # Offset units (°C, °F) converted as plain values, not as differences.
    return pint, pint.UnitRegistry(autoconvert_offset_to_baseunit=True)


def search_notes(sandbox: Path, query: str, limit: int = 3) -> str:
    """Paragraphs of the sandbox's .txt/.md files ranked by how many query words they hold."""
    words = set(tokens(normalize(query)))
    if not words:
        raise ToolFailure("query has no words")
    hits = []
    for f in sorted(sandbox.resolve().rglob("*")):
        if f.suffix not in (".txt", ".md") or not f.is_file():
            continue
        for para in f.read_text(encoding="utf-8", errors="replace").split("\n\n"):
            found = words & set(tokens(normalize(para)))
            if found:
                hits.append((len(found) / len(words), str(f.relative_to(sandbox.resolve())),
                             para.strip()))
    hits.sort(key=lambda h: -h[0])
    return json.dumps([{"file": f, "score": round(s, 3), "text": t[:500]}
                       for s, f, t in hits[:max(1, int(limit))]], ensure_ascii=False) \
        if hits else "no matches"


@dataclass(frozen=True)
class Builtin:
    fn: Callable[..., str]
    description: str
    parameters: dict
    destructive: bool = False


def _obj(props: dict, required: list[str]) -> dict:
    return {"type": "object", "properties": props, "required": required,
            "additionalProperties": False}


_PATH = {"type": "string", "description": "file path relative to the sandbox folder"}
_DATE = {"type": "string", "description": "date as YYYY-MM-DD"}
# A closed list: a small model picks from it far more reliably than it spells pint's names.
UNITS = ["km", "m", "cm", "mile", "ft", "inch", "kg", "g", "lb", "oz", "degC", "degF", "l", "ml",
         "gal", "km/h", "mph"]
_UNIT = {"type": "string", "enum": UNITS}
BUILTINS: dict[str, Builtin] = {
    "read_file": Builtin(read_file, "Read a text file.", _obj({"path": _PATH}, ["path"])),
    "list_files": Builtin(list_files, "List the files in a folder.", _obj(
        {"directory": {"type": "string", "description": "folder, default the sandbox root"}},
        [])),
    "write_file": Builtin(write_file, "Write (or overwrite) a text file.", _obj(
        {"path": _PATH, "content": {"type": "string"}}, ["path", "content"]), destructive=True),
    "delete_file": Builtin(delete_file, "Delete a file permanently.",
                           _obj({"path": _PATH}, ["path"]), destructive=True),
    "add_event": Builtin(add_event, "Add an event to the calendar.", _obj(
        {"title": {"type": "string"}, "date": _DATE,
         "time": {"type": "string", "description": "start time as HH:MM (24 h)"},
         "duration_minutes": {"type": "integer", "minimum": 1}}, ["title", "date"])),
    "list_events": Builtin(list_events, "List the calendar's events on one day.",
                           _obj({"date": _DATE}, ["date"])),
    "convert_units": Builtin(convert_units, "Convert a quantity from one unit to another.", _obj(
        {"value": {"type": "number"}, "from_unit": _UNIT, "to_unit": _UNIT},
        ["value", "from_unit", "to_unit"])),
    "search_notes": Builtin(search_notes, "Search the user's notes for a phrase.", _obj(
        {"query": {"type": "string"}, "limit": {"type": "integer", "minimum": 1,
                                                "maximum": 10}}, ["query"])),
}
