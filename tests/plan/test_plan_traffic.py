"""Re-selection inputs without running anything: the traffic alone or mixed with the plan's own
sets at the stated weight, what changed between two deploys, and a new name beside the old one."""

from __future__ import annotations

import json

import pytest

from edgepick.errors import EdgepickError
from edgepick.plan.loader import load_plan
from edgepick.plan.traffic import beside, changes, with_traffic
from edgepick.records.deploy import DeployConfig, DeployModel, TaskRoute

PLAN = """name: t
device: raspberry-pi-5
output: out
candidates:
  - model: tiny
eval:
  data: demo
  reference: tiny
  limit: 12
"""


def _traffic(tmp_path, n: int, with_reference: int) -> str:
    path = tmp_path / "traffic.jsonl"
    rows = [{"id": f"traffic-{i}", "task": "generation",
             "messages": [{"role": "user", "content": f"q{i}"}],
             "reference": "an answer" if i < with_reference else None} for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_traffic_alone_and_mixed_at_a_weight(tmp_path):
    (tmp_path / "plan.yaml").write_text(PLAN)
    lp = load_plan(tmp_path / "plan.yaml")
    traffic = _traffic(tmp_path, 10, 8)
    alone, mix = with_traffic(lp, traffic, None, tmp_path / "re")
    assert alone.plan.eval.data == [{"set": str(traffic)}] and mix.traffic_items == 10
    assert any("2 sampled item(s) without a reference count for unacceptable rate, format "
               "compliance, output length, not for score" in n for n in mix.notes)
    assert alone.store_path == lp.store_path and alone.output == tmp_path / "re"
    assert lp.plan.eval.data == "demo"  # the plan itself is left as it was

    half, mix = with_traffic(lp, traffic, 0.5, tmp_path / "re")
    assert mix.traffic_items == 10 and mix.original_items == 10  # 12 demo items cut to keep 50%
    assert half.plan.eval.data[-1] == {"set": str(traffic), "limit": 10}
    small, mix = with_traffic(lp, traffic, 0.2, tmp_path / "re")
    assert mix.original_items == 12 and mix.traffic_items == 3  # enough traffic: cut to 20%
    with pytest.raises(EdgepickError, match="share"):
        with_traffic(lp, traffic, 1.5, tmp_path / "re")
    with pytest.raises(EdgepickError, match="no sampled item has a reference"):
        with_traffic(lp, _traffic(tmp_path, 3, 0), None, tmp_path / "re")


def test_reference_free_traffic_is_used_mixed_with_the_plans_sets(tmp_path):
    """Sampled without a cloud (reference: null): mixed with the plan's own sets, the items are
    kept for the reference-free figures, not dropped, and the note says which figures."""
    (tmp_path / "plan.yaml").write_text(PLAN)
    lp = load_plan(tmp_path / "plan.yaml")
    traffic = _traffic(tmp_path, 4, 0)
    mixed, mix = with_traffic(lp, traffic, 0.25, tmp_path / "re")
    assert mix.traffic_items == 4 and mix.original_items == 12
    assert mixed.plan.eval.data[-1] == {"set": str(traffic), "limit": 4}
    assert any("4 sampled item(s) without a reference" in n and "badcases per 1000" in n
               for n in mix.notes)
    assert not any("left out" in n for n in mix.notes)


def test_changes_name_what_moved(tmp_path):
    old = DeployConfig(model=DeployModel(name="a", path="/a", sha256="1" * 64, quant="Q4_0"),
                       routes=[TaskRoute(task="qa", route="edge")])
    same = old.model_copy(deep=True)
    assert changes(old, same) == ["nothing: the traffic confirms the deployed choice"]
    new = old.model_copy(deep=True)
    new.model = DeployModel(name="b", path="/b", sha256="2" * 64, quant="Q8_0")
    new.routes = [TaskRoute(task="qa", route="cloud")]
    new.runtime.n_ctx = 4096
    got = changes(old, new)
    assert "model: a (Q4_0) → b (Q8_0)" in got and "route qa: edge → cloud" in got
    assert any(c.startswith("runtime.n_ctx:") for c in got)
    deployed = tmp_path / "deploy.yaml"
    deployed.write_text("x")
    first = beside(deployed)
    first.write_text("y")
    second = beside(deployed)
    assert first.parent == deployed.parent and first.name.startswith("deploy-")
    assert second != first and not second.exists()
