"""The registry of engines: entry points of the group `edgepick.backends`, loaded lazily.

Any installed package adds an engine with one line in its pyproject.toml,

    [project.entry-points."edgepick.backends"]
    my_engine = "my_package.module:MyBackend"

and edgepick's own engines register the same way. Nothing is imported until an engine is asked
for by name, so `import edgepick` and `edgepick --help` never import an engine (the lazy
`"module:Class"` registry of lm-evaluation-harness; simonw/llm's start-up lesson, STYLE.md).
"""

from __future__ import annotations

import difflib
import importlib
import threading
from importlib.metadata import entry_points

from edgepick.errors import EdgepickError

GROUP = "edgepick.backends"
# The same entries as pyproject.toml, used only when edgepick's own distribution metadata is
# absent (the source tree on PYTHONPATH without `pip install -e .`), so the built-ins still work.
_BUILTIN = {
    "llama_cpp": "edgepick.backends.llama_cpp:LlamaCppBackend",
    "openai_http": "edgepick.backends.openai_http:OpenAIHttpBackend",
    "onnxruntime_genai": "edgepick.backends.onnxruntime_genai:OnnxGenaiBackend",
}

_lock = threading.Lock()
_targets: dict[str, str] | None = None  # name -> "module:Class", from the entry points
_classes: dict[str, type] = {}  # name -> class, once imported (or registered at run time)


def _discover() -> dict[str, str]:
    global _targets
    with _lock:
        if _targets is None:
            found = {ep.name: ep.value for ep in entry_points(group=GROUP)}
            _targets = {**{k: v for k, v in _BUILTIN.items() if k not in found}, **found}
        return _targets


def backend_names() -> list[str]:
    return sorted(set(_discover()) | set(_classes))


def register_backend(name: str, target: str | type) -> None:
    """Add an engine at run time (tests, notebooks): a class, or a lazy `"module:Class"`."""
    targets = _discover()
    with _lock:
        if isinstance(target, str):
            targets[name] = target
            _classes.pop(name, None)
        else:
            _classes[name] = _checked(name, target, target.__qualname__)


def backend_class(name: str) -> type:
    """The engine class registered as `name`, imported on first use."""
    if name in _classes:
        return _classes[name]
    targets = _discover()
    if name not in targets:
        close = difflib.get_close_matches(name, backend_names(), n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise EdgepickError(f"unknown backend '{name}'{hint} (known: {', '.join(backend_names())})")
    target = targets[name]
    module_name, _, attr = target.partition(":")
    try:
        obj = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise EdgepickError(f"backend '{name}' ({target}) could not be imported: {exc}") from None
    with _lock:
        _classes[name] = _checked(name, obj, target)
    return _classes[name]


def get_backend(name: str, **kwargs: object):
    """A fresh, unloaded instance of the engine registered as `name`."""
    return backend_class(name)(**kwargs)


def supports(name: str, capability: str) -> bool:
    """Whether the engine registered as `name` declares `capability` (base.CAPABILITIES)."""
    return backend_class(name).supports(capability)


def _checked(name: str, cls: object, where: str) -> type:
    from edgepick.backends.base import Backend

    if not (isinstance(cls, type) and issubclass(cls, Backend)):
        raise EdgepickError(f"backend '{name}' ({where}) is not a subclass of "
                            "edgepick.backends.base.Backend")
    if cls.name != name:
        cls.name = name  # the registered name is the one stored beside measurements
    return cls


def maturity(name: str, default: float = 0.5) -> float:
    """The maturity the engine registered as `name` declares (the decision's engineering layer);
    `default` for a name no installed engine has."""
    try:
        return float(backend_class(name).maturity)
    except EdgepickError:
        return default


def engine_for(path: str, default: str = "llama_cpp") -> str:
    """The engine whose format `path` is: the registered engine that claims it (highest
    `claim_priority` first, then by name), or `default` when none does."""
    claimants = []
    for name in backend_names():
        try:
            cls = backend_class(name)
        except EdgepickError:
            continue  # an engine that cannot import cannot claim either
        if cls.claims(path):
            claimants.append((-cls.claim_priority, name))
    return min(claimants)[1] if claimants else default


def unsupported(name: str, spec) -> str | None:
    """One line when the engine registered as `name` does not run the model `spec` (a
    ModelSpec) describes; None when it does, or when either cannot be told."""
    cls = backend_class(name)
    architecture = cls.architecture_of(spec)
    known = cls.architectures()
    if not architecture:
        return None
    if known is None or architecture in known:
        return None
    return (f"{architecture}: not supported by {cls.engine_label()}'s engine "
            f"(supported: {', '.join(sorted(known))})")


def check_support(name: str, spec, where: str = "") -> None:
    """Refuse an unsupported model × engine pair in one line, before anything loads."""
    why = unsupported(name, spec)
    if why:
        raise EdgepickError(f"{where}: {why}" if where else why)
