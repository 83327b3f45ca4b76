"""A deploy.yaml whose decision turned speculative decoding on for one task only is served: two
llama-server processes over the same file, the one with the kind's flags on its command line
serving the task it won (by route), the other plain; /metrics counts drafted and accepted tokens
for that model and task, and none for the plainly decoded task."""

from __future__ import annotations

import psutil
from serve_harness import serve

from edgepick.records.deploy import DeployConfig
from edgepick.records.speculative import Speculation
from edgepick.registry.store import sha256_of
from tests.decide.test_decide_speculation import _decide, _store, fig

TASK = "x-edgepick-task"
COPY = ("Repeat the following list exactly, twice, one item per line:\n"
        "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike")


def test_serve_speculates_for_the_task_it_won_only(tiny_model, store_path, tmp_path):
    # the model drafting for itself: every step drafts, so the counters must move
    kind = {"type": "draft-simple", "model": tiny_model, "sha256": sha256_of(tiny_model),
            "n_max": 3}
    tag = Speculation.model_validate(kind).tag()
    figures = [fig("extraction", (1.4, 1.2, 1.6), setting=tag),
               fig("qa", (0.6, 0.5, 0.7), setting=tag)]
    with _store(store_path, tiny_model, figures, kinds=(kind,)) as store:
        deploy = _decide(store, tmp_path).deploy
    cfg = DeployConfig.load(deploy)
    member = f"smol+{tag}"
    assert {r.task: r.route for r in cfg.routes}["extraction"] == member
    with serve([deploy, "--slots", "1", "--ctx", "512"], tmp_path) as s:
        cmds = {tuple(psutil.Process(p).cmdline()) for p in s.engine_pids()}
        assert len(cmds) == 2  # both members pinned: each its own engine over the same file
        spec = [c for c in cmds if "--spec-type" in c]
        assert len(spec) == 1
        i = spec[0].index("--spec-type")
        assert spec[0][i:i + 6] == ("--spec-type", "draft-simple", "-md", tiny_model,
                                    "--spec-draft-n-max", "3")
        assert all(c[c.index("-m") + 1] == cfg.model.path for c in cmds)
        client = s.openai()
        for task, model in (("extraction", member), ("qa", "smol")):
            r = client.chat.completions.with_raw_response.create(
                model="auto", max_tokens=48, extra_headers={TASK: task},
                messages=[{"role": "user", "content": COPY}])
            assert r.headers["x-edgepick-model"] == model
        drafted = s.metric("edgepick_speculative_tokens_total", None, model=member,
                           task="extraction", kind="drafted")
        accepted = s.metric("edgepick_speculative_tokens_total", None, model=member,
                            task="extraction", kind="accepted")
        assert drafted > 0 and 0 <= accepted <= drafted
        assert s.metric("edgepick_speculative_tokens_total", None, task="qa") == 0
