"""serve runs a team (issue 38 item 2): SmolLM2 and Gemma-3-270M as two edge models from a team
deploy.yaml, each task reaching its model and the answer naming it; under a budget that holds one
model at a time, alternating tasks swap the models with no 5xx and a burst of mixed tasks makes
fewer swaps than requests (grouping); pinned models load at start, an idle one unloads after its
ttl; a task routed to the (stand-in) cloud goes there; a deploy.yaml decide wrote for a team is
served and `serve -m A -m B` serves two models ad hoc (there the 2-block SmolLM2 stands in for
Gemma: it loads in milliseconds); a model that can never fit is refused in one line."""

from __future__ import annotations

import importlib.util
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from edgepick.records.deploy import (CloudEndpoint, DeployConfig, DeployModel, TaskConstraint,
                                     TaskRoute)
from edgepick.records.team import EdgeModel, MemoryPlan
from edgepick.registry.store import sha256_of
from serve_harness import serve, wait_until

MIB = 1 << 20
TASK = "x-edgepick-task"


def team_deploy(tmp_path: Path, smol: str, gemma: str, *, budget_mib: int = 400,
                smol_pin: bool = False, gemma_ttl: int | None = None,
                cloud: str | None = None) -> Path:
    """smol serves `chat`, gemma `math` (held to a label set); needs 150 + 300 MiB, so a budget
    of 400 MiB holds one at a time."""
    s = EdgeModel(name="smol", path=smol, sha256=sha256_of(smol), need_bytes=150 * MIB,
                  pin=smol_pin)
    g = EdgeModel(name="gemma", path=gemma, sha256=sha256_of(gemma), need_bytes=300 * MIB,
                  ttl=gemma_ttl)
    cfg = DeployConfig(schema_version=2, status="team",
                       model=DeployModel(name="smol", path=smol, sha256=s.sha256),
                       models=[s, g], memory=MemoryPlan(budget_bytes=budget_mib * MIB),
                       routes=[TaskRoute(task="chat", route="smol"),
                               TaskRoute(task="math", route="gemma")],
                       constraints={"math": TaskConstraint(labels=["yes", "no"])})
    if cloud:  # `hard` goes to the cloud
        cfg.routes.append(TaskRoute(task="hard", route="cloud"))
        cfg.cloud = CloudEndpoint(url=cloud, model="cloud")
    cfg.runtime.n_ctx = 512
    return cfg.dump(tmp_path / "deploy.yaml")


def ask(url: str, task: str | None = None, model: str = "x", timeout: float = 60) -> httpx.Response:
    headers = {TASK: task} if task else {}
    return httpx.post(url + "/v1/chat/completions", headers=headers, timeout=timeout,
                      json={"model": model, "max_tokens": 4,
                            "messages": [{"role": "user", "content": "Is 2 even?"}]})


def states(url: str) -> dict[str, str]:
    cards = httpx.get(url + "/v1/models", timeout=10).json()["data"]
    return {c["id"]: c["state"] for c in cards}


def test_team_routes_tasks_swaps_and_groups(smollm2_q4_1, gemma3_q4_k_m, tmp_path):
    path = team_deploy(tmp_path, smollm2_q4_1, gemma3_q4_k_m)
    with serve([str(path), "--slots", "2", "--group-wait", "2"], tmp_path) as s:
        assert states(s.url) == {"smol": "unloaded", "gemma": "unloaded"}  # none pinned
        for task, model in (("chat", "smol"), ("math", "gemma")):
            r = ask(s.url, task)
            assert r.status_code == 200, r.text
            assert r.headers["x-edgepick-model"] == model and r.json()["model"] == model
        # the math task's label set applies to gemma, the member serving it
        assert r.headers["x-edgepick-constraint"] == "deploy"
        assert r.json()["choices"][0]["message"]["content"] in ("yes", "no", "ye", "n")
        assert states(s.url) == {"smol": "unloaded", "gemma": "loaded"}  # one fits at a time

        # alternating tasks: a swap each, never a 5xx
        for task in ("chat", "math"):
            assert ask(s.url, task).status_code == 200
        loads = s.metric("edgepick_model_loads_total", cause="demand")
        assert loads == 4 and s.metric("edgepick_model_unloads_total", reason="evicted") == 3

        # a burst of mixed tasks: grouped by model, fewer swaps than requests
        tasks = ["chat", "math"] * 4
        with ThreadPoolExecutor(len(tasks)) as pool:
            answers = list(pool.map(lambda t: ask(s.url, t), tasks))
        assert [a.status_code for a in answers] == [200] * len(tasks)
        assert all(a.headers["x-edgepick-model"] == ("smol" if t == "chat" else "gemma")
                   for a, t in zip(answers, tasks))
        swaps = s.metric("edgepick_model_loads_total", cause="demand") - loads
        assert 1 <= swaps <= 3 < len(tasks)
        assert s.metric("edgepick_swap_waits_total") >= 4 + 4  # 4 before, the chat ones now
        assert s.metric("edgepick_model_load_seconds_count") == loads + swaps

        # the official client picks a model by its name (over the task); the answer names it
        client = s.openai()
        resident = next(n for n, st in states(s.url).items() if st == "loaded")
        raw = client.chat.completions.with_raw_response.create(
            model=resident, max_tokens=4, messages=[{"role": "user", "content": "Hi"}],
            extra_headers={TASK: "chat" if resident == "gemma" else "math"})
        assert raw.headers["x-edgepick-model"] == resident and raw.parse().model == resident
        assert {m.id for m in client.models.list()} == {"smol", "gemma"}
        stream = client.chat.completions.create(model=resident, max_tokens=4, stream=True,
                                                messages=[{"role": "user", "content": "Hi"}])
        assert {c.model for c in stream} == {resident}
        other = ({"smol", "gemma"} - {resident}).pop()
        assert states(s.url) == {resident: "loaded", other: "unloaded"}


def _fake_cloud():
    path = Path(__file__).parents[1] / "route" / "test_route_serve.py"
    spec = importlib.util.spec_from_file_location("route_serve_cloud", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.fake_cloud()


def test_pinned_loads_at_start_ttl_unloads_and_the_cloud_route(smollm2_q4_1, gemma3_q4_k_m,
                                                               tmp_path):
    with _fake_cloud() as cloud:
        path = team_deploy(tmp_path, smollm2_q4_1, gemma3_q4_k_m, budget_mib=600,
                           smol_pin=True, gemma_ttl=1, cloud=cloud.url)
        policy = tmp_path / "policy.yaml"  # routes by task, never escalates on confidence
        policy.write_text("route: {mode: by_task, escalate_low_confidence: false}\n")
        with serve([str(path), "--slots", "1", "--policy", str(policy)], tmp_path) as s:
            assert states(s.url) == {"smol": "loaded", "gemma": "unloaded"}
            assert s.metric("edgepick_model_loads_total", model="smol", cause="start") == 1
            r = ask(s.url, "hard")  # deploy.yaml routes it to the (stand-in) cloud
            assert r.status_code == 200 and r.headers["x-edgepick-route"] == "cloud"
            assert "x-edgepick-model" not in r.headers and cloud.calls == 1
            r = ask(s.url, "math")
            assert r.status_code == 200 and r.headers["x-edgepick-model"] == "gemma"
            assert r.headers["x-edgepick-route"] == "edge"
            assert states(s.url) == {"smol": "loaded", "gemma": "loaded"}  # both fit in 600M
            wait_until("gemma unloaded after its ttl",
                       lambda: states(s.url)["gemma"] == "unloaded", timeout=15)
            assert s.metric("edgepick_model_unloads_total", model="gemma", reason="idle") == 1
            assert states(s.url)["smol"] == "loaded"  # pinned: never unloaded


def test_a_model_that_can_never_fit_is_refused_in_one_line(smollm2_q4_1, gemma3_q4_k_m,
                                                           tmp_path, cli):
    path = team_deploy(tmp_path, smollm2_q4_1, gemma3_q4_k_m)
    out = cli("serve", str(path), "--memory-budget", "200M", "--port", "0", timeout=60)
    assert out.returncode != 0 and "Traceback" not in out.stderr
    line = out.stderr.strip().splitlines()[-1]
    assert "memory plan" in line and "gemma" in line and "exceeds the budget 200 MiB" in line
    out = cli("serve", "-m", smollm2_q4_1, "-m", gemma3_q4_k_m, "--memory-budget", "100M",
              "--port", "0", timeout=60)
    assert out.returncode != 0 and "exceeds the budget 100 MiB" in out.stderr


def test_ad_hoc_models_without_a_deploy(tiny_model, smollm2_q4_1, tmp_path):
    # 69 + 94 MiB files: a budget of 120M holds one at a time (the 2-block SmolLM2 loads fast)
    with serve(["-m", tiny_model, "-m", smollm2_q4_1, "--memory-budget", "120M",
                "--ctx", "512", "--slots", "1"], tmp_path) as s:
        names = list(states(s.url))
        assert len(names) == 2
        r = ask(s.url, model=names[1])
        assert r.status_code == 200 and r.headers["x-edgepick-model"] == names[1]
        assert r.headers["x-edgepick-route-reason"] == f"model:{names[1]}"
        r = ask(s.url)  # no member named: the first -m, the default
        assert r.status_code == 200 and r.headers["x-edgepick-model"] == names[0]
        assert r.headers["x-edgepick-route-reason"] == "default"
        assert s.metric("edgepick_model_loads_total") == 2
        assert states(s.url) == {names[0]: "loaded", names[1]: "unloaded"}


def test_each_member_is_supervised_on_its_own(tiny_model, smollm2_q4_1, tmp_path):
    """A member's engine killed is restarted (counted under its name); the other's is untouched."""
    import os
    import signal

    import psutil

    with serve(["-m", tiny_model, "-m", smollm2_q4_1, "--ctx", "512", "--slots", "1"],
               tmp_path) as s:
        names = list(states(s.url))
        for name in names:  # no budget: both load and stay
            assert ask(s.url, model=name).status_code == 200
        assert set(states(s.url).values()) == {"loaded"}
        by_model = {name: next(pid for pid in s.engine_pids()
                               if path in psutil.Process(pid).cmdline())
                    for name, path in zip(names, (tiny_model, smollm2_q4_1))}
        os.kill(by_model[names[1]], signal.SIGKILL)
        wait_until("the killed member restarted", lambda: s.metric(
            "edgepick_engine_restarts_total", reason=f"team:{names[1]}_crash") == 1, 60)
        wait_until("it serves again", lambda: ask(s.url, model=names[1]).status_code == 200, 60)
        assert by_model[names[0]] in s.engine_pids()  # the other engine never stopped
        assert s.metric("edgepick_model_loads_total") == 2  # a restart is not a load


def _decide_team_module():
    path = Path(__file__).parents[1] / "decide" / "test_decide_team.py"
    spec = importlib.util.spec_from_file_location("decide_team_rows", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_team_deploy_written_by_decide_is_served(tiny_model, smollm2_q4_1, tmp_path):
    from edgepick.decide.decision import decide
    from edgepick.decide.deploy import build_deploy

    t = _decide_team_module()
    rows = t.pair()  # chatty (300 MiB) is better at chat, mathy (200 MiB) at math
    rows[0].model, rows[1].model = smollm2_q4_1, tiny_model
    d = decide(rows, t.SC, 400 * MIB)  # one at a time: both on demand
    assert d.status == "team"
    path = build_deploy(d, rows, t.SC, device="local").dump(tmp_path / "deploy.yaml")
    with serve([str(path), "--slots", "1", "--ctx", "512"], tmp_path) as s:
        assert states(s.url) == {"chatty": "unloaded", "mathy": "unloaded"}
        for task, model in (("math", "mathy"), ("chat", "chatty")):
            r = ask(s.url, task)
            assert r.status_code == 200 and r.headers["x-edgepick-model"] == model
