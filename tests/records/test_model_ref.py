"""A model is resolved once into a ModelRef (by the input layer), carried by its Candidate; one
RuntimeSettings serves the plan, the stages and the CLI defaults."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from edgepick.errors import EdgepickError, InputError
from edgepick.inputs import resolve_ref
from edgepick.records.candidate import DEFAULTS, Candidate, RuntimeSettings
from edgepick.records.model_ref import ModelRef

SRC = Path(__file__).resolve().parents[2] / "src" / "edgepick"


def test_candidate_carries_its_model_ref_and_round_trips(tiny_model):
    ref = resolve_ref("tiny")
    c = Candidate(ref=ref, settings=RuntimeSettings(n_ctx=256))
    assert c.model == tiny_model and c.backend == "llama_cpp" and c.name == "tiny"
    dumped = c.model_dump()
    assert dumped["model"] == tiny_model and dumped["ref"]["kind"] == "bundled"
    again = Candidate.model_validate(dumped)  # as a worker process receives it
    assert again == c and again.ref.kind == "bundled"


def test_content_key_keeps_its_meaning(tiny_model):
    from edgepick.store.identity import content_key, model_identity

    settings = RuntimeSettings(threads=1)
    c = Candidate(ref=resolve_ref(tiny_model), settings=settings)
    payload = {"model": model_identity(tiny_model), "backend": "llama_cpp",
               "settings": settings.model_dump(), "extra": [{"n": 1}]}
    old = hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()
    assert content_key(c, {"n": 1}) == old[:32]  # rows stored before this change are reused
    # the bundled name and the path are one model: one key
    assert content_key(Candidate(ref=resolve_ref("tiny"), settings=settings)) == content_key(c)


def test_endpoint_backend_comes_from_the_ref_not_the_spelling():
    ref = resolve_ref("http://127.0.0.1:9/v1#m")
    assert (ref.kind, ref.backend, ref.url, ref.served_name) == \
        ("endpoint", "openai_http", "http://127.0.0.1:9/v1", "m")
    c = Candidate(ref=ref)
    assert c.backend == "openai_http" and c.model == "http://127.0.0.1:9/v1#m"
    with pytest.raises(EdgepickError, match="OpenAI-compatible URL"):
        resolve_ref("ftp://x/v1#m")


def test_a_record_never_resolves_a_bundled_name(tiny_model):
    # records hold data: a bare `model` is a locator, and a bundled name is the input layer's
    assert Candidate(model=tiny_model).ref.kind == "file"
    assert Candidate(model="tiny").ref.kind == "file"  # a path named tiny, not the bundled one
    assert not hasattr(ModelRef, "parse")
    # nor hashes a file: content identity is the store's (store/identity.py)
    assert not hasattr(ModelRef, "identity") and not hasattr(Candidate, "content_key")


def test_no_second_resolver_and_no_backend_guess_in_the_stages():
    banned = re.compile(r"resolve_model|candidate_from_spec|parse_model_url|_backend_for|"
                        r"ModelRef\.parse\b")
    found = [f"{p.relative_to(SRC)}:{i}" for p in SRC.rglob("*.py")
             for i, line in enumerate(p.read_text().splitlines(), 1) if banned.search(line)]
    assert not found, found


def test_plan_runtime_is_the_one_runtime_settings(tmp_path):
    from edgepick.plan.loader import load_plan
    from edgepick.plan.model import Plan

    assert Plan().runtime == RuntimeSettings() == DEFAULTS
    plan = tmp_path / "p.yaml"
    plan.write_text("candidates: [{model: tiny}]\neval: {enabled: false}\n"
                    "runtime: {threads: 1, swa_full: true, mmap: false}\n")
    lp = load_plan(plan)
    assert isinstance(lp.plan.runtime, RuntimeSettings) and lp.plan.runtime.swa_full
    plan.write_text("candidates: [{model: tiny}]\neval: {enabled: false}\n"
                    "runtime: {thread: 1}\n")
    with pytest.raises(InputError) as err:
        load_plan(plan)
    assert err.value.line == 3 and "runtime.thread" in str(err.value)


def test_the_plan_loader_resolves_each_model_once(tmp_path, monkeypatch):
    from edgepick.plan.loader import load_plan
    from edgepick.plan.runner import plan_candidates

    import edgepick.plan.loader as loader

    calls: list[str] = []

    def counting(spec, **kw):
        calls.append(spec)
        return resolve_ref(spec, **kw)

    monkeypatch.setattr(loader, "resolve_ref", counting)
    plan = tmp_path / "p.yaml"
    plan.write_text("candidates: [{model: tiny, reference: tiny}]\n"
                    "eval: {reference: tiny, limit: 1}\n")
    lp = load_plan(plan)
    (c,) = plan_candidates(lp)
    assert c.ref.kind == "bundled" and c.reference is c.ref
    assert calls == ["tiny"]  # the candidate, its reference and the eval reference: one model
