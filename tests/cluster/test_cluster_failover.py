"""Node faults on a real multi-node Ray on this machine (ray.cluster_utils.Cluster, every node on
127.0.0.1): the node running a job dies and the job completes on the other node with the same
device tag; a tag that loses its last node mid-run fails its job with the reason, the others
complete, and nothing already stored is lost (issue 19 §5)."""

from __future__ import annotations

import time

import pytest
from parts import need_module

from ray_head import assert_loopback, workers_import_tests  # noqa: I001  (first: Ray on loopback)
from cluster_entries import make_job  # noqa: I001

ray = need_module("ray")

from edgepick.cluster.dispatch import JOB_KIND, job_key, run_jobs  # noqa: E402
from edgepick.cluster.jobs import scoped_key  # noqa: E402
from edgepick.cluster.ray_executor import RayExecutor  # noqa: E402
from edgepick.store import ResultStore  # noqa: E402


@pytest.fixture
def cluster():  # one per test: a node added after another was removed here never got work
    from ray.cluster_utils import Cluster

    with workers_import_tests():  # raylets hand PYTHONPATH to the workers they start
        c = Cluster(initialize_head=True, head_node_args={
            "num_cpus": 1, "resources": {"device:steady": 1}, "include_dashboard": False})
        c.connect(namespace="edgepick")
        try:
            assert_loopback()
            yield c
        finally:
            ray.shutdown()
            c.shutdown()


def _add(cluster, tag: str, n: int) -> list:
    nodes = [cluster.add_node(num_cpus=1, resources={f"device:{tag}": 1}) for _ in range(n)]
    cluster.wait_for_nodes()
    return nodes


def _kill_where_started(cluster, nodes: list, tmp_path, key: str, stop, timeout_s: float = 120):
    """Wait until the job says which node runs it, then take that node down; its id."""
    deadline = time.monotonic() + timeout_s
    while not (started := list(tmp_path.glob(f"{key}.*.started"))):
        if stop.is_set() or time.monotonic() > deadline:
            return None
        time.sleep(0.2)
    node_id = started[0].name.split(".")[1]
    cluster.remove_node(next(n for n in nodes if n.node_id == node_id))
    return node_id


def _store_early(store, tag: str, tmp_path) -> dict:
    """A job of the tag run and stored before the fault; its row."""
    early = make_job("early", tag, "note", tmp_path)
    assert run_jobs([early], store, RayExecutor(poll_s=0.2), lambda j, s: None)[early.id].ok
    return store.get("probe_row", scoped_key("early", tag))


def _run_killing(cluster, nodes, tmp_path, store, jobs, key, **kw):
    import threading

    killed: list[str | None] = []
    stop = threading.Event()
    t = threading.Thread(target=lambda: killed.append(
        _kill_where_started(cluster, nodes, tmp_path, key, stop)))
    t.start()
    try:
        results = run_jobs(jobs, store, RayExecutor(**{"poll_s": 0.2, **kw}), lambda j, s: None)
    finally:
        stop.set()
        t.join(timeout=150)
    assert killed and killed[0], "no node was taken down"
    return results, killed[0]


def test_a_job_whose_node_dies_completes_on_the_other_node_with_its_tag(cluster, tmp_path):
    nodes = _add(cluster, "twin", 2)
    with ResultStore(tmp_path / "r.sqlite") as store:
        before = _store_early(store, "twin", tmp_path)
        victim = make_job("victim", "twin", "on_node", tmp_path, seconds=60)
        results, killed = _run_killing(cluster, nodes, tmp_path, store, [victim], "victim",
                                       max_retries=2, node_timeout_s=30)
        res = results[victim.id]
        assert res.ok, res.error
        ran = store.get("probe_row", scoped_key("victim", "twin"))["node"]
        assert ran != killed and ran in {n.node_id for n in nodes}
        assert len(list(tmp_path.glob("victim.*.started"))) == 2  # two attempts, two nodes
        assert store.get("probe_row", scoped_key("early", "twin")) == before  # nothing lost
        assert store.get(JOB_KIND, job_key(victim, "twin"))["status"] == "ok"


def test_a_tag_losing_its_last_node_mid_run_fails_its_job_with_the_reason(cluster, tmp_path):
    nodes = _add(cluster, "solo", 1)
    with ResultStore(tmp_path / "r.sqlite") as store:
        before = _store_early(store, "solo", tmp_path)
        lost = make_job("lost", "solo", "on_node", tmp_path, seconds=60)
        other = make_job("other", "steady", "note", tmp_path)
        results, _ = _run_killing(cluster, nodes, tmp_path, store, [lost, other], "lost",
                                  max_retries=2, node_timeout_s=2)
        assert results[other.id].ok  # the other device's job completed
        res = results[lost.id]
        assert not res.ok and "no node carries device tag solo any more" in res.error
        failed = store.get(JOB_KIND, job_key(lost, "solo"))
        assert failed["status"] == "failed" and "solo" in failed["error"]
        assert store.get("probe_row", scoped_key("lost", "solo")) is None
        assert store.get("probe_row", scoped_key("early", "solo")) == before
