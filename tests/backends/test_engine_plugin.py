"""An engine added from outside src/ (issue 23 item 6): a tiny package, registered through an
entry point written in the test, declares what it claims, its maturity, the architectures it
runs and its own settings, is listed, claims its file, and is measured by the bench stage, with
no file under src/ touched."""

from __future__ import annotations

import json

import pytest

from edgepick.backends import registry
from edgepick.errors import EdgepickError

PLUGIN = '''
import time
from typing import ClassVar

from edgepick.backends import base
from edgepick.backends.base import Backend, EngineSettings, Generation


class ToySettings(EngineSettings):
    letters_per_token: int = 1


class ToyBackend(Backend):
    """Spells the prompt back one letter per token: an engine for ".toy" text files."""
    capabilities: ClassVar[frozenset[str]] = frozenset({base.TOKENIZE, base.STREAMING,
                                                         base.IN_PROCESS})
    maturity: ClassVar[float] = 0.9
    maturity_reason: ClassVar[str] = "a toy, but a well-tested one"
    settings_model: ClassVar[type] = ToySettings

    @classmethod
    def claims(cls, path):
        return path.endswith(".toy")

    @classmethod
    def architectures(cls):
        return frozenset({"toy"})

    def load(self, candidate, options=None):
        self.own = ToySettings.of(candidate.settings)
        self.text = open(candidate.model).read()
        return 0.0

    def tokenize(self, text, add_bos=True, parse_special=True):
        return [ord(c) for c in text]

    def detokenize(self, tokens):
        return "".join(chr(t) for t in tokens)

    def generate(self, prompt, max_tokens, **kw):
        t0, times = time.perf_counter(), []
        for _ in range(max_tokens):
            times.append(time.perf_counter() - t0 + 1e-4 * (len(times) + 1))
        n = len(prompt) if isinstance(prompt, list) else len(str(prompt))
        return Generation(text=self.text[:max_tokens * self.own.letters_per_token],
                          prompt_tokens=n, generated_tokens=max_tokens, token_times=times)

    def unload(self):
        self.text = None

    def engine_version(self):
        return "toy 1.0"
'''


@pytest.fixture
def toy_engine(tmp_path, monkeypatch):
    from plugin_dist import write_plugin

    pkg = write_plugin(tmp_path / "site", "toy-engine", "toy_engine", PLUGIN,
                       "edgepick.backends", {"toy": "toy_engine:ToyBackend"})
    monkeypatch.syspath_prepend(str(pkg))
    monkeypatch.setenv("PYTHONPATH", str(pkg))  # the bench worker finds it too
    monkeypatch.setattr(registry, "ENGINES", registry.ENGINES.fresh())
    model = tmp_path / "story.toy"
    model.write_text("once upon a time " * 20)
    return str(model)


def test_an_engine_from_outside_src_is_listed_claims_its_file_and_runs_the_bench_stage(
        toy_engine, tmp_path):
    assert "toy" in registry.backend_names()
    assert registry.engine_for(toy_engine) == "toy"  # its own format, found by its claim
    from edgepick.inputs import resolve_ref

    assert resolve_ref(toy_engine).backend == "toy"  # what the user typed lands on it
    assert registry.maturity("toy") == 0.9
    cls = registry.backend_class("toy")
    assert cls.architectures() == frozenset({"toy"})
    from edgepick.bench.runner import run
    from edgepick.bench.sweeps import BenchRequest
    from edgepick.records.candidate import RuntimeSettings
    from edgepick.records.model_ref import ModelRef
    from edgepick.store import ResultStore

    ref = ModelRef.of(toy_engine, backend="toy")
    settings = RuntimeSettings(n_ctx=256, engine={"letters_per_token": 2})
    assert cls.settings_model.of(settings).letters_per_token == 2  # the engine's own knob
    # typed by the engine's model: a knob it lacks, a value it refuses, llama.cpp's flat knob
    # set for it, each one line; llama.cpp's left at their defaults are no concern of it
    problem = cls.settings_model.problem
    assert problem(RuntimeSettings(engine={"letters": 2}))[0] == "engine.letters"
    assert problem(RuntimeSettings(engine={"letters_per_token": "x"}))[0] == \
        "engine.letters_per_token"
    assert problem(RuntimeSettings(kv_type="q8_0")) == (
        "kv_type", "not a setting of this engine (its own: letters_per_token)")
    assert problem(RuntimeSettings(kv_type="f16", flash_attn=True)) is None
    with pytest.raises(EdgepickError, match="runtime.engine.letters: not a setting"):
        cls.settings_model.of(RuntimeSettings(engine={"letters": 2}))
    req = BenchRequest(models=[ref], settings=settings, prompt_lengths=[8], gen_tokens=4,
                       warmup=0, repeats=1, timeout_s=120)
    with ResultStore(str(tmp_path / "r.sqlite")) as store:
        rows = run(req, store)
    assert [r.status for r in rows] == ["ok"], [r.error for r in rows]
    assert rows[0].backend == "toy" and rows[0].metrics["decode_tps"].median > 0
    assert rows[0].settings["engine"] == {"letters_per_token": 2}
