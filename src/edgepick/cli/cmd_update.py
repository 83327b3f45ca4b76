"""`edgepick update manifest|diff|apply`: model updates as verified deltas (seed 001 §6.4).
See docs/registry.md ("Updates")."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from edgepick.cli.cmd_fidelity import _progress
from edgepick.cli.output import console, err_console, human_bytes, print_json
from edgepick.errors import EdgepickError
from edgepick.update.apply import apply as do_apply
from edgepick.update.diff import diff as do_diff
from edgepick.update.fetch import fetch
from edgepick.update.manifest import build_manifest

update_app = typer.Typer(help="Model updates as verified deltas: a per-tensor manifest, a "
                              "package of what changed, its byte-exact application "
                              "(docs/registry.md).", no_args_is_help=True)

FROM_HELP = "fetch the package over HTTP(S) first, resuming a cut-off download; verified before use"
SHA_HELP = "the package's expected SHA-256 (with --from)"


def package_from(update: Optional[Path], url: Optional[str], sha256: Optional[str]) -> Path:
    """The local package: UPDATE, or the one fetched from --from URL (verified)."""
    if (update is None) == (url is None):
        raise EdgepickError("give the package file UPDATE or --from URL (one of them)")
    if url is None:
        assert update is not None
        if not update.is_file():
            raise EdgepickError(f"{update}: no such file")
        return update

    with _progress(True) as tick:
        path = fetch(url, sha256=sha256, progress=tick)
    err_console.print(f"fetched {url} → {path} (verified)")
    return path


@update_app.command("manifest")
def manifest(file: Path = typer.Argument(..., help="a GGUF model file"),
             json_out: bool = typer.Option(False, "--json", help="print the manifest as JSON"),
             out: Optional[Path] = typer.Option(None, "--out", "-o",
                                                help="also write the JSON manifest to this file"),
             verbose: bool = typer.Option(False, "--verbose", "-v", help="list every tensor "
                                          "(name, type, shape, offset, size, SHA-256)")) -> None:
    """The file's and the metadata's SHA-256 and its tensors by type; with --verbose (or in the
    JSON, --json / -o) each tensor's name, type, shape, offset, size and SHA-256."""
    m = build_manifest(file)
    if out is not None:
        replaced = out.exists()
        out.write_text(m.model_dump_json(indent=1), encoding="utf-8")
        err_console.print(f"{'replaced' if replaced else 'wrote'} {out}")
    if json_out:
        print_json(m)
        return
    console.print(f"{file}: {human_bytes(m.size)}, sha256 {m.sha256}", highlight=False)
    console.print(f"metadata: {len(m.kv)} keys, {m.metadata_size} bytes, sha256 "
                  f"{m.metadata_sha256}", highlight=False)
    if verbose:
        t = Table("tensor", "type", "shape", "offset", "bytes", "sha256 (first 16)",
                  title=f"{len(m.tensors)} tensors")
        for e in m.tensors:
            t.add_row(e.name, e.type, "×".join(map(str, e.shape)), str(e.offset), str(e.size),
                      e.sha256[:16])
        console.print(t)
        return
    by_type: dict[str, list[int]] = {}
    for e in m.tensors:
        by_type.setdefault(e.type, []).append(e.size)
    t = Table("type", "tensors", "MiB", "share", title=f"{len(m.tensors)} tensors by type")
    data = sum(sum(v) for v in by_type.values()) or 1
    for typ, sizes in sorted(by_type.items(), key=lambda kv: -sum(kv[1])):
        t.add_row(typ, str(len(sizes)), f"{sum(sizes) / 2**20:.1f}", f"{sum(sizes) / data:.1%}")
    console.print(t)
    console.print("each tensor (offset, size, SHA-256): --verbose, or the JSON (--json, -o FILE)",
                  style="dim")


@update_app.command("diff")
def diff(old: Path = typer.Argument(..., help="the version devices have (the base)"),
         new: Path = typer.Argument(..., help="the version to ship"),
         out: Path = typer.Option(..., "--out", "-o", help="the package to write"),
         force: bool = typer.Option(False, "--force", help="replace --out if it exists")) -> None:
    """Write a package holding NEW's metadata, its changed tensors (compressed where that pays)
    and references to the tensors OLD already has; a tensor that only moved costs nothing."""
    for p in (old, new):
        if not p.is_file():
            raise EdgepickError(f"{p}: no such file")
    if out.exists() and not force:
        raise EdgepickError(f"{out} exists; give --force to replace it")
    with _progress(True) as tick:
        r = do_diff(old, new, out, progress=tick)
    console.print(f"{out}: {human_bytes(r.size)} ({r.size / r.new_size:.1%} of {new.name}'s "
                  f"{human_bytes(r.new_size)}); {r.referenced} tensors referenced from the "
                  f"base, {r.shipped} shipped ({human_bytes(r.shipped_bytes)} before compression)")


@update_app.command("apply")
def apply(old: Path = typer.Argument(..., help="the base file the package was made for"),
          update: Optional[Path] = typer.Argument(None, help="the package (or --from URL)"),
          out: Path = typer.Option(..., "--out", "-o", help="the new file to write"),
          url: Optional[str] = typer.Option(None, "--from", help=FROM_HELP),
          sha256: Optional[str] = typer.Option(None, "--sha256", help=SHA_HELP),
          force: bool = typer.Option(False, "--force", help="replace --out if it exists")) -> None:
    """Rebuild NEW byte for byte and check its SHA-256; a package that is corrupt or made for
    another base is refused and nothing is written."""
    pkg = package_from(update, url, sha256)
    if out.exists() and not force:
        raise EdgepickError(f"{out} exists; give --force to replace it")
    replaced = out.exists()
    with _progress(True) as tick:
        digest = do_apply(old, pkg, out, progress=tick)
    console.print(f"{'replaced' if replaced else 'wrote'} {out} (sha256 {digest[:16]}…, verified)")


def register(app: typer.Typer) -> None:
    app.add_typer(update_app, name="update")
