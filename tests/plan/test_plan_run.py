"""`edgepick run` on the example plans: the whole pipeline on the tiny model, then a rerun (and
another scenario) on the same store that measures nothing again."""

from __future__ import annotations

import re
from pathlib import Path

from edgepick.llama_tools import tool_path
from edgepick.plan.loader import load_plan
from edgepick.plan.runner import run_plan
from edgepick.store import ResultStore

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _quantizer() -> bool:
    try:
        return Path(tool_path("llama-quantize")).is_file()
    except Exception:  # noqa: BLE001 - not built: the pipeline must say so, tested below
        return False


def _load(name: str, out: Path):
    lp = load_plan(EXAMPLES / name)
    lp.plan.output = str(out)
    lp.plan.bench.quiet_wait_s = 0  # waiting for a quiet host: tests/bench/test_host_load.py
    return lp


def _created(store_path: Path) -> dict:
    with ResultStore(store_path) as st:
        rows = st._conn.execute("SELECT kind, key, created FROM results WHERE kind != 'decision' "
                                "AND kind != 'eval'").fetchall()
    return {(k, key): c for k, key, c in rows}


def test_example_plans_run_end_to_end_and_resume(tmp_path):
    out = tmp_path / "run"
    res = run_plan(_load("tiny.yaml", out))
    names = [r.candidate for r in res.decision.ranking]
    assert sorted(names) == ["tiny-Q8_0", "tiny-f16"]
    s = {x.candidate: x for x in res.summaries}
    f16 = s["tiny-f16"]
    # every stage wrote through the store and the summary reads it back
    assert f16.decode_tps and f16.ttft_p50_ms and f16.peak_rss_bytes and f16.predicted_peak_bytes
    assert [p.x for p in f16.ttft_curve] == [32.0, 64.0]
    assert f16.tasks and f16.quality_overall is not None and f16.params
    q8 = next(r for r in res.decision.ranking if r.candidate == "tiny-Q8_0")
    if _quantizer():
        assert s["tiny-Q8_0"].decode_tps and s["tiny-Q8_0"].kld_mean is not None
        assert s["tiny-Q8_0"].quant == "Q8_0"
    else:
        assert q8.eliminated and q8.reasons[0].startswith("not measured: build failed")
    if res.decision.recommendation:  # the decision as deploy.yaml, for `edgepick serve`
        from edgepick.records.deploy import DeployConfig

        cfg = DeployConfig.load(res.deploy)
        assert cfg.model.name == res.decision.recommendation and len(cfg.model.sha256) == 64
        assert cfg.status == res.decision.status and cfg.gates
    else:
        assert res.deploy is None
    html = (out / "report" / "report.zh.html").read_text(encoding="utf-8")
    assert "tiny-f16" in html and "<svg" in html
    assert "序贯评估" in html  # evaluated in looks (the default): what it saved, issue 27
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    before = _created(res.store)
    assert any(k == "bench" for k, _ in before)

    # the same candidates under another scenario on the same store: nothing is measured again
    other = run_plan(_load("tiny_extraction.yaml", out))
    assert _created(res.store) == before
    with ResultStore(res.store) as st:
        evals = [p for _, p in st.items("eval")]
    assert all(c["generated"] == 0 for c in evals[-1]["candidates"])
    assert sorted(r.candidate for r in other.decision.ranking) == sorted(names)
    assert other.decision.scenario == "kiosk_extraction"
    assert (out / "report" / "report.en.html").is_file()
