"""deploy.yaml with a team of edge models (schema 2, issue 38 item 1), and every single-model
deploy.yaml in the repository still loading unchanged and meaning what it meant."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from edgepick.errors import EdgepickError, InputError
from edgepick.records.deploy import DeployConfig

REPO = Path(__file__).resolve().parents[2]
MIB = 1 << 20


def repo_deploy_files() -> list[Path]:
    """Every deploy.yaml fixture in tests, and every deploy.yaml example in docs (a ```yaml block
    with a schema_version, written out as its own file)."""
    found = sorted((REPO / "tests").rglob("deploy*.yaml"))
    assert found, "the single-model fixtures are missing"
    return found


def doc_examples() -> list[tuple[str, str]]:
    out = []
    for page in sorted((REPO / "docs").glob("*.md")):
        for i, block in enumerate(re.findall(r"```yaml\n(.*?)```", page.read_text("utf-8"), re.S)):
            if re.search(r"^schema_version:", block, re.M):
                out.append((f"{page.name}#{i}", block))
    assert out, "docs/deploy.md's example is missing"
    return out


@pytest.mark.parametrize("path", repo_deploy_files(), ids=lambda p: p.name)
def test_every_deploy_fixture_loads_unchanged(path, tmp_path):
    text = path.read_text("utf-8")
    cfg = DeployConfig.load(path)
    raw = yaml.safe_load(text)
    if raw.get("schema_version", 1) == 1:
        _means_what_it_meant(cfg, raw)
        # written again, the file is the same bytes (no team fields appear in it)
        assert cfg.dump(tmp_path / "again.yaml").read_text("utf-8") == text


@pytest.mark.parametrize("name, block", doc_examples(), ids=[n for n, _ in doc_examples()])
def test_every_deploy_example_in_docs_loads(name, block, tmp_path):
    path = tmp_path / "deploy.yaml"
    path.write_text(block, encoding="utf-8")
    cfg = DeployConfig.load(path)
    if cfg.schema_version == 1:
        _means_what_it_meant(cfg, yaml.safe_load(block))
    else:
        assert len(cfg.edge_models()) >= 2 and cfg.memory is not None


def _means_what_it_meant(cfg: DeployConfig, raw: dict) -> None:
    """One model, always resident, every task on the route the file names."""
    (only,) = cfg.edge_models()
    assert not cfg.is_team
    assert only.pin and only.ttl is None and only.runtime is None
    assert (only.name, only.path, only.sha256) == (raw["model"]["name"], raw["model"]["path"],
                                                  raw["model"]["sha256"])
    assert not cfg.cascades and cfg.memory is None
    for r in raw.get("routes", []):
        assert cfg.route_for(r["task"]) == r["route"]
        assert cfg.edge_model(r["route"]) == (None if r["route"] == "cloud" else only)
    assert cfg.route_for("never-seen") == raw.get("default_route", "edge")


def team(**over) -> dict:
    small = {"name": "small", "path": "/m/small.gguf", "sha256": "a" * 64, "pin": True,
             "need_bytes": 300 * MIB}
    medium = {"name": "medium", "path": "/m/medium.gguf", "sha256": "b" * 64, "ttl": 120,
              "need_bytes": 500 * MIB, "runtime": {"threads": 2, "n_ctx": 4096}}
    tiny = {"name": "tiny", "path": "/m/tiny.gguf", "sha256": "c" * 64, "need_bytes": 200 * MIB}
    data = {"schema_version": 2, "status": "team",
            "model": {k: small[k] for k in ("name", "path", "sha256")},
            "models": [small, medium, tiny],
            "routes": [{"task": "chat", "route": "small"}, {"task": "math", "route": "medium"},
                       {"task": "extraction", "route": "cloud"}],
            "cascades": [{"tasks": ["qa"], "steps": [{"to": "tiny", "threshold": 0.7},
                                                     {"to": "medium", "threshold": 0.5},
                                                     {"to": "cloud"}]}],
            "memory": {"budget_bytes": 1024 * MIB}}
    data.update(over)
    return data


def write(tmp_path, data) -> Path:
    path = tmp_path / "deploy.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def test_a_team_loads_with_routes_cascades_and_its_memory_plan(tmp_path):
    cfg = DeployConfig.load(write(tmp_path, team()))
    assert [m.name for m in cfg.edge_models()] == ["small", "medium", "tiny"]
    assert cfg.is_team
    assert cfg.route_for("chat") == "small" and cfg.route_for("math") == "medium"
    assert cfg.edge_model(cfg.route_for("math")).runtime.n_ctx == 4096
    assert cfg.edge_model("edge").name == "small" and cfg.edge_model("cloud") is None
    steps = cfg.cascade_for("qa").steps
    assert [s.to for s in steps] == ["tiny", "medium", "cloud"] and steps[0].threshold == 0.7
    assert cfg.cascade_for("chat") is None  # routed on its own
    fit = cfg.check_memory()
    # pinned small 300 + the largest on-demand (medium 500) = 800 MiB within 1024
    assert fit.total == 800 * MIB and fit.fits and fit.largest_on_demand == ("medium", 500 * MIB)
    again = DeployConfig.load(cfg.dump(tmp_path / "out.yaml"))
    assert again == cfg


def test_a_memory_plan_over_the_budget_is_refused_in_one_line(tmp_path):
    path = write(tmp_path, team(memory={"budget_bytes": 700 * MIB}))
    with pytest.raises(InputError) as e:
        DeployConfig.load(path)
    msg = str(e.value)
    assert "\n" not in msg and str(path) in msg and "pinned small" in msg
    assert "largest on-demand medium" in msg and "exceeds the budget 700" in msg
    cfg = DeployConfig.load(write(tmp_path, team()))
    with pytest.raises(EdgepickError, match="memory plan: .* exceeds the budget 600"):
        cfg.check_memory(600 * MIB)  # serve's own measured budget at start
    assert cfg.check_memory(900 * MIB).fits


@pytest.mark.parametrize("change, expected", [
    ({"schema_version": 1}, "models, cascades, memory need schema_version 2"),
    ({"schema_version": 3}, "schema_version 3 is not supported"),
    ({"routes": [{"task": "chat", "route": "large"}]}, "route to 'large'"),
    ({"model": {"name": "other", "path": "/m/o.gguf", "sha256": "d" * 64}},
     "'other' (the default) is not one of models"),
    ({"routes": [{"task": "qa", "route": "small"}]}, "its cascade starts at tiny"),
    ({"cascades": [{"tasks": ["qa"], "steps": [{"to": "tiny"}, {"to": "cloud"}]}]},
     "every cascade step but the last needs its threshold"),
    ({"cascades": [{"steps": [{"to": "cloud", "threshold": 0.5}, {"to": "tiny"}]}]},
     "the cloud can only be a cascade's last step"),
])
def test_a_bad_team_says_what_in_one_line(tmp_path, change, expected):
    path = write(tmp_path, team(**change))
    with pytest.raises(InputError) as e:
        DeployConfig.load(path)
    assert expected in str(e.value) and str(path) in str(e.value) and "\n" not in str(e.value)


def test_pin_and_ttl_exclude_each_other(tmp_path):
    data = team()
    data["models"][0]["ttl"] = 60
    with pytest.raises(InputError, match="pin .* and ttl .* exclude each other"):
        DeployConfig.load(write(tmp_path, data))


def test_serve_reads_every_member_of_a_team_file(tmp_path):
    """serve runs a team (issue 38 item 2, tests/serve/test_serve_team.py): every member's file
    is verified, the default model first, each with its own runtime, pin, ttl and need; a
    member whose file is missing is refused naming it."""
    from edgepick.registry.store import sha256_of
    from edgepick.serve.assemble import from_deploy

    data = team()
    for i, m in enumerate(data["models"]):
        f = tmp_path / f"{m['name']}.gguf"
        f.write_bytes(b"GGUF" + bytes([i]) * 16)
        m["path"], m["sha256"] = f.name, sha256_of(f)
    data["model"] = {k: data["models"][0][k] for k in ("name", "path", "sha256")}
    source = from_deploy(write(tmp_path, data), {"threads": 1})
    members = source.team
    assert [m.spec.name for m in members] == ["small", "medium", "tiny"]
    assert [(m.pin, m.ttl, m.need) for m in members] == [
        (True, None, 300 * MIB), (False, 120, 500 * MIB), (False, None, 200 * MIB)]
    assert members[1].spec.runtime.n_ctx == 4096 and members[1].spec.runtime.threads == 1
    assert members[0].spec.path == str(tmp_path / "small.gguf")
    (tmp_path / "medium.gguf").unlink()
    with pytest.raises(InputError) as exc:
        from_deploy(write(tmp_path, data), {})
    assert exc.value.field == "models[1].path" and "does not exist" in str(exc.value)
    assert "\n" not in str(exc.value)
