"""The fleet view over per-device decisions: the one configuration that serves every device, or
an honest "none" naming where the nearest one fails."""

from __future__ import annotations

from edgepick.cluster.fleet_report import DeviceOutcome, fleet_choice, fleet_markdown
from edgepick.devices.catalog import load_device
from edgepick.records.decision import CandidateSummary, Decision, RankedCandidate


def _outcome(tag: str, scores: dict[str, float | None], rec: str | None,
             status: str = "proven") -> DeviceOutcome:
    ranking = [RankedCandidate(candidate=n, score=s, eliminated=s is None,
                               reasons=[] if s is not None else ["TTFT P50 above the limit"],
                               status="eliminated" if s is None else "proven")
               for n, s in scores.items()]
    d = Decision(scenario="realtime_chat", ranking=ranking, recommendation=rec,
                 status=status if rec else "none")
    sums = [CandidateSummary(candidate=n, model=f"/m/{n}.gguf", ttft_p50_ms=100.0) for n in scores]
    return DeviceOutcome(tag, load_device("raspberry-pi-5"), sums, d)


def test_the_fleet_configuration_is_the_best_floor_among_those_surviving_everywhere():
    fleet = [_outcome("pi5", {"a": 0.9, "b": 0.6, "c": 0.95}, "c"),
             _outcome("jetson", {"a": 0.7, "b": 0.8, "c": None}, "b")]
    choice, why = fleet_choice(fleet)
    assert choice == "a"  # c is best on the Pi but fails on the Jetson; a's floor 0.7 > b's 0.6
    assert "0.70" in why
    md = fleet_markdown(fleet, "realtime_chat")
    assert "| a | verdict | survives (proven), score 0.90 | survives (proven), score 0.70 |" in md
    assert "**recommended (proven)**" in md and "eliminated (TTFT P50 above the limit)" in md


def test_no_configuration_for_the_whole_fleet_names_the_nearest_and_where_it_fails():
    fleet = [_outcome("pi5", {"a": 0.9, "b": None}, "a"),
             _outcome("jetson", {"a": None, "b": 0.8}, "b"),
             _outcome("phone", {"a": 0.5, "b": None}, "a")]
    choice, why = fleet_choice(fleet)
    assert choice is None
    assert "nearest: a" in why and "jetson" in why


def test_the_fleet_page_renders_in_both_languages(tmp_path):
    from edgepick.cluster.fleet_report import write_fleet

    fleet = [_outcome("pi5", {"a": 0.9, "b": None}, "a"), _outcome("jetson", {"a": 0.7}, "a")]
    en, zh = fleet_markdown(fleet, "realtime_chat"), fleet_markdown(fleet, "realtime_chat", "zh")
    assert en.startswith("# Fleet: 2 devices, scenario realtime_chat")
    assert "| a | TTFT P50 | 100 ms | 100 ms |" in en and "| a | peak RSS | not measured |" in en
    assert zh.startswith("# 设备群：2 台设备，场景 realtime_chat")
    assert "| a | 首token延迟P50 | 100 ms | 100 ms |" in zh and "| a | 峰值内存（RSS） | 未测量 |" in zh
    assert "| 候选 | 指标 | pi5 | jetson |" in zh and "## 各设备的推荐" in zh
    assert "TTFT P50 |" not in zh and "not measured" not in zh
    assert "| a | 结论 | **推荐（已证实）**，得分 0.90 | **推荐（已证实）**，得分 0.70 |" in zh
    assert "| pi5 | 6.0 GiB | 17.1 GB/s (规格表) | a (已证实) | — |" in zh
    assert "a 在全部 2 台设备上通过所有硬约束" in zh and fleet_choice(fleet, "zh")[0] == "a"
    paths = write_fleet(fleet, "realtime_chat", tmp_path / "both")
    assert [p.name for p in paths] == ["fleet.md", "fleet.zh.md", "fleet.json"]
    assert paths[0].read_text(encoding="utf-8") == en and paths[1].read_text(encoding="utf-8") == zh
    assert [p.name for p in write_fleet(fleet, "s", tmp_path / "en", "en")] == \
        ["fleet.md", "fleet.json"]
