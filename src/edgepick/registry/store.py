"""The model registry on disk: versions of model files, verified by SHA-256, with an active
version and the ones before it (seed 001 §6.4: download, verify, switch, roll back, keep at least
one old version).

Layout: `DIR/registry.json` (the state, replaced atomically: write a temporary file, fsync,
rename) and `DIR/models/NAME/VERSION/FILE`. A reader sees the old state or the new one, never a
mix; an activation in progress is written as `pending` and only `commit` makes it active, so a
crash at any point leaves the previous version active or the new one fully.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import re
import shutil
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from pydantic import BaseModel, ConfigDict, Field

from edgepick.errors import EdgepickError
from edgepick.models.adapter import read_adapter
from edgepick.models.gguf_info import read_gguf
from edgepick.records.candidate import AdapterSetting
from edgepick.records.update import ProbeResult
from edgepick.update.manifest import build_manifest, load_manifest

log = logging.getLogger("edgepick.registry")
STATE = "registry.json"
# matched whole (fullmatch): `$` alone would let a trailing newline through
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
MANIFEST = "manifest.json"  # beside each version's file: its per-tensor manifest (update/)
KEEP_EVENTS = 200


class ChecksumMismatch(EdgepickError):
    """A stored file no longer has the SHA-256 recorded when it was added."""


class AdapterPin(BaseModel):
    """A LoRA adapter served with the version (seed 003 §7.1), pinned like the model file."""

    model_config = ConfigDict(extra="forbid")
    file: str  # relative to the registry directory
    sha256: str
    scale: float = 1.0


class VersionEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    file: str  # relative to the registry directory
    sha256: str
    size: int
    added: str
    manifest: str | None = None  # its per-tensor manifest, relative to the registry directory
    origin: str | None = None  # how it came: "update from VERSION (package sha256 …)"
    probe: ProbeResult | None = None  # the fidelity probe it passed or failed before activation
    adapter: AdapterPin | None = None  # the LoRA adapter this version runs with


class RegistryEvent(BaseModel):
    model_config = ConfigDict(extra="forbid")
    when: str
    action: str  # add | update | probe | activate | rollback | canary-open | canary-passed | canary-rollback
    version: str
    detail: str = ""


class CanaryWindow(BaseModel):
    """A live activation under watch: `previous` is kept until `until` (epoch seconds)."""

    model_config = ConfigDict(extra="forbid")
    version: str
    previous: str
    until: float


class ModelEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    versions: dict[str, VersionEntry] = Field(default_factory=dict)
    active: str | None = None
    history: list[str] = Field(default_factory=list)  # versions active before, oldest first
    pending: str | None = None  # an activation started and not committed
    events: list[RegistryEvent] = Field(default_factory=list)  # the newest KEEP_EVENTS
    canary: CanaryWindow | None = None


class RegistryState(BaseModel):
    """Schema 2 added manifests, probes, events and the canary window; a schema 1 file reads
    as it is (every new field has a default) and is written back as 2."""

    model_config = ConfigDict(extra="forbid")
    schema_version: int = 2
    models: dict[str, ModelEntry] = Field(default_factory=dict)


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def sha256_of(path: str | Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def check_gguf(path: Path) -> None:
    """A model file must be a GGUF the engine can read: the magic, a header that parses, and
    tensor data that fits in the file, so a wrong, empty or cut-short file is refused when it
    is added, not when an engine fails to load it."""
    read_gguf(path)


def crash_point(step: str) -> None:
    """Tests force a crash between two steps (EDGEPICK_REGISTRY_CRASH_AT=step) to prove the
    state stays consistent; never set in normal use."""
    if os.environ.get("EDGEPICK_REGISTRY_CRASH_AT") == step:
        os._exit(75)


def split_ref(ref: str) -> tuple[str, str | None]:
    """`name@version` → (name, version); `name` → (name, None)."""
    name, _, version = ref.partition("@")
    return name, version or None


def split_versioned_ref(ref: str) -> tuple[str, str]:
    """`name@version` → (name, version); a ref without its version is refused in one line."""
    name, version = split_ref(ref)
    if version is None:
        raise EdgepickError(f"{ref}: give NAME@VERSION")
    return name, version


class Registry:
    def __init__(self, root: str | Path, create: bool = False) -> None:
        self.root = Path(root).expanduser()
        if create:
            self.root.mkdir(parents=True, exist_ok=True)
        elif not (self.root / STATE).is_file():
            raise EdgepickError(f"{self.root}: not a model registry (no {STATE}); create one "
                                "with `edgepick models add FILE --name N --version V --registry "
                                f"{self.root}`")

    # -- state ---------------------------------------------------------------------------------
    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / ".lock", "a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def state(self) -> RegistryState:
        path = self.root / STATE
        if not path.is_file():
            return RegistryState()
        try:
            return RegistryState.model_validate_json(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise EdgepickError(f"{path}: unreadable registry state ({str(exc).splitlines()[0]})") from None

    def _write(self, state: RegistryState) -> None:
        path = self.root / STATE
        tmp = path.with_name(STATE + ".tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(state.model_dump_json(indent=2))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        dir_fd = os.open(self.root, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    def model(self, name: str) -> ModelEntry:
        entry = self.state().models.get(name)
        if entry is None:
            known = ", ".join(self.state().models) or "none"
            raise EdgepickError(f"no model '{name}' in the registry {self.root} (models: {known})")
        return entry

    def path_of(self, name: str, version: str) -> Path:
        entry = self.model(name)
        if version not in entry.versions:
            raise EdgepickError(f"{name} has no version '{version}' (versions: "
                                f"{', '.join(entry.versions) or 'none'})")
        return self.root / entry.versions[version].file

    # -- add / remove --------------------------------------------------------------------------
    def add(self, file: str | Path, name: str, version: str, adapter: str | Path | None = None,
            adapter_scale: float = 1.0) -> VersionEntry:
        """Copy the file in (and its LoRA adapter, checked against it), record their SHA-256;
        the state changes only once the copies are whole."""
        src = Path(file)
        if not src.is_file():
            raise EdgepickError(f"{file}: no such file")
        check_names(name, version)
        check_gguf(src)
        lora = None
        if adapter is not None:
            read_adapter(adapter, src)
            if adapter_scale <= 0:
                raise EdgepickError(f"--adapter-scale: expected a positive scale, got "
                                    f"{adapter_scale}")
            lora = (Path(adapter), adapter_scale)
        return self.add_built(name, version, src.name, lambda tmp: shutil.copyfile(src, tmp),
                              adapter=lora)

    def add_built(self, name: str, version: str, filename: str,
                  build: Callable[[Path], None], origin: str | None = None,
                  adapter: tuple[Path, float] | None = None) -> VersionEntry:
        """`build(tmp)` writes the version's file (a copy, or an update applied); it is
        placed, with its manifest beside it, before the state names it."""
        check_names(name, version)
        with self._locked():
            if version in self.state().models.get(name, ModelEntry()).versions:
                raise EdgepickError(f"{name}@{version} is already in the registry; add a new "
                                    "version instead of replacing one")
            dest_dir = self.root / "models" / name / version
            dest_dir.mkdir(parents=True, exist_ok=True)
            dest = dest_dir / filename
            tmp = dest.with_name(dest.name + ".partial")
            build(tmp)
            check_gguf(tmp)
            manifest = build_manifest(tmp)
            manifest.file = filename
            (dest_dir / MANIFEST).write_text(manifest.model_dump_json(), encoding="utf-8")
            crash_point("add-copied")
            os.replace(tmp, dest)
            crash_point("add-placed")
            pin = None
            if adapter is not None:
                lora = dest_dir / ("adapter-" + adapter[0].name)
                shutil.copyfile(adapter[0], lora)
                pin = AdapterPin(file=str(lora.relative_to(self.root)), sha256=sha256_of(lora),
                                 scale=adapter[1])
            ve = VersionEntry(file=str(dest.relative_to(self.root)), sha256=manifest.sha256,
                              size=dest.stat().st_size, added=now_iso(),
                              manifest=str((dest_dir / MANIFEST).relative_to(self.root)),
                              origin=origin, adapter=pin)
            state = self.state()
            entry = state.models.setdefault(name, ModelEntry())
            entry.versions[version] = ve
            add_event(entry, "update" if origin else "add", version, origin or "")
            self._write(state)
        return ve

    def manifest(self, name: str, version: str):
        """The version's per-tensor manifest (built now for a version added before manifests
        were kept)."""
        ve = self.model(name).versions[version]
        if ve.manifest and (self.root / ve.manifest).is_file():
            return load_manifest(self.root / ve.manifest)
        return build_manifest(self.path_of(name, version))

    def update_entry(self, name: str, change: Callable[[ModelEntry], None]) -> ModelEntry:
        """Change one model's entry under the lock, in one atomic write."""
        with self._locked():
            state = self.state()
            if name not in state.models:
                raise EdgepickError(f"no model '{name}' in the registry {self.root}")
            change(state.models[name])
            self._write(state)
            return state.models[name]

    def record(self, name: str, action: str, version: str, detail: str = "") -> None:
        self.update_entry(name, lambda e: add_event(e, action, version, detail))

    def remove(self, name: str, version: str) -> None:
        with self._locked():
            state = self.state()
            entry = state.models.get(name)
            if entry is None or version not in entry.versions:
                raise EdgepickError(f"{name}@{version} is not in the registry")
            if version in (entry.active, entry.pending):
                raise EdgepickError(f"{name}@{version} is active; activate another version first")
            if entry.canary and entry.canary.previous == version and \
                    time.time() < entry.canary.until:
                raise EdgepickError(f"{name}@{version} is kept until the canary of "
                                    f"{entry.canary.version} closes "
                                    f"({time.strftime('%H:%M:%S', time.localtime(entry.canary.until))})")
            ve = entry.versions.pop(version)
            entry.history = [v for v in entry.history if v != version]
            if not entry.versions:
                del state.models[name]
            self._write(state)
        shutil.rmtree((self.root / ve.file).parent, ignore_errors=True)

    # -- activation: verify → pending → (engine healthy) → commit ---------------------------------
    def verify(self, name: str, version: str) -> Path:
        return self.verified(name, version)[0]

    def verified(self, name: str, version: str):
        """(the version's file, its adapter setting or None), each SHA-256 checked once: what an
        activation, a hot swap or serve starts the engine with, hashed by nothing after."""
        path = self.path_of(name, version)
        expected = self.model(name).versions[version].sha256
        if not path.is_file():
            raise ChecksumMismatch(f"{name}@{version}: file {path} is missing")
        got = sha256_of(path)
        if got != expected:
            raise ChecksumMismatch(f"{name}@{version}: SHA-256 of {path} is {got[:12]}…, the "
                                   f"registry recorded {expected[:12]}…; refusing it")
        return path, self.adapter_of(name, version)  # its adapter is checked the same way

    def adapter_of(self, name: str, version: str, *, check: bool = True):
        """The version's LoRA adapter as runtime settings take it (a RuntimeSettings.adapter),
        its SHA-256 checked unless the caller's `verified` just did; None without one."""
        pin = self.model(name).versions[version].adapter
        if pin is None:
            return None

        path = self.root / pin.file
        got = pin.sha256 if not check else sha256_of(path) if path.is_file() else "missing"
        if got != pin.sha256:
            raise ChecksumMismatch(f"{name}@{version}: its adapter {path} is "
                                   f"{got[:12]}{'…' if got != 'missing' else ''}, the registry "
                                   f"recorded {pin.sha256[:12]}…; refusing it")
        return AdapterSetting(path=str(path), sha256=pin.sha256, scale=pin.scale)

    def mark_pending(self, name: str, version: str) -> None:
        with self._locked():
            state = self.state()
            state.models[name].pending = version
            self._write(state)

    def commit(self, name: str, version: str) -> None:
        """The one atomic step that makes `version` active."""
        with self._locked():
            state = self.state()
            entry = state.models[name]
            if entry.active and entry.active != version:
                entry.history = [v for v in entry.history if v != entry.active] + [entry.active]
            entry.history = [v for v in entry.history if v != version]
            entry.active, entry.pending = version, None
            add_event(entry, "activate", version)
            self._write(state)

    def clear_pending(self, name: str) -> None:
        with self._locked():
            state = self.state()
            if name in state.models and state.models[name].pending is not None:
                log.warning("%s@%s: an unfinished activation was abandoned; %s stays active",
                            name, state.models[name].pending, state.models[name].active)
                state.models[name].pending = None
                self._write(state)

    def previous(self, name: str) -> str:
        entry = self.model(name)
        candidates = [v for v in entry.history if v in entry.versions and v != entry.active]
        if not candidates:
            raise EdgepickError(f"{name} has no earlier version to roll back to")
        return candidates[-1]

    def pop_history(self, name: str, version: str) -> None:
        """After a rollback to `version`, the version rolled back from is not "previous" again."""
        with self._locked():
            state = self.state()
            entry = state.models[name]
            entry.history = [v for v in entry.history if v != version]
            self._write(state)


def check_names(name: str, version: str) -> None:
    for what, value in (("name", name), ("version", version)):
        if not NAME_RE.fullmatch(value):
            raise EdgepickError(f"{what} {value!r}: use letters, digits, '.', '_' or '-' "
                                "(at most 64, starting with a letter or digit)")


def add_event(entry: ModelEntry, action: str, version: str, detail: str = "") -> None:
    entry.events.append(RegistryEvent(when=now_iso(), action=action, version=version,
                                      detail=detail))
    del entry.events[:-KEEP_EVENTS]
