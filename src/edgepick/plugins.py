"""One registry for every kind of plugin: engines, power sources, routers, scorers, gates.

A kind is an entry point group. Any installed package adds one with a line in its pyproject.toml,

    [project.entry-points."edgepick.backends"]
    my_engine = "my_package.module:MyBackend"

and edgepick's own register the same way. Nothing is imported until a name is asked for, so
`import edgepick` and `edgepick --help` import no plugin (lm-evaluation-harness's lazy
`"module:Class"` registry; simonw/llm's lesson that start-up time goes to importing plugins
nobody asked for); a misspelt name gets a "did you mean". Tests and notebooks add one at run
time with `register`.
"""

from __future__ import annotations

import difflib
import importlib
import threading
from importlib.metadata import entry_points
from typing import Any, Callable

from edgepick.errors import EdgepickError


def did_you_mean(name: str, known: list[str]) -> str:
    """`; did you mean 'x'?` for the closest known name, or nothing."""
    close = difflib.get_close_matches(name, known, n=1)
    return f"; did you mean '{close[0]}'?" if close else ""


class Plugins:
    """The plugins of one entry point `group`, by name.

    edgepick's own plugins are entry points of its own distribution like any other package's,
    so they are listed once, in pyproject.toml. `check(name, obj, where)` validates (and may
    wrap) what a target loads; `unknown` is the one-line message for a name nobody registered,
    formatted with `name`, `hint` and `known`."""

    def __init__(self, group: str, kind: str, *,
                 check: Callable[[str, Any, str], Any] | None = None,
                 unknown: str = "unknown {kind} '{name}'{hint} (known: {known})") -> None:
        self.group, self.kind = group, kind
        self._check = check or (lambda name, obj, where: obj)
        self._unknown = unknown
        self._lock = threading.Lock()
        self._targets: dict[str, str] | None = None  # name → "module:attr"
        self._own: set[str] = set()  # the names edgepick's own distribution declares
        self._loaded: dict[str, Any] = {}  # name → the checked object, once imported

    def fresh(self) -> "Plugins":
        """The same kind with nothing discovered or registered yet (tests)."""
        return Plugins(self.group, self.kind, check=self._check, unknown=self._unknown)

    def _discover(self) -> dict[str, str]:
        with self._lock:
            if self._targets is None:
                found = entry_points(group=self.group)
                self._targets = {ep.name: ep.value for ep in found}
                self._own = {ep.name for ep in found if _is_own(ep)}
            return self._targets

    def names(self) -> list[str]:
        return sorted(set(self._discover()) | set(self._loaded))

    def is_own(self, name: str) -> bool:
        """Whether `name` is one of edgepick's own entry points (a built-in)."""
        self._discover()
        return name in self._own

    def targets(self) -> dict[str, str]:
        """name → `"module:attr"` of every plugin not yet loaded or registered as an object."""
        return dict(self._discover())

    def register(self, name: str, target: str | Any) -> None:
        """Add a plugin at run time: an object, or a lazy `"module:attr"`."""
        targets = self._discover()
        with self._lock:
            if isinstance(target, str):
                targets[name] = target
                self._loaded.pop(name, None)
            else:
                self._loaded[name] = self._check(name, target, getattr(target, "__qualname__",
                                                                       repr(target)))

    def forget(self, name: str) -> None:
        """Drop a plugin registered at run time (tests)."""
        targets = self._discover()
        with self._lock:
            self._loaded.pop(name, None)
            targets.pop(name, None)

    def __contains__(self, name: str) -> bool:
        return name in self._loaded or name in self._discover()

    def load(self, name: str) -> Any:
        """The plugin registered as `name`, imported on first use."""
        if name in self._loaded:
            return self._loaded[name]
        targets = self._discover()
        if name not in targets:
            known = self.names()
            raise EdgepickError(self._unknown.format(kind=self.kind, name=name,
                                                     hint=did_you_mean(name, known),
                                                     known=", ".join(known) or "none"))
        target = targets[name]
        obj = import_target(target, f"{self.kind} '{name}' ({target})")
        with self._lock:
            self._loaded[name] = self._check(name, obj, target)
        return self._loaded[name]


def _is_own(ep) -> bool:
    dist = getattr(ep, "dist", None)
    return dist is not None and dist.name == "edgepick"


def import_target(target: str, what: str) -> Any:
    """`"module:attr.attr"` → the object; one line naming `what` when it cannot be imported."""
    module_name, _, attr = target.partition(":")
    try:
        obj = importlib.import_module(module_name)
        for part in filter(None, attr.split(".")):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise EdgepickError(f"{what} could not be imported: {exc}") from None
    return obj
