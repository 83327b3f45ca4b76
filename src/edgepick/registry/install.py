"""`edgepick models update NAME UPDATE`: a package applied into a new registry version, probed
against the active version, activated only when the probe holds (seed 001 §6.4).

Every step leaves the registry consistent: the new file is built beside its final name and
renamed, the version is recorded only once it is whole (with its manifest), the probe is recorded
with it, and only the activation's commit (registry/activation.py) changes which version is
active; a process killed anywhere before that leaves the old version active. Run again after a
kill, the same package finds its version already built and goes on from the probe.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from edgepick.errors import EdgepickError
from edgepick.progress import Tick
from edgepick.records.update import ProbeResult, UpdatePolicy
from edgepick.registry.store import Registry, add_event, crash_point
from edgepick.update.apply import WrongBase, apply
from edgepick.update.package import Index, read_index
from edgepick.update.probe import probe


@dataclass
class Installed:
    name: str
    version: str
    base: str  # the registry version the package was applied to
    active: str  # the version active when the probe ran
    probe: ProbeResult
    reused: bool  # the version was already built (a run after a kill)


def _base_version(reg: Registry, name: str, index: Index, package: Path) -> str:
    entry = reg.model(name)
    order = ([entry.active] if entry.active else []) + [v for v in entry.versions
                                                         if v != entry.active]
    for v in order:
        if entry.versions[v].sha256 == index.base.sha256:
            return v
    raise WrongBase(f"{package} updates a file with sha256 {index.base.sha256[:12]}…; no "
                    f"version of {name} in {reg.root} has it (active: {entry.active or '-'}, "
                    f"{entry.versions[entry.active].sha256[:12] if entry.active else '-'}…); "
                    "refusing it, nothing was written")


def build_version(reg: Registry, name: str, package: Path, version: str | None,
                  progress: Tick | None = None) -> tuple[str, str, bool]:
    """Apply the package into a new version; returns (version, base version, reused)."""
    index = read_index(package)
    base = _base_version(reg, name, index, package)
    version = version or index.new.sha256[:12]
    entry = reg.model(name)
    if version in entry.versions:
        if entry.versions[version].sha256 == index.new.sha256:
            return version, base, True
        raise EdgepickError(f"{name}@{version} is already in the registry with other content; "
                            "give another --version")
    base_path = reg.verify(name, base)
    filename = index.new.name or base_path.name
    reg.add_built(name, version, filename,
                  lambda tmp: apply(base_path, package, tmp, progress=progress, index=index),
                  origin=f"update from {base} (package sha256 {_sha(package)[:12]}…)")
    crash_point("update-built")
    return version, base, False


def _sha(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def probe_version(reg: Registry, name: str, version: str, policy: UpdatePolicy,
                  format_checks: bool, threads: int = 2,
                  progress: Tick | None = None) -> tuple[str, ProbeResult]:
    """Probe `version` against the active one and record the result with the version."""
    active = reg.model(name).active
    if not active:
        raise EdgepickError(f"{name} has no active version to probe {version} against; "
                            f"activate one first (edgepick models activate {name}@VERSION)")
    new_path, active_path = reg.verify(name, version), reg.verify(name, active)
    result = probe(new_path, active_path, policy, against_label=f"{name}@{active}",
                   format_checks=format_checks, threads=threads, progress=progress)

    def keep(entry) -> None:
        entry.versions[version].probe = result
        add_event(entry, "probe", version, ("passed" if result.passed else "failed: "
                                            + result.reason()) + f" (against {active})")

    reg.update_entry(name, keep)
    crash_point("update-probed")
    return active, result


def install(reg: Registry, name: str, package: Path, version: str | None,
            policy: UpdatePolicy, format_checks: bool, threads: int = 2,
            progress: Tick | None = None) -> Installed:
    """Build and probe; the caller activates when `probe.passed`."""
    version, base, reused = build_version(reg, name, package, version, progress)
    active, result = probe_version(reg, name, version, policy, format_checks, threads, progress)
    return Installed(name, version, base, active, result, reused)
