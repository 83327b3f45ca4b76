"""The cluster tests start local Ray clusters. Under pytest-xdist (`make test` runs two workers)
each test here holds one lock file while it runs, so two clusters never start at once. On a
2-core host they would compete for the cores through their start-up and heartbeat timeouts,
and they share Ray's files in the temporary folder and ~/.ray.

xdist's `--dist loadgroup` would keep them on one worker without a lock, but it schedules by
node id. The serve contract test's schemathesis cases share one node id, so all but one of
them would be dropped."""

from __future__ import annotations

import fcntl
import tempfile
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def one_ray_at_a_time():
    with open(Path(tempfile.gettempdir()) / "edgepick-tests-ray.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
