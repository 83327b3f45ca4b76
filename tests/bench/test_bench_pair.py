"""`edgepick bench -m A -m B --resident`: two models resident in one worker (the 2-block tiny
SmolLM2, swapped, beside SmolLM2-135M), the pair's memory, each one's first token, and a
request that waits for its model to swap in."""

from __future__ import annotations

import json


def test_two_resident_models_and_a_swap(tiny_model, smollm2_q4_1, tmp_path, cli):
    args = ["bench", "-m", tiny_model, "-m", smollm2_q4_1, "--resident", "--repeats", "6",
            "--prompt-lengths", "32", "--gen", "2", "--ctx", "256", "--store",
            str(tmp_path / "s.sqlite"), "--json"]
    r = cli(*args)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert 0 < res["need_a"] < res["need_pair"] and res["need_b_added"] > 0
    assert len(res["ttft_ms"]) == 2 and all(v > 0 for v in res["ttft_ms"].values())
    assert len(res["swap_ttft_ms"]) == len(res["load_ms"]) == 6
    # waiting for a swap costs the load and then the first token
    assert all(s > load for s, load in zip(res["swap_ttft_ms"], res["load_ms"]))
    lo, hi = res["swap_ttft_ci95"]
    assert lo <= res["swap_ttft_median_ms"] <= hi
    again = json.loads(cli(*args).stdout)  # stored: read back, not measured again
    assert again == res


def test_resident_needs_two_local_models(smollm2_q4_1, cli):
    r = cli("bench", "-m", smollm2_q4_1, "--resident")
    assert r.returncode != 0 and "exactly two local models" in r.stderr
