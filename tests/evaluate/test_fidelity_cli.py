"""`edgepick fidelity` and `edgepick consistency` as a user runs them."""

from __future__ import annotations

import json

import pytest

FIDELITY_KEYS = {"ppl_ref", "ppl_cand", "ppl_ratio", "kld_mean", "kld_median", "kld_p99",
                 "kld_max", "same_top1", "rms_dp", "n_chunks", "n_scored", "ctx"}


def test_fidelity_json_shape(cli, tiny_model):
    r = cli("fidelity", "--reference", tiny_model, "--model", "tiny", "--ctx", "64",
            "--chunks", "2", "--threads", "1", "--no-cache", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert FIDELITY_KEYS <= set(data)
    assert data["n_chunks"] == 2 and data["n_scored"] == 2 * 31
    assert data["kld_mean"] == 0.0 and data["same_top1"] == 1.0 and data["ppl_ratio"] == 1.0


def test_fidelity_vocabulary_mismatch_exits_2_with_one_line(cli, tiny_model, gemma3_q4_k_m):
    r = cli("fidelity", "--reference", tiny_model, "--model", gemma3_q4_k_m, "--ctx", "64",
            "--chunks", "1", "--threads", "1", "--no-cache")
    assert r.returncode == 2
    assert "do not share a tokenizer" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.fixture
def prompts(tmp_path):
    lines = [
        {"id": "p1", "task": "qa", "prompt": "What is the capital of France?", "reference": "Paris"},
        {"id": "p2", "task": "qa", "messages": [{"role": "user", "content": "Name a colour."}],
         "reference": "red"},
        {"id": "p3", "task": "qa", "prompt": "用一句话介绍你自己。"},  # no reference: still usable
    ]
    path = tmp_path / "prompts.jsonl"
    path.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines)
                    + "\n{broken\n", encoding="utf-8")
    return str(path)


def test_consistency_identical_models_pass(cli, tiny_model, prompts):
    r = cli("consistency", "--reference", tiny_model, "--model", "tiny", "--data", prompts,
            "--max-tokens", "6", "--threads", "1", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["n"] == 3 and data["identical_share"] == 1.0 and data["passed"] is True
    assert all(it["first_divergence"] is None for it in data["items"])
    assert len(data["skipped"]) == 1 and ":4:" in data["skipped"][0]  # the broken line, by number
    assert "prompts.jsonl:4" in r.stderr


def test_consistency_different_models_fail_with_exit_1(cli, tiny_model, smollm2_q4_1, prompts):
    r = cli("consistency", "--reference", smollm2_q4_1, "--model", tiny_model, "--data",
            prompts, "--max-tokens", "6", "--threads", "1", "--threshold", "1.0", "--json")
    assert r.returncode == 1, r.stderr
    data = json.loads(r.stdout)
    assert data["passed"] is False and data["identical_share"] < 1.0
    diverged = [it for it in data["items"] if not it["identical"]]
    assert diverged and all(0 <= it["first_divergence"] <= 6 for it in diverged)


def test_consistency_stores_its_answers_under_a_run_and_reuses_them(cli, tiny_model, prompts,
                                                                     tmp_path):
    import sqlite3

    store = str(tmp_path / "s.sqlite")
    args = ("consistency", "-r", tiny_model, "-m", "tiny", "-d", prompts, "--max-tokens", "4",
            "--threads", "1", "--store", store, "--json")
    first = cli(*args)
    assert first.returncode == 0, first.stderr

    def created() -> list[float]:
        with sqlite3.connect(store) as db:
            return [r[0] for r in db.execute(
                "SELECT created FROM results WHERE kind='consistency'")]

    (when,) = created()
    again = cli(*args, "--threshold", "1.0")  # a new verdict on the stored answers
    assert again.returncode == 0, again.stderr
    assert created() == [when]  # reused, not measured again
    a, b = json.loads(first.stdout), json.loads(again.stdout)
    assert a["items"] == b["items"] and b["threshold"] == 1.0 and b["passed"] is True
    runs = json.loads(cli("runs", "--store", store, "--json").stdout)
    assert [r["rows"] for r in runs] == [{"consistency": 1}, {"consistency": 1}]
    assert runs[0]["data_sha256"] and runs[0]["settings"]["max_tokens"] == 4


def test_consistency_reads_a_bundled_set_and_refuses_a_missing_file_in_one_line(cli, tmp_path):
    store = str(tmp_path / "s.sqlite")
    r = cli("consistency", "-r", "tiny", "-m", "tiny", "-d", "nosuch.jsonl", "--store", store)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip() == "error: nosuch.jsonl: cannot read (No such file or directory)"
    # the smaller bundled set (71 items, not demo's 212): the name is read the same way, and
    # each item costs two generations
    r = cli("consistency", "-r", "tiny", "-m", "tiny", "-d", "demo-tools", "--max-tokens", "1",
            "--threads", "1", "--store", store, "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["n"] > 10
