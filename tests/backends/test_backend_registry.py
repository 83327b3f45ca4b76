"""The Backend contract: engines found through the `edgepick.backends` entry-point group, lazily,
with declared capabilities that callers check instead of probing attributes."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from edgepick.backends import base, registry
from edgepick.backends.base import Backend
from edgepick.errors import EdgepickError

PLUGIN = '''
from typing import ClassVar

from edgepick.backends import base
from edgepick.backends.base import Backend, Generation


class EchoBackend(Backend):
    """Answers with the prompt reversed: an engine shipped by another package."""
    capabilities: ClassVar[frozenset[str]] = frozenset({base.STREAMING})

    def load(self, candidate, options=None):
        self.loaded = candidate.model
        return 0.0

    def generate(self, prompt, max_tokens, **kw):
        text = str(prompt)[::-1][:max_tokens]
        return Generation(text=text, prompt_tokens=len(str(prompt)), generated_tokens=len(text))

    def unload(self):
        self.loaded = None

    def engine_version(self):
        return "echo 1.0"
'''


@pytest.fixture
def fresh_registry(monkeypatch):
    """Forget what was discovered, so entry points are read again (and again after the test)."""
    monkeypatch.setattr(registry, "ENGINES", registry.ENGINES.fresh())


def test_another_package_registers_a_backend_through_its_entry_point(tmp_path, monkeypatch,
                                                                     fresh_registry, tiny_model):
    (tmp_path / "echo_engine.py").write_text(PLUGIN)
    dist = tmp_path / "echo_engine-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: echo-engine\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[edgepick.backends]\necho = echo_engine:EchoBackend\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    assert "echo" in registry.backend_names()
    assert "echo_engine" not in sys.modules  # listed, not imported
    b = registry.get_backend("echo")
    assert b.name == "echo" and registry.supports("echo", base.STREAMING)
    assert not registry.supports("echo", base.LOGITS)
    from edgepick.records import Candidate

    b.load(Candidate(model=tiny_model, backend="echo"))
    assert b.generate("abc", 8).text == "cba"
    with pytest.raises(EdgepickError, match="echo backend cannot return full logits"):
        b.logits([1, 2, 3])
    # the built-ins register the same way and are still there
    assert {"llama_cpp", "openai_http", "echo"} <= set(registry.backend_names())


def test_unknown_names_suggest_the_closest_engine(fresh_registry):
    with pytest.raises(EdgepickError, match="unknown backend 'llama_ccp'; did you mean 'llama_cpp'"):
        registry.get_backend("llama_ccp")
    with pytest.raises(EdgepickError, match="unknown backend 'tensorrt' \\(known: "):
        registry.get_backend("tensorrt")


def test_a_broken_entry_point_is_one_line(fresh_registry):
    registry.register_backend("broken", "no_such_module_xyz:Engine")
    with pytest.raises(EdgepickError, match="backend 'broken' .* could not be imported"):
        registry.get_backend("broken")
    registry.register_backend("notabackend", "json:JSONDecoder")
    with pytest.raises(EdgepickError, match="not a subclass"):
        registry.get_backend("notabackend")


def test_capabilities_are_declared_not_probed():
    assert registry.supports("llama_cpp", base.LOGITS)
    assert registry.supports("llama_cpp", base.IN_PROCESS)
    assert registry.supports("openai_http", base.CONCURRENT_SEQUENCES)
    assert not registry.supports("openai_http", base.IN_PROCESS)
    assert not registry.supports("openai_http", base.LOGITS)
    with pytest.raises(ValueError, match="unknown capability"):
        registry.supports("llama_cpp", "telepathy")
    with pytest.raises(TypeError, match="unknown capabilities"):
        type("Typo", (Backend,), {"capabilities": frozenset({"logit"})})


def test_importing_edgepick_and_help_import_no_engine():
    code = textwrap.dedent("""
        import sys
        import edgepick.cli.app as app
        try:
            app.main(["--help"])
        except SystemExit:
            pass
        loaded = [m for m in ("llama_cpp", "edgepick.backends.llama_cpp",
                              "edgepick.backends.openai_http", "httpx") if m in sys.modules]
        print("LOADED", loaded, file=sys.stderr)
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "LOADED []" in r.stderr, r.stderr[-2000:]
