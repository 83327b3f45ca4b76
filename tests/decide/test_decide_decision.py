"""The decision: a pure function whose ranking follows the scenario, with its reasons."""

from __future__ import annotations

import json

from decide_payloads import filled_store

from edgepick.decide.decision import decide
from edgepick.decide.scenarios import load_scenario
from edgepick.decide.summary import build_summaries


def _summaries(path, **kw):
    with filled_store(path, **kw) as store:
        return build_summaries(store)


def test_scenario_flips_ranking_and_explanation_accounts_for_it(store_path):
    rows = _summaries(store_path)
    chat = decide(rows, load_scenario("realtime_chat"), budget=2 * 2**30)
    extract = decide(rows, load_scenario("structured_extraction"), budget=2 * 2**30)
    assert chat.recommendation == "smol-q4_0" and chat.runner_up == "smol-q8_0"
    assert extract.recommendation == "smol-q8_0" and extract.runner_up == "smol-q4_0"
    # realtime chat: the winner leads on efficiency (40% weight) ...
    assert any(line.startswith("efficiency") for line in chat.explanation.why)
    # ... and pays for it in extraction, stated as badcases per 1000 requests counted per item
    cost = " ".join(chat.explanation.cost)
    assert "extraction: badcases 600 vs 500 per 1000 requests (counted per item) — 100 more" in cost
    # extraction: the winner leads on quality, and its cost is speed
    assert any(line.startswith("quality") for line in extract.explanation.why)
    assert any(line.startswith("efficiency") for line in extract.explanation.cost)
    # what to watch: the q4 build's extraction gap to the reference with the seed's fallback
    watch = " ".join(chat.explanation.watch)
    assert "extraction: 120 extra badcases per 1000 requests" in watch
    assert "JSON repair fallback" in watch


def test_hard_constraint_eliminates_with_value_and_limit(store_path):
    rows = _summaries(store_path, fast_decay=42.0)  # the fast build throttles by 42%
    d = decide(rows, load_scenario("realtime_chat"), budget=2 * 2**30)
    fast = next(r for r in d.ranking if r.candidate == "smol-q4_0")
    assert fast.eliminated and fast.score is None
    assert fast.reasons == ["sustained decay 42.0% > limit 30.0%"]
    assert fast.violations[0].value == 0.42 and fast.violations[0].limit == 0.30
    assert d.recommendation == "smol-q8_0" and d.ranking[-1].candidate == "smol-q4_0"
    assert any("smol-q4_0 eliminated: sustained decay 42.0%" in w for w in d.explanation.why)


def test_memory_budget_comes_from_the_device(store_path):
    rows = _summaries(store_path)
    d = decide(rows, load_scenario("realtime_chat"), budget=200 * 2**20)
    acc = next(r for r in d.ranking if r.candidate == "smol-q8_0")
    assert acc.eliminated and acc.reasons[0].startswith(
        "peak memory 231 MiB (VmHWM, no need stored) > limit 200 MiB")  # stored before the need
    # no budget known: the memory constraint is reported unchecked, not passed silently
    d2 = decide(rows, load_scenario("realtime_chat"), budget=None)
    assert all(not r.eliminated for r in d2.ranking)
    assert "peak_memory_budget" in d2.ranking[0].unchecked
    assert "peak memory: no device budget given: peak_memory_max unchecked" in d2.ranking[0].reasons


def test_missing_measurements_are_not_invented(store_path):
    rows = _summaries(store_path)
    rows[0].decay = None
    rows[0].sustained_curve = []
    d = decide(rows, load_scenario("realtime_chat"), budget=2 * 2**30)
    r = next(r for r in d.ranking if r.candidate == rows[0].candidate)
    assert "sustained decay not measured: decay_max unchecked" in r.reasons
    assert "sustained speed kept (1 - decay) not measured (scored 0)" in r.reasons


def test_pareto_front(store_path):
    rows = _summaries(store_path)
    d = decide(rows, load_scenario("offline_batch"))
    assert set(d.pareto) == {"smol-q4_0", "smol-q8_0"}  # one faster and smaller, one better
    for q in rows[1].tasks.values():  # the score's own quality figure: now dominated everywhere
        q.score = 0.1
    assert decide(rows, load_scenario("offline_batch")).pareto == ["smol-q4_0"]


def test_decide_cli_json(store_path, cli):
    filled_store(store_path).close()
    p = cli("decide", "--store", store_path, "--scenario", "structured_extraction",
            "--device", "raspberry-pi-5", "--json")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["recommendation"] == "smol-q8_0"
    assert [set(r) >= {"candidate", "score", "eliminated", "reasons"} for r in data["ranking"]]
    p = cli("decide", "--store", store_path, "--scenario", "no_such_scenario")
    assert p.returncode == 2 and "unknown scenario 'no_such_scenario'" in p.stderr


def test_explanation_in_chinese(store_path):
    from edgepick.decide.explain import explain
    from edgepick.decide.texts import reasons_text

    rows = _summaries(store_path, fast_decay=42.0)
    sc = load_scenario("realtime_chat")
    d = decide(rows, sc, budget=2 * 2**30)
    zh = explain(d, {s.candidate: s for s in rows}, sc, "zh")
    en = explain(d, {s.candidate: s for s in rows}, sc, "en")
    assert len(zh.why) == len(en.why) and len(zh.watch) == len(en.watch)
    assert "格式合规率 98.0%：校验每个结构化输出并修复或重试" in zh.watch[-1]
    assert zh.why[-1] == "smol-q4_0 被淘汰：持续推理衰减 42.0% > 限值 30.0%"
    dead = next(r for r in d.ranking if r.eliminated)
    assert reasons_text(dead, "zh") == ["持续推理衰减 42.0% > 限值 30.0%"]


def test_no_survivor_names_the_nearest_and_the_binding_constraint(store_path):
    rows = _summaries(store_path)  # peaks: q4_0 161 MiB, q8_0 231 MiB
    d = decide(rows, load_scenario("realtime_chat"), budget=150 * 2**20)
    assert d.recommendation is None and all(r.eliminated for r in d.ranking)
    # both break one constraint; q4_0 overshoots the budget by 7%, q8_0 by 54%
    assert d.closest == "smol-q4_0" and [r.candidate for r in d.ranking][0] == "smol-q4_0"
    why = " ".join(d.explanation.why)
    assert "nearest to passing: smol-q4_0" in why
    assert ("every candidate breaks peak memory (limit 150 MiB; best smol-q4_0 at 161 MiB "
            "(VmHWM, no need stored))") in why
    assert "lower-bit quant" in why
    # a second broken constraint puts a candidate behind one that overshoots further
    d2 = decide(_summaries(store_path + "2", fast_decay=42.0), load_scenario("realtime_chat"),
                budget=150 * 2**20)
    assert d2.closest == "smol-q8_0"
    assert not any("sustained decay" in line and "every candidate" in line
                   for line in d2.explanation.why)
    zh = decide(rows, load_scenario("realtime_chat"), budget=150 * 2**20)
    from edgepick.decide.explain import explain

    zh_text = " ".join(explain(zh, {s.candidate: s for s in rows},
                               load_scenario("realtime_chat"), "zh").why)
    assert "最接近达标的是 smol-q4_0" in zh_text and "所有候选都违反" in zh_text
