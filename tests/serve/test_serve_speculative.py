"""A deploy with speculative decoding is served: llama-server runs with exactly the kind's
flags (read from the running engine's command line), the draft is pinned by its SHA-256 like
the model, and /metrics counts drafted and accepted tokens per model and task from the
engine's own timings."""

from __future__ import annotations

import psutil
import pytest

from edgepick.errors import InputError
from edgepick.records.candidate import RuntimeSettings
from edgepick.records.deploy import DeployConfig, DeployModel
from edgepick.registry.store import sha256_of
from edgepick.serve.assemble import from_deploy
from serve_harness import serve


def _deploy(tiny_model, tmp_path, draft_sha: str | None = None):
    runtime = RuntimeSettings(threads=1, n_ctx=256, variant="spec=draft-simple:tiny:3",
                              speculative={"type": "draft-simple", "model": str(tiny_model),
                                           "sha256": draft_sha or sha256_of(tiny_model),
                                           "n_max": 3})
    cfg = DeployConfig(model=DeployModel(name="tiny@spec", path=tiny_model,
                                         sha256=sha256_of(tiny_model)), runtime=runtime)
    return cfg.dump(tmp_path / "deploy.yaml"), runtime


def test_serve_speculates_with_the_deploys_flags_and_counts_drafts(tiny_model, tmp_path):
    deploy, runtime = _deploy(tiny_model, tmp_path)
    assert DeployConfig.load(deploy).runtime == runtime  # the file carries the kind as chosen
    with serve([str(deploy), "--slots", "1"], tmp_path) as s:
        (pid,) = s.engine_pids()
        cmd = psutil.Process(pid).cmdline()
        i = cmd.index("--spec-type")
        assert cmd[i:i + 6] == ["--spec-type", "draft-simple", "-md", str(tiny_model),
                                "--spec-draft-n-max", "3"]
        for stream in (False, True):
            r = s.openai("x").chat.completions.create(
                model="tiny@spec", max_tokens=12, stream=stream,
                messages=[{"role": "user", "content": "Hi"}])
            if stream:
                list(r)
        drafted = s.metric("edgepick_speculative_tokens_total", None, kind="drafted")
        accepted = s.metric("edgepick_speculative_tokens_total", None, kind="accepted")
        assert drafted > 0 and 0 <= accepted <= drafted
        text = s.metrics()
        assert 'edgepick_speculative_tokens_total{kind="drafted",model=' in text


def test_a_draft_whose_bytes_changed_is_refused_before_start(tiny_model, tmp_path):
    deploy, _ = _deploy(tiny_model, tmp_path, draft_sha="0" * 64)
    with pytest.raises(InputError) as exc:
        from_deploy(deploy, {})
    assert exc.value.field == "runtime.speculative.sha256"
    assert "refusing to serve it" in str(exc.value)
