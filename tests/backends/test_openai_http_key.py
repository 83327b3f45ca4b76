"""A cloud reference that needs a key: the endpoint names the environment variable holding it
(`--reference-key-env`, `eval.reference_api_key_env`, a candidate's `api_key_env`), the backend
sends it as a Bearer token over https (a certificate trusted through SSL_CERT_FILE) or http, and
the key itself reaches no store, output or deploy.yaml."""

from __future__ import annotations

import pytest

from edgepick.errors import EdgepickError
from edgepick.inputs import resolve_ref
from keyed_cloud import ANSWER, KeyedCloud, self_signed

KEY = "sk-test-7f3e9c"  # a made-up key: what must never be written anywhere
VAR = "EDGEPICK_TEST_CLOUD_KEY"


@pytest.fixture(scope="module")
def cert(tmp_path_factory):
    return self_signed(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def https_cloud(cert):
    with KeyedCloud(KEY, cert) as cloud:
        yield cloud


def _load(ref, monkeypatch, cert, key: str | None):
    from edgepick.backends.openai_http import OpenAIHttpBackend
    from edgepick.records.candidate import Candidate

    monkeypatch.setenv("SSL_CERT_FILE", str(cert[0]))
    if key is None:
        monkeypatch.delenv(VAR, raising=False)
    else:
        monkeypatch.setenv(VAR, key)
    backend = OpenAIHttpBackend(timeout_s=30)
    backend.load(Candidate(ref=ref))
    return backend


def test_the_key_goes_as_a_bearer_token_over_https(https_cloud, cert, monkeypatch):
    ref = resolve_ref(https_cloud.url, api_key_env=VAR)
    assert ref.api_key_env == VAR and "api_key_env" in ref.model_dump()
    backend = _load(ref, monkeypatch, cert, KEY)
    try:
        assert backend.generate("Is this good?", 4, chat=True).text == ANSWER
    finally:
        backend.unload()
    assert f"Bearer {KEY}" in https_cloud.seen_auth


def test_without_the_key_one_line_says_what_to_set(https_cloud, cert, monkeypatch):
    with pytest.raises(EdgepickError, match=f"the API key variable {VAR} is not set"):
        _load(resolve_ref(https_cloud.url, api_key_env=VAR), monkeypatch, cert, None)
    refused = https_cloud.refused
    with pytest.raises(EdgepickError, match="HTTP 401.*key-protected endpoint") as exc:
        _load(resolve_ref(https_cloud.url), monkeypatch, cert, KEY)
    assert https_cloud.refused == refused + 1 and KEY not in str(exc.value)
    with pytest.raises(EdgepickError, match=f"HTTP 401.*the key in {VAR} was refused") as exc:
        _load(resolve_ref(https_cloud.url, api_key_env=VAR), monkeypatch, cert, "sk-wrong")
    assert "sk-wrong" not in str(exc.value) and "--reference-key-env" not in str(exc.value)


def test_a_key_variable_goes_with_an_endpoint_only():
    with pytest.raises(EdgepickError, match="goes with an endpoint"):
        resolve_ref("tiny", api_key_env=VAR)
    assert "api_key_env" not in resolve_ref("http://127.0.0.1:9/v1#m").model_dump()


@pytest.mark.parametrize("scheme", ["https", "http"])
def test_eval_against_a_keyed_reference_stores_no_key(scheme, cert, cli, tmp_path):
    store = tmp_path / "s.sqlite"
    with KeyedCloud(KEY, cert if scheme == "https" else None) as cloud:
        assert cloud.url.startswith(f"{scheme}://")
        r = cli("eval", "-m", "tiny", "-r", cloud.url, "--reference-key-env", VAR,
                "--limit", "2", "--ctx", "512", "--store", str(store), "--out",
                str(tmp_path / "out"), "--json",
                env={VAR: KEY, "SSL_CERT_FILE": str(cert[0])})
    assert r.returncode == 0, r.stderr
    assert cloud.refused == 0 and cloud.seen_auth
    written = [store.read_bytes()] + [p.read_bytes() for p in (tmp_path / "out").iterdir()]
    for blob in [*written, r.stdout.encode(), r.stderr.encode()]:
        assert KEY.encode() not in blob
    assert VAR.encode() in store.read_bytes()  # the variable's name is what is kept


def test_deploy_yaml_names_the_reference_key_variable():
    from edgepick.decide.deploy import _cloud
    from edgepick.records.decision import CandidateSummary

    s = CandidateSummary.model_construct(reference="https://api.example.com/v1#gpt-4o",
                                         reference_api_key_env="OPENAI_API_KEY")
    cloud = _cloud(s)
    assert (cloud.url, cloud.model, cloud.api_key_env) == \
        ("https://api.example.com/v1", "gpt-4o", "OPENAI_API_KEY")
    s = CandidateSummary.model_construct(reference="https://h/v1#m", reference_api_key_env=None)
    assert _cloud(s).api_key_env == "EDGEPICK_CLOUD_API_KEY"  # the documented default


def test_a_plan_names_the_key_variable_and_run_can_override_it(tmp_path):
    from edgepick.plan.loader import load_plan

    plan = tmp_path / "p.yaml"
    plan.write_text("candidates: [{model: tiny}]\n"
                    "eval: {reference: 'https://127.0.0.1:9/v1#cloud', "
                    "reference_api_key_env: OPENAI_API_KEY}\n", encoding="utf-8")
    lp = load_plan(str(plan))
    assert lp.ref(lp.plan.eval.reference).api_key_env == "OPENAI_API_KEY"
    lp.use_reference_key_env("DEEPSEEK_API_KEY")
    assert lp.ref(lp.plan.eval.reference).api_key_env == "DEEPSEEK_API_KEY"
    plan.write_text("candidates: [{model: tiny}]\n"
                    "eval: {reference: tiny, reference_api_key_env: OPENAI_API_KEY}\n",
                    encoding="utf-8")
    with pytest.raises(EdgepickError, match="reference_api_key_env goes with an endpoint"):
        load_plan(str(plan))
