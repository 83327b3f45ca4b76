"""A GGUF read where it lives: the header through range requests from a local server with real
range support, the same spec as the file on disk, split parts summed, the cache answering a
second time without a request, and each failure in one line with nothing downloaded."""

from __future__ import annotations

import shutil

import pytest

from remote_hub import file_server, stand_in_hub
from sparse_gguf import sparse_gguf

from edgepick.errors import EdgepickError
from edgepick.inputs import resolve_ref
from edgepick.models.gguf_info import gguf_spec
from edgepick.models.spec import load_spec

GB = 1 << 30


@pytest.fixture(scope="module")
def sparse(tmp_path_factory):
    """Qwen2.5-0.5B's shape at F16 (0.99 GB, a hole for the weights), whole and in 3 parts."""
    d = tmp_path_factory.mktemp("sparse")
    whole = sparse_gguf(d / "qwen2.5-0.5b-instruct-f16.gguf")[0]
    split = sparse_gguf(d / "qwen2.5-0.5b-instruct-f16-split.gguf", parts=3)
    return whole, split


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEPICK_CACHE", str(tmp_path / "cache"))
    for var in ("HF_ENDPOINT", "HF_TOKEN", "EDGEPICK_OFFLINE", "HF_HUB_OFFLINE"):
        monkeypatch.delenv(var, raising=False)


def _same_spec(remote_spec, local_spec) -> None:
    skip = {"source"}
    assert remote_spec.model_dump(exclude=skip) == local_spec.model_dump(exclude=skip)


def test_header_of_a_1gb_file_reads_under_2_percent_and_matches_the_file(sparse):
    whole, _ = sparse
    assert whole.stat().st_size > 0.9 * GB
    with file_server({whole.name: whole}) as srv:
        ref = resolve_ref(f"{srv.url}/{whole.name}", remote_ok=True)
        assert srv.sent < 0.02 * whole.stat().st_size
        assert all(s.status == 206 for s in srv.seen)
        _same_spec(load_spec(ref), gguf_spec(whole))
        assert ref.remote.bytes_read == srv.sent and ref.remote.requests == len(srv.seen)
        again = resolve_ref(f"{srv.url}/{whole.name}", remote_ok=True)
        assert len(srv.seen) == ref.remote.requests  # the second time: no request at all
        assert again.remote.requests == 0 and again.remote == ref.remote.model_copy(
            update={"requests": 0, "bytes_read": 0})


def test_bundled_model_by_url_is_the_same_model(smollm2_q4_1, tmp_path):
    from pathlib import Path

    f = Path(smollm2_q4_1)
    with file_server({f.name: f}) as srv:
        ref = resolve_ref(f"{srv.url}/{f.name}", remote_ok=True)
    _same_spec(load_spec(ref), gguf_spec(f))
    assert ref.kind == "remote" and ref.path is None
    with pytest.raises(EdgepickError, match="models pull"):
        ref.local_path("bench runs it")


def test_split_parts_are_read_and_summed(sparse):
    whole, parts = sparse
    with file_server({p.name: p for p in parts}) as srv:
        ref = resolve_ref(f"{srv.url}/{parts[1].name}", remote_ok=True)  # any part names all
    assert [p.url.rsplit("/", 1)[-1] for p in ref.remote.parts] == [p.name for p in parts]
    spec, one = load_spec(ref), gguf_spec(whole)
    assert spec.n_params == one.n_params and spec.weights_bytes == one.weights_bytes
    assert sorted(t.name for t in spec.tensors) == sorted(t.name for t in one.tensors)
    assert spec.file_size_bytes == sum(p.stat().st_size for p in parts)
    assert ref.label == "qwen2.5-0.5b-instruct-f16-split"


def test_a_changed_file_is_read_again_after_the_cache_ages(sparse, tmp_path, monkeypatch):
    from edgepick.models import remote_header

    whole, _ = sparse
    copy = tmp_path / "m.gguf"
    shutil.copyfile(whole, copy)
    with file_server({"m.gguf": copy}) as srv:
        first = resolve_ref(f"{srv.url}/m.gguf", remote_ok=True)
        monkeypatch.setattr(remote_header, "MAX_AGE_S", 0)
        same = resolve_ref(f"{srv.url}/m.gguf", remote_ok=True)
        assert same.remote.requests == 1 and same.remote.bytes_read == 4  # revalidated only
        with open(copy, "r+b") as fh:  # another upload: a new ETag
            fh.seek(whole.stat().st_size - 1)
            fh.write(b"\1")
        changed = resolve_ref(f"{srv.url}/m.gguf", remote_ok=True)
    assert changed.remote.parts[0].etag != first.remote.parts[0].etag
    assert changed.remote.requests > 1


def test_failures_are_one_line_and_download_nothing(sparse, tmp_path):
    whole, _ = sparse
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(whole.read_bytes()[:2_000_000])  # ends inside the vocabulary
    page = tmp_path / "page.gguf"
    page.write_text("<html>not a model</html>")
    with file_server({whole.name: whole, "cut.gguf": cut, "page.gguf": page}) as srv:
        cases = {"missing.gguf": "HTTP 404", "cut.gguf": "truncated GGUF: its header needs",
                 "page.gguf": "not a GGUF file"}
        for name, expected in cases.items():
            with pytest.raises(EdgepickError) as err:
                resolve_ref(f"{srv.url}/{name}", remote_ok=True)
            assert expected in str(err.value) and "\n" not in str(err.value)
        srv.ignore_ranges = True
        before = srv.sent
        with pytest.raises(EdgepickError, match="ignores range requests") as err:
            resolve_ref(f"{srv.url}/{whole.name}", remote_ok=True)
        assert "\n" not in str(err.value)
        # closed before its body was read: at most what the sockets buffered on the way
        assert srv.sent - before < 0.02 * whole.stat().st_size


def test_commands_that_run_a_model_refuse_a_remote_one():
    with pytest.raises(EdgepickError, match="models pull"):
        resolve_ref("https://127.0.0.1:9/m.gguf")


def test_hub_reference_token_and_redirect(sparse, tmp_path, monkeypatch):
    whole, parts = sparse
    repo = {"qwen2.5-0.5b-instruct-fp16.gguf": whole,
            **{p.name.replace("-f16-split", "-q8_0"): p for p in parts}}
    with stand_in_hub({"Qwen/Qwen2.5-0.5B-Instruct-GGUF": repo}, token="hf_right") as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setenv("HF_TOKEN", "hf_right")
        with pytest.raises(EdgepickError) as err:  # several models: listed, none guessed
            resolve_ref("hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF", remote_ok=True)
        listing = str(err.value).splitlines()
        assert "holds 2 GGUF models" in listing[0]
        assert any("-q8_0-00001-of-00003.gguf" in ln and "Q8_0" in ln for ln in listing)
        assert any("fp16.gguf" in ln and "F16" in ln for ln in listing)
        ref = resolve_ref("hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-fp16.gguf"
                          "@main", remote_ok=True)
        assert ref.remote.parts[0].sha256 == hub.sha256(whole)  # the LFS oid, X-Linked-Etag
        _same_spec(load_spec(ref), gguf_spec(whole))
        assert all(s.authorization == "Bearer hf_right" for s in hub.seen)
        assert hub.cdn.seen and all(s.authorization is None for s in hub.cdn.seen)
        monkeypatch.setenv("HF_TOKEN", "hf_wrong")
        with pytest.raises(EdgepickError, match="HTTP 401.*refused") as err:
            resolve_ref("hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF/"
                        "qwen2.5-0.5b-instruct-q8_0-00001-of-00003.gguf", remote_ok=True)
        assert "hf_wrong" not in str(err.value) and "\n" not in str(err.value)
        monkeypatch.setenv("HF_TOKEN", "hf_right")
        hub.cdn.demand_token = True  # a CDN that wants the token it must never be sent
        with pytest.raises(EdgepickError, match="HTTP 401 from 127.0.0.1:.*redirected") as err:
            resolve_ref("hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF/"
                        "qwen2.5-0.5b-instruct-q8_0-00001-of-00003.gguf", remote_ok=True)
        assert "\n" not in str(err.value)
        assert all(s.authorization is None for s in hub.cdn.seen)
        hub.cdn.demand_token = False
        hub.cdn.files.clear()  # the redirect's host has lost the file
        with pytest.raises(EdgepickError, match="HTTP 404") as err:
            resolve_ref("hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF/"
                        "qwen2.5-0.5b-instruct-q8_0-00001-of-00003.gguf", remote_ok=True)
        assert str(err.value).startswith("hf:Qwen/") and "\n" not in str(err.value)


def test_offline_uses_the_cache_and_refuses_what_it_lacks(sparse, monkeypatch):
    whole, _ = sparse
    with file_server({whole.name: whole}) as srv:
        url = f"{srv.url}/{whole.name}"
        resolve_ref(url, remote_ok=True)
        monkeypatch.setenv("EDGEPICK_OFFLINE", "1")
        assert resolve_ref(url, remote_ok=True).remote.requests == 0
        with pytest.raises(EdgepickError, match="offline"):
            resolve_ref(f"{srv.url}/other.gguf", remote_ok=True)


def test_cli_fit_by_url_prints_the_figures_of_the_file(cli, sparse, tmp_path):
    whole, _ = sparse
    env = {"EDGEPICK_CACHE": str(tmp_path / "cache")}
    args = ["--device", "raspberry-pi-5", "--ctx", "2048,8192", "--json"]
    local = cli("fit", "-m", str(whole), *args, env=env)
    assert local.returncode == 0, local.stderr
    with file_server({whole.name: whole}) as srv:
        remote = cli("fit", "-m", f"{srv.url}/{whole.name}", *args, env=env)
        assert remote.returncode == 0, remote.stderr
        assert srv.sent < 0.02 * whole.stat().st_size
    assert "header read in" in remote.stderr and "% " not in remote.stderr.split("(")[0]
    import json

    def figures(out: str) -> list[dict]:
        return [{k: v for k, v in row.items() if k not in ("model", "source")}
                for row in json.loads(out)]

    assert figures(remote.stdout) == figures(local.stdout)


def test_models_host_serves_a_bundled_model_by_url(smollm2_q4_1):
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "edgepick", "models", "host", "smollm2",
                             "--for", "60s"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith(".gguf")
        ref = resolve_ref(url, remote_ok=True)
        _same_spec(load_spec(ref), gguf_spec(smollm2_q4_1))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
