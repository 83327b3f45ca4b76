"""The Ray executor on a local head with two device tags: placement, retries, failures, re-runs,
a missing tag and Ctrl-C. One Ray start for the module (it costs 10-20 s here)."""

from __future__ import annotations

import os
import time

import pytest
from parts import need_module

# first: importing ray_head keeps Ray on loopback
from ray_head import listening_sockets, ray_head, ray_process_ids  # noqa: E402, I001
from cluster_entries import make_job  # noqa: E402, I001

ray = need_module("ray")

from edgepick.cluster.dispatch import JOB_KIND, job_key, run_jobs  # noqa: E402
from edgepick.cluster.executor import LocalExecutor  # noqa: E402
from edgepick.cluster.jobs import Job, scoped_key  # noqa: E402
from edgepick.cluster.nodes import is_loopback  # noqa: E402
from edgepick.errors import EdgepickError  # noqa: E402
from edgepick.store import ResultStore  # noqa: E402


@pytest.fixture(scope="module")
def head():
    with ray_head("a", "b"):
        yield


_job = make_job


def _executor(**kw):
    from edgepick.cluster.ray_executor import RayExecutor

    return RayExecutor(**{"max_retries": 1, "node_timeout_s": 5, "poll_s": 0.2, **kw})


def test_jobs_run_on_their_device_and_come_back_to_the_driver_store(head, tmp_path):
    jobs = [_job("x", "a", "record", tmp_path), _job("y", "b", "record", tmp_path)]
    events = []
    with ResultStore(tmp_path / "r.sqlite") as store:
        results = run_jobs(jobs, store, _executor(), lambda j, s: events.append((j, s)))
        assert all(r.ok for r in results.values())
        assert store.get("probe_row", scoped_key("x", "a"))["devices"] == ["device:a"]
        assert store.get("probe_row", scoped_key("y", "b"))["devices"] == ["device:b"]
        assert store.get("probe_row", "x") is None  # every row lives under its device
        info = store.get(JOB_KIND, job_key(jobs[0], "a"))
        assert info["status"] == "ok" and info["node"] and info["device"] == "a"
        # A re-run finds everything stored and sends nothing.
        again = []
        assert run_jobs(jobs, store, _executor(), lambda j, s: again.append(s)) == {}
    assert again == ["stored", "stored"]
    assert len(list(tmp_path.glob("x.*"))) == 1 and len(list(tmp_path.glob("y.*"))) == 1
    assert {s for _, s in events} >= {"queued", "done"}


def test_every_ray_process_listens_on_loopback_only(head, tmp_path):
    with ResultStore(tmp_path / "r.sqlite") as store:  # a worker runs: its server is up too
        assert run_jobs([_job("w", "a", "record", tmp_path)], store, _executor(),
                        lambda j, s: None)["test/a/w"].ok
    socks = listening_sockets(ray_process_ids())
    names = {name for _, name, _, _ in socks}
    assert {"gcs_server", "raylet"} <= names, socks  # Ray's own servers were found
    assert [s for s in socks if not is_loopback(s[2])] == []


def test_a_killed_job_is_retried_and_a_dead_one_recorded_while_the_others_complete(head, tmp_path):
    jobs = [_job("once", "a", "die_once", tmp_path), _job("never", "b", "die_always", tmp_path),
            _job("fine", "b", "record", tmp_path)]
    with ResultStore(tmp_path / "r.sqlite") as store:
        results = run_jobs(jobs, store, _executor(max_retries=1), lambda j, s: None)
        once, never, fine = (results[j.id] for j in jobs)
        assert once.ok and store.get("probe_row", scoped_key("once", "a")) == {"survived": True}
        assert fine.ok
        assert not never.ok and "max_retries=1" in never.error
        failed = store.get(JOB_KIND, job_key(jobs[1], "b"))
        assert failed["status"] == "failed" and failed["error"] == never.error
        assert store.get("probe_row", scoped_key("never", "b")) is None


def test_a_tag_no_node_carries_is_a_clear_error_naming_the_nodes(head, tmp_path):
    with ResultStore(tmp_path / "r.sqlite") as store:
        with pytest.raises(EdgepickError) as err:
            run_jobs([_job("z", "jetson", "record", tmp_path)], store,
                     _executor(node_timeout_s=1), lambda j, s: None)
    msg = str(err.value)
    assert "jetson" in msg and "a, b" in msg and "edgepick node start" in msg


def test_ctrl_c_cancels_outstanding_tasks_and_keeps_the_store_consistent(head, tmp_path):
    jobs = [_job("long", "a", "sleep", tmp_path, seconds=60),
            _job("later", "a", "sleep", tmp_path, seconds=60)]

    def event(job_id, state):
        if state == "running":
            raise KeyboardInterrupt

    with ResultStore(tmp_path / "r.sqlite") as store:
        with pytest.raises(KeyboardInterrupt):
            run_jobs(jobs, store, _executor(), event)
        time.sleep(2)
        assert store.count() == 0  # nothing half-written
    assert not list(tmp_path.glob("*.finished"))
    assert not (tmp_path / "later.started").exists()  # the queued one never ran
    # The device is free again: a new job on it runs at once.
    with ResultStore(tmp_path / "r2.sqlite") as store:
        res = run_jobs([_job("after", "a", "record", tmp_path)], store, _executor(),
                       lambda j, s: None)
    assert all(r.ok for r in res.values())


def test_the_local_executor_runs_here_and_refuses_other_devices(tmp_path):
    ok = _job("x", None, "note", tmp_path)
    with ResultStore(tmp_path / "r.sqlite") as store:
        res = run_jobs([ok], store, LocalExecutor(), lambda j, s: None)
        assert res[ok.id].ok and store.get("probe_row", "x") == {"here": os.getpid()}
        with pytest.raises(EdgepickError, match="pi5.*--executor ray"):
            run_jobs([_job("p", "pi5", "record", tmp_path)], store, LocalExecutor(),
                     lambda j, s: None)


def test_a_job_no_node_of_its_tag_can_hold_is_refused_at_once(head, tmp_path):
    big = Job(id="big", kind="bench", device="a", candidate="big", entry="cluster_entries:note",
              request={"key": "big", "dir": str(tmp_path)}, keys=(("probe_row", "big"),),
              scopes=("a",), cpus=8)
    with ResultStore(tmp_path / "r.sqlite") as store:
        with pytest.raises(EdgepickError, match="needs 8 CPUs.*device tag a.*offers 2 CPUs"):
            run_jobs([big], store, _executor(), lambda j, s: None)
