"""A plan whose candidate is a GGUF on a server: the first run reads its header and pins it
beside the output; a later run of the plan, with the server gone, the cache emptied and the
network refused, estimates the same figures under the same identity."""

from __future__ import annotations

import shutil
from pathlib import Path

from remote_hub import file_server

from edgepick.plan import runner
from edgepick.plan.loader import load_plan
from edgepick.store import ResultStore

PLAN = """\
name: remote
device: raspberry-pi-5
output: out
candidates:
  - model: {url}
scenario:
  name: realtime_chat
bench: {{enabled: false}}
eval: {{enabled: false}}
fidelity: {{enabled: false}}
"""


def _fit_rows(path: Path) -> list[tuple[dict, list[int]]]:
    store = ResultStore(path)
    try:
        return [(payload, runs) for _, payload, runs in store.rows_with_runs("fit")]
    finally:
        store.close()


def test_remote_candidate_runs_offline_after_its_first_resolution(tmp_path, monkeypatch,
                                                                  smollm2_q4_1):
    monkeypatch.setenv("EDGEPICK_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("EDGEPICK_OFFLINE", raising=False)
    src = Path(smollm2_q4_1)
    plan = tmp_path / "plan.yaml"
    with file_server({src.name: src}) as srv:
        url = f"{srv.url}/{src.name}"
        plan.write_text(PLAN.format(url=url))
        first = runner.run_plan(load_plan(plan))
        requests = len(srv.seen)
    assert requests >= 1 and all(s.status == 206 for s in srv.seen)
    assert any("only its header was read" in n for n in first.notes)
    (summary,) = first.summaries
    assert summary.predicted_peak_bytes and summary.fit_verdict == "fits"
    shutil.rmtree(tmp_path / "cache")  # the header cache is gone, and so is the server
    monkeypatch.setenv("EDGEPICK_OFFLINE", "1")
    again = runner.run_plan(load_plan(plan))
    (summary2,) = again.summaries
    assert summary2.predicted_peak_bytes == summary.predicted_peak_bytes
    assert summary2.predicted_decode_tps == summary.predicted_decode_tps
    (row, runs), = _fit_rows(tmp_path / "out" / "results.sqlite")
    assert len(runs) == 2  # the same estimate under the same key, linked to both runs
    assert row["model"] == url and row["source"] == url and row["remote"].startswith("remote:")
