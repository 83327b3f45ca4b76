"""A two-device plan through `edgepick run --executor ray` on a local Ray head whose one node
carries both device tags, two `tiny` builds (2 and 3 blocks): every (device × candidate) result in the store and the report, and a
re-run that measures nothing. Ray starts once for the module."""

from __future__ import annotations

import json

import pytest
from parts import need_module

from ray_head import ray_head  # noqa: E402, I001  (first: it keeps Ray on loopback)

ray = need_module("ray")

from edgepick.cli.app import main  # noqa: E402
from edgepick.cluster.dispatch import JOB_KIND  # noqa: E402
from edgepick.store import ResultStore  # noqa: E402

DEVICES = ["raspberry-pi-5", "laptop-16gb-cpu"]  # catalog names, so each has a profile
PLAN = """
name: fleet
devices: [raspberry-pi-5, laptop-16gb-cpu]
output: out
candidates:
  - model: tiny
    label: tiny-f16
  - model: {tiny3}
    label: tiny3
    reference: tiny       # same tokenizer: fidelity (KLD) of the 3-block cut against the 2-block
runtime: {threads: 1, n_ctx: 256}
bench: {prompt_lengths: [32], gen_tokens: 8, warmup: 0, repeats: 1}
eval:
  data: demo
  reference: tiny
  limit: 3
  max_tokens: {classification: 8, extraction: 16, qa: 8, math: 8, summary: 16, generation: 16}
fidelity: {ctx: 128, max_chunks: 1}
scenario: {name: realtime_chat}
report: {lang: en}
cluster: {max_retries: 1, node_timeout_s: 20}
"""


@pytest.fixture(scope="module")
def head():
    with ray_head(*DEVICES):
        yield


def _jobs(store_path) -> dict[str, float]:
    with ResultStore(store_path) as store:
        return {p["job"] + "@" + str(p["scope"]): p["finished"] for _, p in store.items(JOB_KIND)}


def test_two_devices_two_candidates_through_ray_then_a_rerun_measures_nothing(head, tmp_path,
                                                                               capsys):
    from edgepick.assets.bundled import tiny_f16

    plan = tmp_path / "fleet.yaml"
    plan.write_text(PLAN.replace("{tiny3}", str(tiny_f16(n_blocks=3))))
    main(["run", str(plan), "--executor", "ray"])
    out = tmp_path / "out"
    store_path = out / "results.sqlite"

    from edgepick.decide.selection import select

    with ResultStore(store_path) as store:
        runs = {r.command.rsplit("(device ", 1)[-1].rstrip(")"): r.id for r in store.runs()}
        assert set(runs) == set(DEVICES)
        for device, run_id in runs.items():  # each device's rows are its own run's
            kinds = [r.kind for r in select(store, [run_id]).rows]
            assert (kinds.count("bench"), kinds.count("eval"), kinds.count("fidelity")) == \
                (2, 1, 1), device
    jobs = _jobs(store_path)
    # per device: a bench per candidate, one eval of both, one fidelity; the reference's
    # outputs once, written under each device
    assert len(jobs) == 2 * (2 + 1 + 1) + 2
    fleet = json.loads((out / "report" / "fleet.json").read_text())
    assert [d["device"] for d in fleet["devices"]] == DEVICES
    for d in fleet["devices"]:
        got = {c["candidate"]: c for c in d["candidates"]}
        assert set(got) == {"tiny-f16", "tiny3"}
        for c in got.values():
            assert c["ttft_p50_ms"] is not None and c["unacceptable_rate"] is not None, c
        assert got["tiny3"]["kld_mean"] is not None
        assert d["report"] and (out / "report" / d["device"]).is_dir()
    md = (out / "report" / "fleet.md").read_text()
    assert "Each candidate across devices" in md and all(d in md for d in DEVICES)

    main(["run", str(plan), "--executor", "ray"])
    assert _jobs(store_path) == jobs  # nothing was sent again, nothing rewritten
    err = capsys.readouterr().err
    assert "stored" in err


PHONE_PLAN = """
name: phone
devices: [raspberry-pi-5, flagship-phone]
output: out
candidates:
  - model: tiny
    label: tiny-f16
  - model: {url}
    label: tiny@phone
    device: flagship-phone   # llama-server on the phone: no Python there, no node
runtime: {threads: 1, n_ctx: 256}
bench: {prompt_lengths: [32], gen_tokens: 8, warmup: 0, repeats: 2}
eval: {enabled: false}
fidelity: {enabled: false}
report: {lang: en}
cluster: {max_retries: 0, node_timeout_s: 20}
"""


def test_a_phone_over_http_is_measured_from_a_node_with_its_round_trip_apart(head, tmp_path,
                                                                             tiny_model):
    from llama_server import llama_server

    with llama_server(tiny_model, "tiny-phone", tmp_path) as url:
        plan = tmp_path / "phone.yaml"
        plan.write_text(PHONE_PLAN.replace("{url}", url))
        main(["run", str(plan), "--executor", "ray"])
    fleet = json.loads((tmp_path / "out" / "report" / "fleet.json").read_text())
    devices = {d["device"]: d for d in fleet["devices"]}
    assert [c["candidate"] for c in devices["raspberry-pi-5"]["candidates"]] == ["tiny-f16"]
    phone = devices["flagship-phone"]
    assert [c["candidate"] for c in phone["candidates"]] == ["tiny@phone"]
    assert phone["candidates"][0]["ttft_p50_ms"] is not None
    rtt = phone["network"]["tiny@phone"]
    assert rtt["what"] == "GET /v1/models" and rtt["n"] == 7 and 0 < rtt["median"]
    assert "network RTT" in (tmp_path / "out" / "report" / "fleet.md").read_text()
    assert not (tmp_path / "out" / "report" / "fleet.zh.md").exists()  # report.lang: en


ONE_DEVICE = """
name: one
device: raspberry-pi-5          # its power budget (12 W) and memory budget gate the decision
output: out
candidates:
  - model: tiny
    label: tiny-f16
  - model: {tiny3}
    label: tiny3
runtime: {threads: 1, n_ctx: 256}
bench: {prompt_lengths: [16], gen_tokens: 4, warmup: 0, repeats: 1}
eval:
  data: demo
  reference: tiny
  limit: 4
  max_tokens: {classification: 6, extraction: 8, qa: 6, math: 6, summary: 8, generation: 8}
fidelity: {enabled: false}
report: {enabled: false}
scenario:
  name: realtime_chat
  overrides:
    context_from: prompts.jsonl                 # P50/P95/P99 counted with each tokenizer
    sampling: {temperature: 0.8, samples: 2}
    edge_only_tasks: [extraction]
"""

PROMPTS = [{"prompt": "word " * n} for n in (3, 9, 20, 40, 60)]


def _gates(rec) -> list[tuple]:
    """Every gate of the decision, by candidate: (candidate, metric, prompt length read at)."""
    return sorted((r.candidate, g.metric, g.at_tokens) for r in rec.decision.ranking
                  for g in [*r.gates, *(g for gs in r.task_gates.values() for g in gs)])


def _stored(store_path) -> dict:
    with ResultStore(store_path) as store:
        return {kind: {k: p for k, p in store.items(kind)}
                for kind in ("bench", "eval_output", "eval", "fidelity")}


def test_one_plan_through_local_and_ray_stores_the_same_rows_outputs_and_gates(head, tmp_path):
    """One builder of requests (plan/requests.py): a product scenario (context percentiles,
    sampling with 2 samples, an edge-only task, the Pi's power budget) run by the local executor
    and by Ray stores the same row keys, the same sampled outputs, and gates the same lengths."""
    from edgepick.assets.bundled import tiny_f16
    from edgepick.cluster.fleet import run_fleet
    from edgepick.plan.loader import load_plan
    from edgepick.plan.runner import run_plan

    results, stores = {}, {}
    for executor in ("local", "ray"):
        d = tmp_path / executor
        d.mkdir()
        (d / "prompts.jsonl").write_text("".join(json.dumps(p) + "\n" for p in PROMPTS))
        (d / "one.yaml").write_text(ONE_DEVICE.replace("{tiny3}", str(tiny_f16(n_blocks=3))))
        lp = load_plan(d / "one.yaml")
        results[executor] = run_plan(lp) if executor == "local" else run_fleet(lp, "ray")
        stores[executor] = _stored(d / "out" / "results.sqlite")
    local, ray = stores["local"], stores["ray"]
    for kind in local:
        assert set(local[kind]) == set(ray[kind]), kind
    assert len(local["bench"]) > 1  # the plan's length and the counted percentiles
    assert local["eval_output"] and all(p.get("seed") is not None
                                        for p in local["eval_output"].values())
    for k, p in local["eval_output"].items():  # the same sampled answers, seed for seed
        assert (p["text"], p["seed"]) == (ray["eval_output"][k]["text"], ray["eval_output"][k]["seed"])
    (lev,), (rev,) = local["eval"].values(), ray["eval"].values()
    assert (lev["samples"], lev["sampling"]) == (rev["samples"], rev["sampling"]) == \
        (2, {"temperature": 0.8})
    lg, rg = (_gates(results[e]) for e in ("local", "ray"))
    assert lg == rg and any(at is not None and at != 16 for _, _, at in lg)

    run_plan(load_plan(tmp_path / "ray" / "one.yaml"))  # the local runner on the farm's store
    again = _stored(tmp_path / "ray" / "out" / "results.sqlite")
    for kind in ("bench", "eval_output"):  # found everything measured: nothing rewritten
        assert {k: p.get("created") for k, p in again[kind].items()} == \
            {k: p.get("created") for k, p in ray[kind].items()}, kind
