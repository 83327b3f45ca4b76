"""A plan whose candidates are placements over a second device, end to end: llama.cpp's
rpc-server on 127.0.0.1 stands in for the device, the tiny model runs through serve's
llama-server at `-ngl 0`, `half` and `all` over it, each is fitted per device, benched and
evaluated, decide writes the chosen placement to deploy.yaml, and `edgepick serve` started from
that file runs its engine with exactly those flags (read back from the engine's
/proc/PID/cmdline)."""

from __future__ import annotations

import psutil

from edgepick.plan.loader import load_plan
from edgepick.plan.runner import run_plan
from edgepick.records.deploy import DeployConfig
from edgepick.store import ResultStore
from llama_placement_log import rpc_endpoint as endpoint  # noqa: F401 (a fixture)
from serve_harness import serve

PLAN = """
name: place-rpc
device: raspberry-pi-5
output: out
candidates:
  - model: tiny
    backend: llama_server
runtime: {{threads: 1, n_ctx: 256, n_gpu_layers: [0, half, all], rpc: [{rpc}]}}
bench: {{prompt_lengths: [32], gen_tokens: 8, warmup: 0, repeats: 1, quiet_wait_s: 0,
        sustain_s: 0}}
eval:
  data: demo
  reference: tiny
  limit: 2
  max_tokens: {{classification: 8, extraction: 8, qa: 8, math: 8, summary: 8, generation: 8}}
fidelity: {{ctx: 128, max_chunks: 1}}
scenario:
  name: realtime_chat
  overrides:
    constraints: {{ttft_p50_ms_max: 60000, ttft_p99_ms_max: 60000, decode_tps_min: 0.1,
                  unacceptable_rate_max: 1.0}}
report: {{lang: en}}
"""


def _engine_cmdline(served) -> list[str]:
    for child in psutil.Process(served.proc.pid).children(recursive=True):
        try:
            line = child.cmdline()
        except psutil.Error:
            continue
        if "--port" in line and "--alias" in line:
            with open(f"/proc/{child.pid}/cmdline", "rb") as fh:
                return fh.read().decode().split("\0")[:-1]
    raise AssertionError("serve runs no engine")


def test_placements_are_measured_decided_deployed_and_served_with_their_flags(
        endpoint, tmp_path):
    (tmp_path / "plan.yaml").write_text(PLAN.format(rpc=endpoint))
    res = run_plan(load_plan(tmp_path / "plan.yaml"))
    s = {x.candidate: x for x in res.summaries}
    assert set(s) == {"tiny@ngl=0", "tiny@ngl=half", "tiny@ngl=all"}
    for name, x in s.items():  # each measured apart, with its own placement
        assert x.ttft_p50_ms and x.decode_tps and x.tasks, name
    assert s["tiny@ngl=half"].settings["placement"]["n_gpu_layers"] == 1  # 2 blocks
    with ResultStore(res.store) as st:  # fit planned each placement per device
        fits = [p for _, p in st.items("fit") if p.get("placement")]
    rpc_dev = f"RPC0[{endpoint}]"
    held = {f["variant"]: next((d["layers"], d["output"]) for d in f["placement"]["devices"]
                               if d["name"] == rpc_dev) for f in fits}
    # -ngl 1 of 2 blocks: llama.cpp counts the output layer as the first it moves
    assert held == {"ngl=0": ([], False), "ngl=half": ([], True), "ngl=all": ([0, 1], True)}

    assert res.deploy is not None, res.decision.explanation
    cfg = DeployConfig.load(res.deploy)
    chosen = cfg.runtime.placement
    assert chosen is not None and chosen.rpc == [endpoint]
    assert cfg.model.name == res.decision.recommendation
    assert s[cfg.model.name].settings["placement"]["n_gpu_layers"] == chosen.n_gpu_layers

    with serve([str(res.deploy), "--slots", "1"], tmp_path) as served:
        cmd = _engine_cmdline(served)
        flags = chosen.llama_args()
        i = cmd.index("-ngl")
        assert cmd[i:i + len(flags)] == flags and cmd.count("-ngl") == 1
        reply = served.openai("x").chat.completions.create(
            model="x", max_tokens=4, messages=[{"role": "user", "content": "Hi"}])
        assert reply.choices[0].message.content is not None
