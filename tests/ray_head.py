"""A local Ray for the cluster tests: on 127.0.0.1 only (Ray's single-machine mode, fixed when Ray
is first imported, so test modules import this before Ray), given device tags, dashboard off,
usage stats off, tests/ importable by its workers; stopped when the block ends."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from edgepick.cluster.nodes import is_loopback, use_loopback

TESTS = str(Path(__file__).resolve().parent)

use_loopback()
os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
os.environ.setdefault("RAY_AUTH_MODE", "token")  # as every edgepick process speaks to Ray


@contextmanager
def workers_import_tests() -> Iterator[None]:
    """Workers started inside the block import the tests' entry points (cluster_entries)."""
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = TESTS + (os.pathsep + old if old else "")
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


def assert_loopback() -> None:
    import ray

    ip = ray.util.get_node_ip_address()
    assert is_loopback(ip), f"Ray's node is at {ip}: Ray was imported before tests/ray_head.py"


@contextmanager
def ray_head(*devices: str, cpus: int = 2) -> Iterator[None]:
    import ray

    with workers_import_tests():
        ray.init(address="local", num_cpus=cpus, resources={f"device:{d}": 1 for d in devices},
                 include_dashboard=False, namespace="edgepick", log_to_driver=False,
                 _node_ip_address="127.0.0.1")
        try:
            assert_loopback()
            yield
        finally:
            ray.shutdown()


def listening_sockets(pids: set[int]) -> list[tuple[int, str, str, int]]:
    """(pid, process name, ip, port) of every TCP socket these processes listen on."""
    import psutil

    out = []
    for pid in pids:
        try:
            proc = psutil.Process(pid)
            conns = proc.net_connections("tcp")
            name = proc.name()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        out += [(pid, name, c.laddr.ip, c.laddr.port) for c in conns
                if c.status == psutil.CONN_LISTEN]
    return out


def ray_process_ids(root: int | None = None) -> set[int]:
    """A process (this one by default) and the Ray processes it started: servers, agents and
    workers."""
    import psutil

    me = psutil.Process(root)
    out = {me.pid}
    for p in me.children(recursive=True):
        try:
            if "ray" in " ".join(p.cmdline()):
                out.add(p.pid)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return out
