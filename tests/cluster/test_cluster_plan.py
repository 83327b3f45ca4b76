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
                (2, 2, 1), device
    jobs = _jobs(store_path)
    # 2 devices × 2 candidates × (bench, eval) + 2 fidelity + the reference under each device
    assert len(jobs) == 2 * 2 * 2 + 2 + 2
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
device: raspberry-pi-5
output: out
candidates:
  - model: tiny
    label: tiny-f16
runtime: {threads: 1, n_ctx: 256}
bench: {prompt_lengths: [32], gen_tokens: 8, warmup: 0, repeats: 1}
eval: {data: demo, reference: tiny, limit: 2}  # sequential looks, on the fleet as locally
fidelity: {enabled: false}
report: {enabled: false}
"""


def test_one_device_through_ray_stores_the_rows_and_keys_a_local_run_reuses(head, tmp_path):
    from edgepick.plan.loader import load_plan
    from edgepick.plan.runner import run_plan

    plan = tmp_path / "one.yaml"
    plan.write_text(ONE_DEVICE)
    main(["run", str(plan), "--executor", "ray"])
    store_path = tmp_path / "out" / "results.sqlite"

    def rows():
        with ResultStore(store_path) as store:
            return {kind: {k: p.get("created") for k, p in store.items(kind)}
                    for kind in ("bench", "eval_output", "eval")}

    before = rows()
    assert len(before["bench"]) == 1 and len(before["eval"]) == 1
    run_plan(load_plan(plan))  # the plain local runner, same store: finds everything measured
    after = rows()
    assert after["bench"] == before["bench"] and after["eval_output"] == before["eval_output"]
    assert set(after["eval"]) == set(before["eval"])
