"""Entry points for the cluster tests' jobs: importable by Ray workers (tests/ on PYTHONPATH)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path


def record(req: dict, store) -> dict:
    """Store one row saying which device resource the task was given, and count the call."""
    import ray

    Path(req["dir"], f"{req['key']}.{os.getpid()}.{time.time_ns()}").touch()
    got = ray.get_runtime_context().get_assigned_resources()
    store.put("probe_row", req["key"], {"devices": sorted(k for k in got if k.startswith("device:")),
                                        "pid": os.getpid()})
    return {"pid": os.getpid()}


def die_once(req: dict, store) -> None:
    """Kill the worker process on the first attempt (as a node dying would), succeed after."""
    marker = Path(req["dir"], f"{req['key']}.attempted")
    if not marker.exists():
        marker.touch()
        os.kill(os.getpid(), signal.SIGKILL)
    store.put("probe_row", req["key"], {"survived": True})


def die_always(req: dict, store) -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def sleep(req: dict, store) -> None:
    Path(req["dir"], f"{req['key']}.started").touch()
    time.sleep(req["seconds"])
    Path(req["dir"], f"{req['key']}.finished").touch()
    store.put("probe_row", req["key"], {"slept": req["seconds"]})


def note(req: dict, store) -> None:
    store.put("probe_row", req["key"], {"here": os.getpid()})


def on_node(req: dict, store) -> None:
    """Say which Ray node runs it (a file named after the node), stay there a while on the first
    attempt so the test can take that node down, then store the node's id."""
    import ray

    node = ray.get_runtime_context().get_node_id()
    first = not list(Path(req["dir"]).glob(f"{req['key']}.*.started"))
    Path(req["dir"], f"{req['key']}.{node}.started").touch()
    time.sleep(req["seconds"] if first else 0.2)
    store.put("probe_row", req["key"], {"node": node})


def make_job(name: str, device: str | None, entry: str, tmp: Path, **req):
    """A one-row job calling one of these entry points on `device`."""
    from edgepick.cluster.jobs import Job

    return Job(id=f"test/{device}/{name}", kind="bench", device=device, candidate=name,
               entry=f"cluster_entries:{entry}", request=dict(req, key=name, dir=str(tmp)),
               keys=(("probe_row", name),), scopes=(device,), cpus=1)
