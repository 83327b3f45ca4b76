"""`edgepick check` records its run: the fit estimates and the measurement go to the store as
`fit` and `bench` store them, so `decide --store` reads them (issue 14: every command that
measures takes --store and stores what it measured)."""

from __future__ import annotations

import json


def test_check_stores_fit_and_bench_under_one_run_that_decide_reads(cli, tmp_path):
    store, out = str(tmp_path / "s.sqlite"), tmp_path / "check"
    args = ("check", "-m", "tiny", "--ctx", "64", "--out", str(out), "--store", store)
    r = cli(*args)
    assert r.returncode == 0, r.stderr
    assert "written:" in r.stdout and "run 1" in r.stdout
    written = json.loads((out / "check.json").read_text())
    assert written["run"] == 1 and written["measured"]["decode_tps_median"] > 0
    (run,) = json.loads(cli("runs", "--store", store, "--json").stdout)
    assert run["rows"] == {"fit": 1, "bench": 1} and run["command"].startswith("edgepick check")
    d = cli("decide", "--store", store, "--json")
    assert d.returncode == 0, d.stderr
    (s,) = json.loads(d.stdout)["candidates"]
    assert s["predicted_peak_bytes"] and s["fit_verdict"] == "fits"
    assert s["decode_tps"] and s["peak_rss_bytes"]
    again = cli(*args, "--json")  # the stored measurement is reused, and said to be
    assert again.returncode == 0, again.stderr
    assert "measurement reused" in again.stderr
    assert json.loads(again.stdout)["measured"] == written["measured"]
    assert json.loads((out / "check.json").read_text())["run"] == 2
