"""What reading a remote GGUF's header cost, said once per model on stderr."""

from __future__ import annotations

from edgepick.cli.output import err_console
from edgepick.records.model_ref import ModelRef
from edgepick.units import human_bytes


def remote_line(ref: ModelRef) -> str | None:
    r = ref.remote
    if r is None:
        return None
    parts = f" ({len(r.parts)} parts)" if len(r.parts) > 1 else ""
    if not r.requests:
        return f"{r.ref}{parts}: header from the cache, no request"
    share = r.bytes_read / r.size if r.size else 0.0
    return (f"{r.ref}{parts}: header read in {r.requests} range request"
            f"{'s' if r.requests != 1 else ''}, {human_bytes(r.bytes_read)} of "
            f"{human_bytes(r.size)} ({share:.2%})")


def say_remote(refs: list[ModelRef]) -> None:
    for ref in refs:
        line = remote_line(ref)
        if line:
            err_console.print(f"[dim]{line}[/]", highlight=False)
