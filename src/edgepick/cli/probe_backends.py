"""`edgepick probe`'s backend devices: what the pinned llama.cpp build can place layers on here,
each with its free and total memory (devices/backend_devices.py)."""

from __future__ import annotations

from rich.table import Table

from edgepick.cli.output import console, err_console, human_bytes
from edgepick.devices.backend_devices import backend_devices
from edgepick.errors import EdgepickError
from edgepick.records.device import DeviceProfile


def with_backend_devices(dev: DeviceProfile, rpc: list[str]) -> DeviceProfile:
    """The profile with its compute devices listed (the CPU, each GPU the build drives, each
    rpc-server given); unchanged, with one line saying why, when llama.cpp's tools are missing."""
    endpoints = [e for item in rpc for e in item.split(",") if e]
    try:
        parts = backend_devices(dev.total_ram_bytes, dev.model_budget_bytes, dev.bandwidth_gbps,
                                endpoints)
    except EdgepickError as exc:
        if endpoints:
            raise
        err_console.print(f"[dim]backend devices not listed: {exc}[/]")
        return dev
    return dev.model_copy(update={"compute_devices": parts})


def print_backend_devices(dev: DeviceProfile) -> None:
    if not dev.compute_devices:
        return
    t = Table("backend device", "kind", "total", "free", "description",
              title="devices llama.cpp can place layers on (ggml's device registry)")
    for d in dev.compute_devices:
        t.add_row(d.name, d.kind, human_bytes(d.memory_bytes), human_bytes(d.usable_bytes),
                  d.description)
    console.print(t)
