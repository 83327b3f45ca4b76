"""Ray is an extra: without it edgepick imports, `--help` works, and asking for the cluster says
in one line how to install it (run in a subprocess where `import ray` fails)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
HIDE_RAY = ("import sys; sys.modules['ray'] = None\n"  # any `import ray` now raises ImportError
            "from edgepick.cli.app import main\n"
            "main(sys.argv[1:])\n")


def _edgepick(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", HIDE_RAY, *args], capture_output=True,
                          text=True, timeout=300)


def test_import_and_help_work_without_ray():
    code = "import sys; sys.modules['ray'] = None; import edgepick, edgepick.cluster.fleet"
    assert subprocess.run([sys.executable, "-c", code], timeout=120).returncode == 0
    for args in (["--help"], ["node", "--help"], ["run", "--help"]):
        res = _edgepick(*args)
        assert res.returncode == 0, res.stderr
    assert "--executor" in _edgepick("run", "--help").stdout


@pytest.mark.parametrize("args", [["node", "list"],
                                  ["run", str(EXAMPLES / "tiny.yaml"), "--executor", "ray"]])
def test_asking_for_the_cluster_without_ray_is_one_line(args):
    res = _edgepick(*args)
    assert res.returncode == 2
    assert "pip install 'edgepick[ray]'" in res.stderr and "Traceback" not in res.stderr


def test_a_fleet_plan_on_the_local_executor_is_refused_before_any_work(tmp_path):
    plan = tmp_path / "fleet.yaml"
    plan.write_text("devices: [raspberry-pi-5, pi5-lab]\ncandidates: [{model: tiny}]\n"
                    "eval: {enabled: false}\n")
    res = _edgepick("run", str(plan))
    assert res.returncode == 2 and "pi5-lab, raspberry-pi-5" in res.stderr
    assert "--executor ray" in res.stderr and not (tmp_path / "edgepick-out").exists()
