"""The registry of engines: entry points of the group `edgepick.backends`, loaded lazily by
edgepick.plugins (the one registry helper of every plugin kind).

Any installed package adds an engine with one line in its pyproject.toml,

    [project.entry-points."edgepick.backends"]
    my_engine = "my_package.module:MyBackend"

and edgepick's own engines register the same way. Nothing is imported until an engine is asked
for by name, so `import edgepick` and `edgepick --help` never import an engine.
"""

from __future__ import annotations

import os

from edgepick.backends.base import Backend

from edgepick.errors import EdgepickError
from edgepick.models.spec import spec_of
from edgepick.plugins import Plugins

GROUP = "edgepick.backends"


def _checked(name: str, cls: object, where: str) -> type:
    if not (isinstance(cls, type) and issubclass(cls, Backend)):
        raise EdgepickError(f"backend '{name}' ({where}) is not a subclass of "
                            "edgepick.backends.base.Backend")
    if cls.name != name:
        cls.name = name  # the registered name is the one stored beside measurements
    return cls


ENGINES = Plugins(GROUP, "backend", check=_checked)


def backend_names() -> list[str]:
    return ENGINES.names()


def register_backend(name: str, target: str | type) -> None:
    """Add an engine at run time (tests, notebooks): a class, or a lazy `"module:Class"`."""
    ENGINES.register(name, target)


def backend_class(name: str) -> type:
    """The engine class registered as `name`, imported on first use."""
    return ENGINES.load(name)


def get_backend(name: str, **kwargs: object):
    """A fresh, unloaded instance of the engine registered as `name`."""
    return backend_class(name)(**kwargs)


def supports(name: str, capability: str) -> bool:
    """Whether the engine registered as `name` declares `capability` (base.CAPABILITIES)."""
    return backend_class(name).supports(capability)


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


def check_candidate(candidate) -> None:
    """`check_support` for a candidate whose model is a file on disk (a GGUF or config.json),
    read from its header; an endpoint, an engine folder or another engine's own format is left
    to its engine."""
    path = candidate.ref.path
    if not path or not os.path.isfile(path):
        return
    with open(path, "rb") as fh:
        if fh.read(4) != b"GGUF" and not path.endswith(".json"):
            return

    try:
        spec = spec_of(path)
    except EdgepickError:
        # a broken file (cut short, bad header) is that candidate's failure, recorded when its
        # engine tries to load it; refusing here would stop every other candidate's measurement
        return
    check_support(candidate.backend, spec, where=candidate.name)
