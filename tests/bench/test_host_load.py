"""Host load logic on injected readings: this machine is shared, so nothing here depends on the
host being quiet (the contended case with a real busy process is in test_contended.py)."""

from __future__ import annotations

from edgepick.bench.hostload import (Snapshot, describe, is_contended, load_between,
                                     parse_proc_stat, wait_quiet)

STAT = """cpu  1000 20 300 5000 40 5 6 70 0 0
cpu0 500 10 150 2500 20 2 3 35 0 0
intr 1 2 3
procs_running 3
procs_blocked 0
"""


def snap(t, busy, own, steal=0.0, queue=1, ncpu=2):
    return Snapshot(t=t, busy_s=busy, steal_s=steal, own_s=own, run_queue=queue, ncpu=ncpu)


def test_proc_stat_fields():
    busy, steal, running = parse_proc_stat(STAT)
    assert busy == (1000 + 20 + 300 + 5 + 6) / 100 and steal == 0.7 and running == 3


def test_other_work_is_busy_minus_ours():
    load = load_between(snap(0, 0, 0), snap(10, 15, 10, steal=2, queue=3))
    # 15 CPU-s used, 10 of them ours, over 10 s × 2 CPUs
    assert load["other_cpu_share"] == 0.25 and load["steal_share"] == 0.1
    assert load["run_queue"] == 2.0 and is_contended(load)
    assert not is_contended(load_between(snap(0, 0, 0), snap(10, 12, 10)))
    assert "other work 25% of 2 CPUs" in describe(load)


def test_wait_quiet_returns_once_quiet():
    # busy for two windows, then quiet
    readings = iter([snap(0, 0, 0), snap(1, 2, 0), snap(2, 4, 0), snap(3, 4.1, 0)])
    got = wait_quiet(10, read=lambda: next(readings), pause=lambda: None)
    assert got["quiet"] is True and got["waited_s"] == 3
    assert got["load"]["other_cpu_share"] == 0.05


def test_wait_quiet_gives_up_at_its_bound():
    t = iter(range(100))
    got = wait_quiet(3, read=lambda: snap(next(t), next(t) * 2.0, 0), pause=lambda: None)
    assert got["quiet"] is False and got["waited_s"] >= 3
    assert is_contended(got["load"])


def test_the_description_keeps_its_whole_percents():
    # through units.whole_pct (issue 23 item 5): the text is as it was with the inline :.0%
    load = {"other_cpu_share": 0.125, "steal_share": 0.049, "run_queue": 1.5, "cpus": 4}
    assert describe(load) == "other work 12% of 4 CPUs, steal 5%, run queue 1.5"
