"""The backend devices the pinned llama.cpp build sees, with their free and total memory.

llama-cpp-python binds no `ggml_backend_dev_*` function, so the devices are read from the tools
built from the same source: `llama-server --list-devices` walks ggml's device registry
(`common_print_available_devices` in common/arg.cpp: every device but the CPU, as
`NAME: DESCRIPTION (TOTAL MiB, FREE MiB free)`), with `--rpc HOST:PORT` adding each rpc-server's
device first. The CPU is this machine's own memory (devices/probe.py measures the rest of it).
"""

from __future__ import annotations

import re
import subprocess

from edgepick.errors import EdgepickError
from edgepick.launch.process import run_child
from edgepick.llama_tools import tool_path
from edgepick.records.compute_device import ComputeDevice

MIB = 2**20
LINE = re.compile(r"^\s+(\S+): (.*) \((\d+) MiB, (\d+) MiB free\)\s*$")
KINDS = {"RPC": "rpc", "CPU": "cpu"}


def parse_devices(text: str) -> list[dict]:
    """`--list-devices` output -> [{name, description, total_bytes, free_bytes}]."""
    out = []
    for line in text.splitlines():
        m = LINE.match(line)
        if m:
            out.append({"name": m.group(1), "description": m.group(2),
                        "total_bytes": int(m.group(3)) * MIB, "free_bytes": int(m.group(4)) * MIB})
    return out


def listed_devices(rpc: list[str] | None = None, timeout_s: float = 30) -> list[dict]:
    """The non-CPU backend devices llama.cpp finds here, each rpc-server in `rpc` included."""
    argv = [tool_path("llama-server")]
    if rpc:  # before --list-devices, which prints and exits as soon as it is parsed
        argv += ["--rpc", ",".join(rpc)]
    argv.append("--list-devices")
    try:
        r = run_child(argv, timeout_s=timeout_s)
    except subprocess.TimeoutExpired:
        raise EdgepickError(f"llama-server --list-devices did not answer in {timeout_s:g} s"
                            + (f" (is the rpc-server at {', '.join(rpc)} up?)" if rpc else "")) from None
    if r.returncode != 0 or "Available devices" not in r.stdout:
        tail = (r.stderr or r.stdout).strip().splitlines()[-1:] or ["no output"]
        raise EdgepickError(f"llama-server --list-devices failed: {tail[0]}")
    return parse_devices(r.stdout)


def kind_of(name: str) -> str:
    return next((k for prefix, k in KINDS.items() if name.startswith(prefix)), "gpu")


def backend_devices(cpu_total: int, cpu_free: int, bandwidth_gbps: float,
                    rpc: list[str] | None = None) -> list[ComputeDevice]:
    """The CPU (this machine's memory and measured bandwidth), then every device llama.cpp
    lists. A listed device's bandwidth is not measured here: an RPC device carries the host's
    figure only when it runs on this machine (127.0.0.1), else it is left to its profile."""
    out = [ComputeDevice(name="CPU", kind="cpu", memory="dedicated", memory_bytes=cpu_total,
                         budget_bytes=min(cpu_free, cpu_total), bandwidth_gbps=bandwidth_gbps,
                         backend="CPU", description="this machine's CPU and RAM")]
    for d in listed_devices(rpc):
        kind = kind_of(d["name"])
        rpc_dev = kind == "rpc"  # named as llama.cpp names its buffers: RPC0[host:port]
        out.append(ComputeDevice(
            name=f"{d['name']}[{d['description']}]" if rpc_dev else d["name"], kind=kind,
            memory="dedicated", memory_bytes=max(1, d["total_bytes"]),
            budget_bytes=max(1, min(d["free_bytes"], d["total_bytes"])),
            bandwidth_gbps=bandwidth_gbps, backend="RPC" if rpc_dev else d["name"].rstrip("0123456789"),
            endpoint=d["description"] if rpc_dev else None, description=d["description"]))
    return out
