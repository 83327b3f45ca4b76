"""`edgepick route eval` end to end: an in-process edge and a cloud served over HTTP by
llama-server, the curve's ends, calibration, reuse of stored outputs, the report section."""

from __future__ import annotations

import json

from llama_server import llama_server


def test_route_eval_curve_ends_calibration_and_reuse(tiny_model, tmp_path, cli):
    store = str(tmp_path / "r.sqlite")
    with llama_server(tiny_model, "cloud", tmp_path) as cloud:
        args = ["route", "eval", "--edge", "tiny", "--cloud", cloud, "--limit", "6", "--store",
                store, "--threads", "1", "--target-share", "0.5", "--json"]
        r = cli(*args, "--out", str(tmp_path / "out"))
        assert r.returncode == 0, r.stderr
        res = json.loads(r.stdout)
        again = json.loads(cli(*args).stdout)
    items = res["items"]
    assert res["n_items"] == len(items) == 6
    assert all(it["edge_output"] is not None and it["cloud_output"] is not None for it in items)
    assert all(it["edge_confidence"] is None or 0 < it["edge_confidence"] <= 1 for it in items)
    curve = res["curve"]
    assert [p["cloud_share"] for p in (curve[0], curve[-1])] == [0.0, 1.0]
    edge_only = sum(it["edge_score"] for it in items) / 6
    cloud_only = sum(it["cloud_score"] for it in items) / 6
    assert abs(curve[0]["quality"] - edge_only) < 1e-12
    assert abs(curve[-1]["quality"] - cloud_only) < 1e-12
    cal = res["calibration"]
    assert cal["target"] == "share" and cal["cloud_share"] == 0.5
    assert {c["other"] for c in res["comparisons"]} == {"random", "by_task"}
    assert 0.5 in {c["cloud_share"] for c in res["comparisons"]}
    assert res["consistency"]["n"] == 6
    # The second run reads every output back from the store and agrees with the first.
    assert again["generated"] == {k: 0 for k in res["generated"]}
    assert again["curve"] == curve
    out = tmp_path / "out"
    assert (out / "route.en.html").is_file() and (out / "charts" / "route_curve.svg").is_file()
    assert "<svg" in (out / "route.en.html").read_text()


def test_route_section_joins_the_main_report(tmp_path):
    from edgepick.report.route_section import append_to_report
    from edgepick.route.route_eval import RouteEvalResult
    from edgepick.route.path_agreement import consistency
    from edgepick.route.curve import cascade_curve, comparisons
    from edgepick.route.confidence import ConfidenceSettings

    edge, cloud, conf = [1, 0, 1, 0], [1, 1, 1, 0], [0.9, 0.1, 0.8, 0.4]
    res = RouteEvalResult(data="d", n_items=4, edge="e", cloud="c", confidence=ConfidenceSettings(),
                          edge_only=0.5, cloud_only=0.75, curve=cascade_curve(edge, cloud, conf),
                          gap_recovered=None,
                          comparisons=comparisons(edge, cloud, conf, ["a"] * 4, [0.5], 200),
                          consistency=consistency([], [], []), items=[], generated={}, key="k")
    for lg in ("en", "zh"):
        (tmp_path / f"report.{lg}.md").write_text("# Report\n")
        (tmp_path / f"report.{lg}.html").write_text("<html><body><h1>R</h1></body></html>")
    append_to_report(tmp_path, res, ["en", "zh"])
    assert "## Edge–cloud routing" in (tmp_path / "report.en.md").read_text()
    assert "## 端云路由" in (tmp_path / "report.zh.md").read_text()
    html = (tmp_path / "report.en.html").read_text()
    assert html.index("Edge–cloud routing") < html.index("</body>") and "<svg" in html
    assert json.loads((tmp_path / "data" / "route_eval.json").read_text())["key"] == "k"


def test_route_eval_bad_input_is_one_line(cli, tmp_path):
    r = cli("route", "eval", "--edge", "tiny", "--cloud", "tiny", "--target-share", "0.2",
            "--target-quality", "0.5")
    assert r.returncode == 2 and "not both" in r.stderr and "Traceback" not in r.stderr
    r = cli("route", "eval", "--edge", "nosuch.gguf", "--cloud", "tiny")
    assert r.returncode == 2 and "nosuch.gguf" in r.stderr and "Traceback" not in r.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a"}\n')
    r = cli("route", "eval", "--edge", "tiny", "--cloud", "tiny", "--data", str(bad))
    assert r.returncode == 2 and "no valid items" in r.stderr and "Traceback" not in r.stderr


def test_report_carries_the_routing_section(tmp_path, cli):
    store, out = str(tmp_path / "s.sqlite"), tmp_path / "report"
    common = ["--limit", "3", "--store", store, "--threads", "1"]
    assert cli("eval", "-m", "tiny", "-r", "tiny", *common, "--json").returncode == 0
    assert cli("route", "eval", "--edge", "tiny", "--cloud", "tiny", *common).returncode == 0
    r = cli("report", "--store", store, "--out", str(out), "--lang", "both")
    assert r.returncode == 0, r.stderr
    assert "## Edge–cloud routing" in (out / "report.en.md").read_text()
    assert "端云路由" in (out / "report.zh.html").read_text()
    assert (out / "charts" / "route_curve.svg").is_file()


def test_a_cascade_over_three_tiers_is_calibrated_held_out_and_drawn(
        smollm2_q4_1, tiny_model, tmp_path, cli):
    """SmolLM2 → a second edge model (SmolLM2 cut to 3 blocks) → a stand-in cloud on another
    port: each step's threshold from half the items, the other half judged against random
    assignment at the same shares, and the curve in the report. Short-answer items, so the
    three models answer in seconds. The second tier's quality is not the point (the checks read
    the cascade's bookkeeping), so it is the cut model, not Gemma-3-270M, whose load and
    decoding were a third of this test."""
    from edgepick.assets.bundled import tiny_f16
    from edgepick.evaluate.eval_sets import bundled_set_path

    lines = [x for x in open(bundled_set_path("demo"), encoding="utf-8")
             if json.loads(x)["task"] in ("classification", "yes_no")][:8]
    data = tmp_path / "short.jsonl"
    data.write_text("".join(lines), encoding="utf-8")
    store, out = str(tmp_path / "r.sqlite"), tmp_path / "out"
    with llama_server(tiny_model, "cloud", tmp_path) as cloud:
        args = ["route", "eval", "-e", smollm2_q4_1, "-e", str(tiny_f16(n_blocks=3)), "-c", cloud,
                "-d", str(data), "--store", store, "--threads", "2", "--ctx", "1024",
                "--target-share", "0.3", "--shares", "0.3", "--router-model", smollm2_q4_1,
                "--json"]
        r = cli(*args, "--out", str(out))
        again = cli(*args)
    assert r.returncode == 0, r.stderr
    tr = json.loads(r.stdout)["tiered"]
    rm = json.loads(r.stdout)["router_model"]  # SmolLM2 asked each request's task type
    tasks = [json.loads(x)["task"] for x in lines]
    common = max(sorted(set(tasks)), key=tasks.count)
    assert rm["n"] == 8 and {t: n for t, (_, n) in rm["per_task"].items()} == \
        {t: tasks.count(t) for t in set(tasks)}
    assert rm["ci95"][0] <= rm["accuracy"] <= rm["ci95"][1]
    assert rm["majority"] == tasks.count(common) / 8 and rm["majority_task"] == common
    assert len(tr["models"]) == 3 and tr["models"][-1] == "cloud"
    assert tr["calibration_items"] + tr["held_out_items"] == 8
    c = tr["calibrated"]
    assert len(c["thresholds"]) == 2 and abs(sum(c["shares"]) - 1) < 1e-9
    # random at the cascade's own shares, from each tier's quality on the held-out half
    assert c["verdict"] in ("cascade better", "cascade worse", "undetermined")
    assert c["ci95"][0] <= c["diff"] <= c["ci95"][1]
    front = tr["front"]
    assert front[0]["shares"][-1] == 0.0 and front[-1]["shares"][-1] == 1.0
    assert abs(front[-1]["quality"] - tr["tier_only"][-1]) < 1e-9  # all cloud: the cloud's
    assert (out / "charts" / "route_tiers.svg").is_file()
    html = (out / "route.en.html").read_text()
    assert "Cascade over tiers" in html and "chart-route-tiers" in html
    # every tier's outputs are stored: a second run generates nothing and agrees
    res2 = json.loads(again.stdout)
    assert set(res2["generated"].values()) == {0} and len(res2["generated"]) == 3  # router: tier 1's
    assert res2["tiered"] == tr
