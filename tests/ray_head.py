"""A local Ray head for the cluster tests: given device tags, dashboard off, usage stats off,
tests/ importable by its workers; stopped when the block ends."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

TESTS = str(Path(__file__).resolve().parent)


@contextmanager
def ray_head(*devices: str, cpus: int = 2) -> Iterator[None]:
    import ray

    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = TESTS + (os.pathsep + old if old else "")
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    ray.init(address="local", num_cpus=cpus, resources={f"device:{d}": 1 for d in devices},
             include_dashboard=False, namespace="edgepick", log_to_driver=False,
             _node_ip_address="127.0.0.1")
    try:
        yield
    finally:
        ray.shutdown()
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old
