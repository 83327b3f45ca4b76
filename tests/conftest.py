"""Shared fixtures: real models from installed packages, cut small where speed matters."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# Tests live in one folder per stage (tests/<stage>/); the shared helpers stay here, importable
# by every folder and by Ray workers (tests/ray_head.py puts this folder on their PYTHONPATH).
sys.path.insert(0, str(Path(__file__).resolve().parent))

from cli_runner import run_cli, run_process  # noqa: E402 - found through the line above


def pytest_configure(config):
    # xdist's grouping modes schedule by node id, and the 13 schemathesis cases of
    # tests/serve/test_serve_contract.py share one: all but one would not run, without a word
    dist = getattr(config.option, "dist", "no")
    if dist in ("loadscope", "loadfile", "loadgroup"):
        raise pytest.UsageError(f"--dist {dist} would skip test cases that share a node id; "
                                "use xdist's default (load), as `make test` does "
                                "(docs/development.md)")


@pytest.fixture(scope="session")
def tiny_model() -> str:
    """SmolLM2 cut to 2 blocks, F16: loads and runs in milliseconds."""
    from edgepick.assets.bundled import tiny_f16

    return str(tiny_f16())


@pytest.fixture(scope="session")
def smollm2_q4_1() -> str:
    from edgepick.assets.bundled import smollm2_q4_1

    return str(smollm2_q4_1())


@pytest.fixture(scope="session")
def smollm2_f16() -> str:
    from edgepick.assets.bundled import smollm2_f16

    return str(smollm2_f16())


@pytest.fixture(scope="session")
def gemma3_q4_k_m() -> str:
    from edgepick.assets.bundled import gemma3_270m_q4_k_m

    return str(gemma3_270m_q4_k_m())


@pytest.fixture(scope="session", autouse=True)
def edgepick_home(tmp_path_factory) -> Path:
    """Commands run without --store write to $EDGEPICK_HOME: a temporary one, never the user's."""
    home = tmp_path_factory.mktemp("edgepick-home")
    os.environ["EDGEPICK_HOME"] = str(home)
    return home


@pytest.fixture(scope="session", autouse=True)
def short_quiet_window():
    """bench reads the host's load over one window before each configuration it measures: 0.5 s,
    paid by every configuration the suite runs in this process (plans, bench, eval runs).
    A tenth of a second still spans ten scheduler ticks per CPU, enough for the contended test's
    busy neighbours to read well over the limit; no test checks the window's length (the waiting
    logic is tested on injected readings, tests/bench/test_host_load.py)."""
    from edgepick.bench import session

    before, session.QUIET_WINDOW_S = session.QUIET_WINDOW_S, 0.1
    yield
    session.QUIET_WINDOW_S = before


@pytest.fixture
def store_path(tmp_path: Path) -> str:
    return str(tmp_path / "results.sqlite")


@pytest.fixture
def cli(request):
    # serve's tests start, kill and watch servers and engines around their calls: a process each
    if request.path.parent.name == "serve":
        return run_process
    return run_cli
