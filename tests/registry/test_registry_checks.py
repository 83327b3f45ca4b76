"""What `models add` refuses before anything is stored (issue 25 item 9): a file that is not a
GGUF, an empty or cut-short one, and names or versions with control characters; and an
activation that fails keeps the engine's log and quotes it."""

from __future__ import annotations

import asyncio
import shutil

import pytest

from edgepick.errors import EdgepickError
from edgepick.registry.store import Registry


@pytest.mark.parametrize("content, expected", [
    (b"", "empty"),
    (b"PK\x03\x04 a zip file, not a model", "not a GGUF"),
    (b"GGUF\x03\x00", "GGUF"),
    (b"GGUF\x03\x00\x00\x00" + b"\xff" * 16 + b"junk", "GGUF"),
])
def test_add_refuses_what_is_not_a_gguf_model(tmp_path, content, expected):
    bad = tmp_path / "model.gguf"
    bad.write_bytes(content)
    reg = Registry(tmp_path / "reg", create=True)
    with pytest.raises(EdgepickError) as exc:
        reg.add(bad, "m", "1")
    assert expected in str(exc.value) and str(bad) in str(exc.value)
    assert "m" not in reg.state().models
    assert not (tmp_path / "reg" / "models").exists()


@pytest.mark.parametrize("name, version", [("m\n", "1"), ("m", "1\n"), ("m\t", "1"),
                                           ("m", "v\x00"), ("", "1"), ("-m", "1")])
def test_add_refuses_names_and_versions_with_control_characters(tiny_model, tmp_path, name,
                                                                version):
    reg = Registry(tmp_path / "reg", create=True)
    with pytest.raises(EdgepickError) as exc:
        reg.add(tiny_model, name, version)
    assert "letters, digits" in str(exc.value)
    assert reg.state().models == {}


def test_add_accepts_a_real_model_and_refuses_it_cut_short(tiny_model, tmp_path):
    reg = Registry(tmp_path / "reg", create=True)
    reg.add(tiny_model, "tiny", "1")
    assert reg.model("tiny").versions["1"].size > 0
    cut = tmp_path / "cut.gguf"
    with open(tiny_model, "rb") as src:
        cut.write_bytes(src.read(1 << 20))  # the header whole, the tensors mostly gone
    with pytest.raises(EdgepickError) as exc:
        reg.add(cut, "tiny", "2")
    assert "truncated" in str(exc.value)
    assert list(reg.model("tiny").versions) == ["1"]


def test_failed_activation_keeps_and_quotes_the_engine_log(tiny_model, tmp_path):
    """A GGUF whose header parses but whose tensors are gone: llama-server fails to load it,
    and the error quotes the engine's own last lines instead of '(no log)'."""
    from serve_harness import need_llama_server

    from edgepick.serve.engine.llama_server import Engine, EngineSpec

    need_llama_server()
    cut = tmp_path / "cut.gguf"
    with open(tiny_model, "rb") as src, open(cut, "wb") as dst:
        shutil.copyfileobj(src, dst)
    with open(cut, "r+b") as fh:  # keep the header, drop the tensor data
        fh.truncate(cut.stat().st_size // 2)
    engine = Engine(EngineSpec(path=str(cut), name="cut", slots=1), log_dir=tmp_path)
    with pytest.raises(EdgepickError) as exc:
        asyncio.run(engine.start(timeout_s=60))
    msg = str(exc.value)
    assert "(no log)" not in msg and "(empty log)" not in msg
    assert engine.log_path.exists() and str(engine.log_path) in msg
