"""The adapters read the stages' own records (issue 23 item 3), and every row a store already
holds still reads: a payload in the first release's shape (no `ref` in its candidates, no rates
with counts, no energy or host load) gives the same summaries, and a decision stored over it
replays the same. A row that is not its stage's record is left out, not a crash."""

from __future__ import annotations

from edgepick.decide.adapters import RECORDS, read_row
from edgepick.decide.decision import decide
from edgepick.decide.scenarios import load_scenario
from edgepick.decide.summary import build_summaries
from edgepick.records.bench import BenchResult
from edgepick.records.evaluation import EvalResult
from edgepick.store import ResultStore
from decide_payloads import (ACCURATE, FAST, TASKS_ACC, TASKS_FAST, bench_rows, cand_eval,
                             eval_result, fit)

# Fields added to the records after the first release (git f829f74), all optional since.
NEW_BENCH = ("energy", "host_load", "contended")
NEW_GAP = ("score_ci95", "ref_score_ci95", "badcases_per_1000_ci95", "badcases", "ref_badcases",
           "unacceptable", "ref_unacceptable", "strict_format", "ref_strict_format")
NEW_EVAL = ("key", "samples", "sampling", "sequential", "reference_free", "reference_free_note")


def _first_release_eval(ev: EvalResult) -> dict:
    p = ev.model_dump(mode="json")
    for k in NEW_EVAL:
        p.pop(k)
    for ce in [p["reference"], *p["candidates"]]:
        c = ce["candidate"]
        ce["candidate"] = {"model": c["model"], "backend": c["backend"],
                           "settings": c["settings"], "label": c["label"]}  # no `ref`
        for g in [ce["overall"], *ce["per_task"].values(), *ce["per_difficulty"].values()]:
            for k in NEW_GAP:
                g.pop(k)
        for k in ("low", "high"):
            ce["unacceptable"].pop(k)
    return p


def _first_release_bench(r: BenchResult) -> dict:
    p = r.model_dump(mode="json")
    for k in NEW_BENCH:
        p.pop(k)
    return p


def _store(path, old: bool) -> ResultStore:
    store = ResultStore(path)
    store.begin_run("test", {})
    for model, ttft, decode, peak in ((FAST, 90, 62, 160), (ACCURATE, 140, 36, 230)):
        for r in bench_rows(model, ttft_ms=ttft, decode=decode, peak=peak * 2**20):
            store.put("bench", r.key, _first_release_bench(r) if old else r.model_dump(mode="json"))
    ev = eval_result([cand_eval(FAST, "smol-q4_0", TASKS_FAST, fmt=0.93),
                      cand_eval(ACCURATE, "smol-q8_0", TASKS_ACC, fmt=0.98)])
    store.put("eval", "e1", _first_release_eval(ev) if old else ev.model_dump(mode="json"))
    return store


def test_rows_in_the_first_releases_shape_read_as_todays_and_replay_the_stored_decision(
        tmp_path):
    sc = load_scenario("structured_extraction")
    with _store(tmp_path / "new.sqlite", old=False) as new:
        summaries = build_summaries(new)
        stored = decide(summaries, sc, 2**30).model_dump(mode="json")
    with _store(tmp_path / "old.sqlite", old=True) as old:
        (_, payload), = old.items("eval")
        assert "ref" not in payload["candidates"][0]["candidate"]
        assert all(read_row(k, p) is not None for k in ("bench", "eval") for _, p in old.items(k))
        again = build_summaries(old)
        assert [s.model_dump() for s in again] == [s.model_dump() for s in summaries]
        replay = decide(again, sc, 2**30).model_dump(mode="json")
    assert replay == stored
    assert stored["recommendation"] is not None and stored["status"] == replay["status"]


def test_a_row_that_is_not_its_record_is_left_out(tmp_path):
    with _store(tmp_path / "s.sqlite", old=False) as store:
        before = [s.model_dump() for s in build_summaries(store)]
        store.put("bench", "junk", {"x": 1})
        # a fit with no candidate file (a quant not built yet) is a record that fills nothing
        store.put("fit", "nofile", fit(None, 100 * 2**20).model_dump(mode="json"))
        assert read_row("bench", {"x": 1}) is None
        assert isinstance(read_row("fit", fit(None, 1).model_dump(mode="json")), RECORDS["fit"])
        assert [s.model_dump() for s in build_summaries(store)] == before
