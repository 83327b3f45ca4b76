"""Checks on the file itself, before anything runs: the GGUF header and tensor data against the
file's size and deploy.yaml's sha256 (file_integrity), the architecture against the engine's set
(engine_support), and the chat template it carries (chat_template; seed 001 §5.4 load failure,
seed 004 §6.1 "check memory first, then the format", seed 000 §5.4)."""

from __future__ import annotations

import os
import shlex

import numpy as np

from edgepick.backends.registry import unsupported
from edgepick.doctor.checks import finding
# the chat template's check and helpers live in checks_template (other checks import them here)
from edgepick.doctor.checks_template import (  # noqa: F401
    _render_error, _template_and_vocab, _template_source, _with_template, chat_template)
from edgepick.doctor.finding import Evidence, Fix
from edgepick.errors import EdgepickError
from edgepick.models.gguf_info import read_gguf
from edgepick.models.spec import spec_of
from edgepick.store.identity import file_sha256

_FLOAT_SAMPLE = 1 << 20  # elements of each F32/F16 tensor read for NaN/Inf


def _inspect(path: str) -> str:
    return shlex.join(["edgepick", "inspect", "-m", path])


def file_integrity(ctx):
    """Header and tensor table against the file size, NaN/Inf in float tensors, sha256 against
    deploy.yaml."""
    path = ctx.target.model_path
    size = os.path.getsize(path) if os.path.isfile(path) else 0
    restore = (f"restore {path} from its source (copy or download it again) and compare "
               f"`sha256sum {shlex.quote(path)}` with "
               + (f"deploy.yaml's model.sha256 {ctx.target.sha256}" if ctx.target.sha256
                  else "the source's checksum"))
    try:
        reader = read_gguf(path)
    except EdgepickError as exc:
        ev = [Evidence(what="header check", value=str(exc), command=_inspect(path)),
              Evidence(what="file size", value=size, unit="bytes")]
        if ctx.target.sha256:
            ev.append(Evidence(what="sha256", value=file_sha256(path) if size else None,
                               baseline=ctx.target.sha256))
        return finding(ctx, "file_integrity", f"the file does not read as a GGUF: {exc}",
                       Fix(text=restore), 1.0, ev, detail="header")
    bad = []
    for t in reader.tensors:
        if t.tensor_type.name not in ("F32", "F16", "BF16") or t.tensor_type.name == "BF16":
            continue
        sample = np.asarray(t.data).reshape(-1)[:_FLOAT_SAMPLE]
        if not np.all(np.isfinite(sample.astype(np.float32))):
            bad.append(t.name)
    if bad:
        return finding(ctx, "file_integrity",
                       f"{len(bad)} float tensor(s) hold NaN or Inf: {', '.join(bad[:3])}",
                       Fix(text=restore), 1.0,
                       [Evidence(what="tensors with NaN/Inf", value=bad[:10],
                                 command=_inspect(path))], detail=bad[0])
    if ctx.target.sha256:
        actual = file_sha256(path)
        if actual != ctx.target.sha256:
            return finding(ctx, "file_integrity",
                           "the file's sha256 is not the one deploy.yaml names (serve refuses it)",
                           Fix(text=restore + "; if this file is the one meant to be served, "
                                              "write its sha256 into deploy.yaml",
                               deploy_edit={"model.sha256": actual}),
                           1.0, [Evidence(what="sha256", value=actual,
                                          baseline=ctx.target.sha256,
                                          command=f"sha256sum {shlex.quote(path)}")],
                           detail="sha256")
    return None


def engine_support(ctx):
    return unsupported_finding(ctx, spec_of(ctx.target.model_path), _inspect(ctx.target.model_path))


def unsupported_finding(ctx, spec, command: str):
    """The engine_support finding for `spec` on the target's engine (None when it runs there);
    `command` shows the architecture (a file's or a remote reference's inspect)."""
    why = unsupported(ctx.target.backend, spec)
    if not why:
        return None
    return finding(ctx, "engine_support", why,
                   Fix(text=f"run {spec.architecture} on an engine that supports it, or choose a "
                            "model of a supported architecture (edgepick fit lists what fits)"),
                   1.0, [Evidence(what="architecture", value=spec.architecture, command=command)],
                   detail=spec.architecture)


