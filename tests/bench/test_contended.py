"""A bench run beside a CPU-bound process (started here, bounded, killed after) is marked
contended; the logic itself is tested on injected readings in test_host_load.py."""

from __future__ import annotations

import subprocess
import sys

import pytest

from edgepick.bench.runner import measure_config
from edgepick.bench.sweeps import BenchRequest, expand
from edgepick.inputs import resolve_ref

BUSY = "import time\nend = time.monotonic() + 120\nwhile time.monotonic() < end:\n    pass\n"


@pytest.fixture
def busy_neighbours():
    procs = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(2)]
    yield procs
    for p in procs:
        p.kill()
        p.wait()


def bench_beside_load(tiny_model):
    req = BenchRequest(models=[resolve_ref(tiny_model)], prompt_lengths=[32], gen_tokens=32,
                       warmup=1, repeats=3, threads=[1])
    return measure_config(expand(req)[0], req)


def test_run_beside_a_busy_process_is_contended(tiny_model, busy_neighbours):
    res = bench_beside_load(tiny_model)
    assert res.status == "ok", res.error
    assert res.contended, res.host_load
    # two busy processes on this host's CPUs: well over the quarter that marks contention
    assert res.host_load.other_cpu_share > res.host_load.contended_share
    assert res.host_load.before.other_cpu_share > res.host_load.contended_share
