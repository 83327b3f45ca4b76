"""`edgepick node start|list`: join a machine to the device farm under a device tag, and see the farm.

`node start` wraps `ray start` with the resource `device:<tag>`, probes this machine and publishes
its profile, so a driver anywhere knows each device's measured bandwidth and RAM (seed 000 §3.4:
the device's own figures, not its spec sheet). Needs the `ray` extra: pip install 'edgepick[ray]'.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import typer
from rich.table import Table

from edgepick.cli.node_rpc import rpc_command
from edgepick.cli.output import console, human_bytes, print_json
from edgepick.cluster.nodes import (check_tag, cluster_nodes, connect, has_token, is_loopback,
                                    publish_profile, published_profiles, require_ray, tag_resource,
                                    use_loopback, withdraw_profile)
from edgepick.devices.probe import probe
from edgepick.errors import EdgepickError
from edgepick.launch.process import run_child, start as start_child

node_app = typer.Typer(help="Device-farm nodes on Ray: start one under a device tag, list them "
                            "(docs/scale.md).", no_args_is_help=True)


def _ray_cli() -> str:
    exe = Path(sys.executable).parent / "ray"
    found = str(exe) if exe.exists() else shutil.which("ray")
    if not found:
        raise EdgepickError("the `ray` command is not installed; install the extra: "
                            "pip install 'edgepick[ray]'")
    return found


def _ray_start_args(device: str, address: str | None, head: bool, port: int,
                    node_ip: str | None, num_cpus: int | None, block: bool) -> list[str]:
    if head == bool(address):
        raise EdgepickError("give --address HOST:PORT to join a cluster, or --head to start one")
    args = [_ray_cli(), "start", "--resources", json.dumps({tag_resource(check_tag(device)): 1}),
            "--disable-usage-stats"]
    args += ["--head", "--port", str(port), "--include-dashboard=false"] if head \
        else ["--address", address]
    if node_ip:
        args += ["--node-ip-address", node_ip]
    if num_cpus is not None:
        args += ["--num-cpus", str(num_cpus)]
    return args + (["--block"] if block else [])


def _join(address: str, device: str, proc: subprocess.Popen | None, loopback: bool,
          timeout_s: float = 120):
    """Connect once this machine's node is up and carries the tag (ray start may still be
    starting it when we ask)."""
    ray = require_ray()

    deadline = time.monotonic() + timeout_s
    while True:
        if proc is not None and proc.poll() is not None:
            raise EdgepickError(f"ray start exited with code {proc.returncode}")
        try:
            connect(address, loopback=loopback)
            if any(n.alive and device in n.devices for n in cluster_nodes()):
                return
        except EdgepickError:
            pass
        if ray.is_initialized():
            ray.shutdown()
        if time.monotonic() > deadline:
            raise EdgepickError(f"no node with device tag {device} came up at {address} "
                                f"within {timeout_s:.0f} s")
        time.sleep(1.0)


@node_app.command("start")
def start(device: str = typer.Option(..., "--device", help="this machine's device tag, e.g. "
                                                            "pi5-lab (plans name it in devices:)"),
          address: str = typer.Option(None, "--address", help="the head node, HOST:PORT"),
          head: bool = typer.Option(False, "--head", help="start a new cluster here instead"),
          port: int = typer.Option(6379, "--port", help="with --head: the port to listen on"),
          node_ip: str = typer.Option(None, "--node-ip-address",
                                      help="this machine's address as the others reach it"),
          num_cpus: int = typer.Option(None, "--num-cpus", help="CPUs to offer (default: all)"),
          engine: bool = typer.Option(False, "--engine/--no-engine",
                                      help="also calibrate the decode estimate (15-25 s more)"),
          bandwidth_mib: int = typer.Option(512, "--bandwidth-mib", min=16,
                                            help="buffer the bandwidth probe streams; smaller is "
                                                 "quicker and suits a device with little RAM, "
                                                 "but reads more of the caches"),
          block: bool = typer.Option(False, "--block",
                                     help="stay in the foreground; Ctrl-C stops the node")) -> None:
    """Start Ray here with the resource device:<tag>, probe this machine and publish its profile.
    With --head --node-ip-address 127.0.0.1, every Ray port listens on loopback only."""
    loopback = is_loopback(node_ip)
    if loopback and not head:
        raise EdgepickError(f"--node-ip-address {node_ip} keeps Ray on this machine: use it with "
                            "--head; a node joining a cluster needs an address the head reaches")
    if loopback:
        use_loopback()  # before Ray is imported: `ray start` and this process inherit it
    ray = require_ray()

    args = _ray_start_args(device, address, head, port, node_ip, num_cpus, block)
    if head:  # the cluster's token: every node and driver joins with a copy of it
        run_child([args[0], "get-auth-token", "--generate"], timeout_s=60)
    elif not has_token():
        raise EdgepickError("no Ray token on this machine: copy the head's ~/.ray/auth_token "
                            "here (`ray get-auth-token` prints it there), or set RAY_AUTH_TOKEN")
    with console.status("probing this machine (bandwidth, compute)…"):
        profile = probe(bandwidth_mib * 2**20, engine=engine).model_copy(update={"name": device})
    target = address or f"{node_ip or '127.0.0.1'}:{port}"
    proc = None
    if block:
        # A service manager stops us with SIGTERM: take the node down with us, not orphaned.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

        proc = start_child(args, stdin=None)  # dies with us, even killed outright
    else:
        done = run_child(args)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or [""]
            raise EdgepickError(f"ray start failed (exit {done.returncode}): {tail[0]}")
    name = None
    try:
        _join(target, device, proc, loopback)
        name = publish_profile(device, profile.model_dump(mode="json"))
        node_id = ray.get_runtime_context().get_node_id()
        ray.shutdown()
        console.print(f"node {node_id[:12]} is device [bold]{device}[/] at {target}: "
                      f"{human_bytes(profile.model_budget_bytes)} for the model, "
                      f"{profile.bandwidth_gbps:.1f} GB/s read bandwidth (profile {name})",
                      highlight=False)
        if proc is not None:
            proc.wait()
    except BaseException:
        if proc is not None and proc.poll() is None:
            if name:
                _withdraw(target, name, loopback)
            proc.terminate()
            proc.wait(timeout=60)
        raise


def _withdraw(address: str, name: str, loopback: bool) -> None:
    """Remove this node's profile before stopping it: Ray drains a node on SIGTERM until it holds
    no actor (up to 30 s), and the detached profile would hold it that long."""
    try:
        connect(address, loopback=loopback)
        withdraw_profile(name)
    except Exception:  # noqa: BLE001  the node stops anyway, only more slowly
        pass
    finally:
        ray = require_ray()
        if ray.is_initialized():
            ray.shutdown()


@node_app.command("list")
def list_nodes(address: str = typer.Option("auto", "--address",
                                           help="the cluster, HOST:PORT (auto: the one here)"),
               json_out: bool = typer.Option(False, "--json", help="print JSON")) -> None:
    """The cluster's nodes: host, state, device tags, CPUs, memory and the published profile."""
    owned = connect(address)  # first: a loopback head is reached only if Ray is not yet imported
    ray = require_ray()
    try:
        nodes = cluster_nodes()
        profiles = published_profiles()
    finally:
        if owned:
            ray.shutdown()
    by_node = {nid: (tag, p) for tag, lst in profiles.items() for nid, p in lst}
    rows = [dict(node_id=n.node_id, host=n.host, address=n.address,
                 state="alive" if n.alive else "dead", devices=n.devices, cpus=n.cpus,
                 memory_bytes=n.memory_bytes, profile=by_node.get(n.node_id, (None, None))[1])
            for n in nodes]
    if json_out:
        print_json(rows)
        return
    t = Table("host", "node", "state", "devices", "CPUs", "memory", "model budget", "bandwidth")
    for r in rows:
        p = r["profile"] or {}
        t.add_row(r["host"], r["node_id"][:12], r["state"], ", ".join(r["devices"]) or "-",
                  f"{r['cpus']:g}", human_bytes(r["memory_bytes"]),
                  human_bytes(p.get("model_budget_bytes")),
                  f"{p['bandwidth_gbps']:.1f} GB/s" if p.get("bandwidth_gbps") else "-")
    console.print(t)


node_app.command("rpc")(rpc_command)


def register(app: typer.Typer) -> None:
    app.add_typer(node_app, name="node")
