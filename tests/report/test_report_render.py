"""The report: self-contained HTML with every chart inline, Markdown, both languages, exports."""

from __future__ import annotations

import csv
import json
import re

from decide_payloads import filled_store


def _write(store_path, out, cli, *extra):
    filled_store(store_path).close()
    p = cli("report", "--store", store_path, "--out", str(out), "--scenario", "realtime_chat",
            "--device", "raspberry-pi-5", *extra)
    assert p.returncode == 0, p.stderr
    return p


def test_html_is_self_contained_with_inline_svg_charts(store_path, tmp_path, cli):
    out = tmp_path / "rep"
    _write(store_path, out, cli)
    for lang in ("en", "zh"):
        html = (out / f"report.{lang}.html").read_text(encoding="utf-8")
        # nothing fetched from outside the file: no src/href to a URL, no scripts, no @import
        assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", html, re.I)
        assert "<script" not in html.lower() and "@import" not in html and "<link" not in html
        # every chart whose data is stored is inline SVG
        for name in ("pareto", "ttft_vs_length", "sustained", "task_quality"):
            m = re.search(rf"id='chart-{name}'>(.*?)</div>", html, re.S)
            assert m and m.group(1).lstrip().startswith("<svg"), name
        # predicted figures were not stored: said so, not drawn from invented numbers
        assert "chart-predicted_vs_measured" not in html
    zh = (out / "report.zh.html").read_text(encoding="utf-8")
    assert "实测对比记录模板" in zh and "未测量" in zh and "首token延迟(P50)" in zh
    # the explanation itself is in Chinese, with the seed's fallback for extraction
    assert "extraction：每1000次请求badcase 600 对 500（逐条计数）—— smol-q4_0 多 100 个" in zh
    assert "加 JSON 修复兜底" in zh
    en = (out / "report.en.html").read_text(encoding="utf-8")
    assert "Record template (seed 000 §7.3)" in en and "smol-q4_0" in en


def test_record_template_and_exports(store_path, tmp_path, cli):
    out = tmp_path / "rep"
    _write(store_path, out, cli, "--lang", "en")
    assert not (out / "report.zh.html").exists()
    md = (out / "report.en.md").read_text(encoding="utf-8")
    assert "| Metric | smol-q4_0 | smol-q8_0 |" in md
    assert "| TTFT (P50) | 90 ms | 140 ms |" in md
    assert "| Sustained decay | 8.0% | 8.0% |" in md
    assert "![Pareto front" in md and (out / "charts" / "pareto.svg").is_file()
    with open(out / "data" / "ttft_vs_length.csv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert {(r["candidate"], float(r["prompt_tokens"])) for r in rows} == {
        ("smol-q4_0", 128.0), ("smol-q4_0", 512.0), ("smol-q8_0", 128.0), ("smol-q8_0", 512.0)}
    tasks = json.loads((out / "data" / "task_quality.json").read_text())
    ext = next(r for r in tasks if r["candidate"] == "smol-q4_0" and r["task"] == "extraction")
    # payloads stored without a score interval draw no error bar rather than score ± gap
    assert ext["ci_low"] is None and ext["ci_high"] is None
    decision = json.loads((out / "data" / "decision.json").read_text())
    assert decision["recommendation"] == "smol-q4_0"
    for name in ("pareto", "sustained", "record_template", "badcases"):
        assert (out / "data" / f"{name}.csv").is_file() and (out / "data" / f"{name}.json").is_file()


def test_bad_lang_is_one_line_error(store_path, tmp_path, cli):
    filled_store(store_path).close()
    p = cli("report", "--store", store_path, "--out", str(tmp_path / "r"), "--lang", "fr")
    assert p.returncode == 2 and "--lang must be en, zh or both" in p.stderr


def test_score_error_bars_stay_within_the_score_range():
    from edgepick.records.decision import CandidateSummary, TaskQuality
    from edgepick.report.charts import task_chart, task_data

    # a gap interval far wider than the score's own: the bar must not leave [0, 100%]
    s = CandidateSummary(candidate="c", model="/m/c.gguf", tasks={
        "qa": TaskQuality(n=20, score=0.95, ref_score=0.2, ci95=[-0.9, -0.6],
                          score_ci95=[0.85, 1.0]),
        "math": TaskQuality(n=20, score=0.05, ref_score=0.9, ci95=[0.6, 1.1],
                            score_ci95=[0.0, 0.15])})
    rows = task_data([s])
    for r in rows:
        assert 0.0 <= r["ci_low"] <= r["score"] <= r["ci_high"] <= 1.0
    assert task_chart(rows).startswith("<svg")


def test_gates_table_shows_intervals_and_verdicts(store_path, tmp_path, cli):
    out = tmp_path / "rep"
    _write(store_path, out, cli, "--lang", "en")
    md = (out / "report.en.md").read_text(encoding="utf-8")
    assert "| Candidate | Constraint | Value [95% interval] | Limit | Verdict | More items to settle |" in md
    assert "| smol-q4_0 | unacceptable-output rate | 1.0% [0.1%, 4.6%] | ≤ 5.0% | pass |" in md
    assert "**Recommendation:** smol-q4_0 (" in md
