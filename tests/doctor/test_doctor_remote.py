"""doctor on a GGUF where it lives: the header-only checks from range requests to a local server
with real range support give the findings they give on the file on disk, read a small share of
the bytes, and say which checks need the file; a 404 or a truncated header is one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from remote_hub import file_server, stand_in_hub
from sparse_gguf import sparse_gguf

from edgepick.doctor.checks_memory import fit_need
from edgepick.doctor.context import Ctx
from edgepick.doctor.remote import STATIC, run_remote
from edgepick.doctor.runner import DoctorRequest, run
from edgepick.doctor.target import resolve_target
from edgepick.errors import EdgepickError
from edgepick.inputs.remote import resolve_remote
from edgepick.progress import silent

MiB = 1 << 20


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEPICK_CACHE", str(tmp_path / "cache"))
    for var in ("HF_ENDPOINT", "HF_TOKEN", "EDGEPICK_OFFLINE", "HF_HUB_OFFLINE"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(scope="module")
def bad_template(tmp_path_factory, smollm2_q4_1) -> Path:
    """The bundled SmolLM2 with a chat template that does not compile (gguf-new-metadata)."""
    out = tmp_path_factory.mktemp("remote-doctor") / "smollm2.bad-template.gguf"
    subprocess.run([str(Path(sys.executable).parent / "gguf-new-metadata"), "--force",
                    "--chat-template", "{% for m in messages %}{{ m.content }", smollm2_q4_1,
                    str(out)], check=True, capture_output=True)
    return out


def _by_cause(report) -> dict:
    return {f.cause: f for f in report.findings}


def _evidence(finding, what: str):
    return next(e.value for e in finding.evidence if e.what == what)


def test_static_findings_by_url_are_those_of_the_file(bad_template):
    """A template that does not render and a budget the model overflows: the same causes, the
    same template error, fit's same need, reading a small share of the file."""
    req = DoctorRequest(target=str(bad_template), budget_bytes=50 * MiB, checks=list(STATIC))
    local = run(req, None)
    with file_server({bad_template.name: bad_template}) as srv:
        url = f"{srv.url}/{bad_template.name}"
        ref = resolve_remote(url)
        remote = run_remote(req.model_copy(update={"target": url}), ref, None, silent)
        assert srv.sent < 0.05 * bad_template.stat().st_size
        assert all(s.status == 206 for s in srv.seen)
    assert remote.kind == "remote" and remote.model == url
    assert [(c.check, c.status) for c in remote.checks] == \
        [(c.check, c.status) for c in local.checks]
    here, there = _by_cause(local), _by_cause(remote)
    assert set(here) == set(there) == {"chat_template", "memory_budget"}
    for cause in here:
        assert there[cause].detail == here[cause].detail
    assert there["chat_template"].summary == here["chat_template"].summary
    assert "does not render" in there["chat_template"].summary
    assert "models pull" in there["chat_template"].fix.text
    for what in ("need (fit's prediction)", "weights"):
        assert _evidence(there["memory_budget"], what) == _evidence(here["memory_budget"], what)


def test_a_1gb_file_and_its_split_parts_read_under_2_percent(tmp_path):
    """fit's need from the header of a 0.99 GB sparse file, whole or in 3 parts, equals the
    need doctor computes from the file on disk; the checks that need the file are named."""
    whole = sparse_gguf(tmp_path / "qwen2.5-0.5b-instruct-f16.gguf")[0]
    parts = sparse_gguf(tmp_path / "qwen2.5-0.5b-instruct-f16-split.gguf", parts=3)
    local = resolve_target(str(whole))
    on_disk = fit_need(Ctx(target=local, store=None, progress=silent, budget_bytes=512 * MiB))
    with file_server({p.name: p for p in (whole, *parts)}) as srv:
        for first, size in ((whole, whole.stat().st_size),
                            (parts[0], sum(p.stat().st_size for p in parts))):
            before = srv.sent
            url = f"{srv.url}/{first.name}"
            rep = run_remote(DoctorRequest(target=url, budget_bytes=512 * MiB),
                             resolve_remote(url), None, silent)
            assert srv.sent - before < 0.02 * size
            mem = _by_cause(rep)["memory_budget"]
            assert _evidence(mem, "need (fit's prediction)") == on_disk
            assert mem.detail == "load"
            status = {c.check: c.status for c in rep.checks}
            assert status["engine_support"] == "clear" and status["memory_budget"] == "finding"
            assert all(status[n] == "skipped" for n in status if n not in STATIC)


def test_cli_says_bytes_read_and_what_needs_the_file(cli, bad_template, tmp_path, monkeypatch):
    repo = {"smollm2.bad-template.gguf": bad_template}
    with stand_in_hub({"HuggingFaceTB/SmolLM2-GGUF": repo}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        env = {"EDGEPICK_CACHE": str(tmp_path / "cache"), "HF_ENDPOINT": hub.url}
        ref = "hf:HuggingFaceTB/SmolLM2-GGUF/smollm2.bad-template.gguf"
        res = cli("doctor", ref, "--store", str(tmp_path / "s.sqlite"), env=env)
        assert res.returncode == 1, res.stderr
        js = cli("doctor", ref, "--json", "--store", str(tmp_path / "s.sqlite"), env=env)
        assert hub.cdn.sent < 0.05 * bad_template.stat().st_size
    out = " ".join(res.stdout.split())
    assert "header read in" in res.stderr
    assert "not run without the file: file_integrity, host_load" in out
    assert f"edgepick models pull {ref} --registry REGISTRY" in out
    report = json.loads(js.stdout)
    assert report["kind"] == "remote"
    assert [f["cause"] for f in report["findings"]] == ["chat_template"]
    # the second run asked nothing
    assert "header from the cache, no request" in " ".join(js.stderr.split())


def test_404_and_truncated_header_are_one_line(cli, smollm2_q4_1, tmp_path):
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(Path(smollm2_q4_1).read_bytes()[:1_500_000])  # inside the vocabulary
    env = {"EDGEPICK_CACHE": str(tmp_path / "cache")}
    with file_server({"cut.gguf": cut}) as srv:
        for name, expected in (("missing.gguf", "HTTP 404"),
                               ("cut.gguf", "truncated GGUF: its header needs")):
            url = f"{srv.url}/{name}"
            with pytest.raises(EdgepickError, match=expected) as err:
                resolve_remote(url)
            assert "\n" not in str(err.value)
            res = cli("doctor", url, "--store", str(tmp_path / "s.sqlite"), env=env)
            assert res.returncode == 2 and res.stdout == ""
            # the message alone, however the terminal wraps it
            assert " ".join(res.stderr.split()) == f"error: {err.value}", res.stderr
        # two readings of each (the API's, the CLI's): never more than the file held
        assert srv.sent <= 2 * cut.stat().st_size
