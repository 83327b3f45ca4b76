"""`probe` and `fit --refresh` beside two busy processes (one per core of this host): the
measurement is contended as bench would flag it, and it is not saved for --device local unless
--allow-contended says so; the first probe fit takes because there was none is kept, with a
warning. A busy neighbour would otherwise sit in every later fit estimate without a word."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.fixture()
def hogs():
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        yield procs
    finally:
        for p in procs:
            p.kill()
            p.wait()


def _saved(home) -> list:
    return list(home.rglob("*.json"))


def test_a_probe_on_a_busy_host_is_refused_unless_allowed(cli, tmp_path, hogs, tiny_model):
    env = {"EDGEPICK_HOME": str(tmp_path)}
    r = cli("probe", env=env)
    assert r.returncode != 0, r.stdout
    assert "busy host" in r.stderr and "other work" in r.stderr and "--allow-contended" in r.stderr
    assert "not saved" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not _saved(tmp_path)
    r = cli("probe", "--allow-contended", env=env)
    assert r.returncode == 0, r.stderr
    assert "busy host" in r.stderr and "kept (--allow-contended)" in " ".join(r.stderr.split())
    assert _saved(tmp_path)
    # asked to measure again: refused as the probe is, and the cached probe stays
    r = cli("fit", "-m", tiny_model, "--device", "local", "--refresh", env=env)
    assert r.returncode != 0 and "busy host" in r.stderr, r.stderr


def test_the_first_probe_fit_takes_is_kept_with_a_warning(cli, tmp_path, hogs, tiny_model):
    r = cli("fit", "-m", tiny_model, "--device", "local", env={"EDGEPICK_HOME": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    assert "busy host" in r.stderr and "fit --refresh measures again" in " ".join(
        r.stderr.split())
