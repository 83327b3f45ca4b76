"""The eval tests' scripted engine (tests/scripted_engine.py) as a fixture."""

from __future__ import annotations

import pytest

from scripted_engine import ScriptedBackend


@pytest.fixture
def scripted(monkeypatch, tmp_path):
    """(make_candidate(name, answer_fn), store): candidates on small files answered by script."""
    from edgepick.evaluate import consistency, fidelity, outputs
    from edgepick.records.candidate import Candidate
    from edgepick.records.model_ref import ModelRef
    from edgepick.store import ResultStore

    ScriptedBackend.calls = []
    ScriptedBackend.answers = {}
    ScriptedBackend.clock = None
    for module in (outputs, consistency, fidelity):  # where evaluation asks for its engine
        monkeypatch.setattr(module, "get_backend", lambda name, **_: ScriptedBackend())

    def make(name: str, answer) -> Candidate:
        path = tmp_path / f"{name}.gguf"
        path.write_bytes(name.encode() * 8)
        ScriptedBackend.answers[str(path)] = answer
        return Candidate(ref=ModelRef.file(str(path), label=name), label=name)

    store = ResultStore(tmp_path / "results.sqlite")
    yield make, store
    store.close()
