"""A registry version with a LoRA adapter (issue 34 item 6): the adapter is checked against the
model when added, copied in and pinned by its SHA-256 beside the model's; serve from the
registry runs the version with it, and an adapter whose bytes changed is refused like a model
file would be."""

from __future__ import annotations

import pytest

from edgepick.errors import EdgepickError
from edgepick.registry.store import ChecksumMismatch, Registry, sha256_of
from lora_synth import write_lora


def test_an_adapter_is_pinned_beside_the_model_and_served_with_its_version(tiny_model, tmp_path):
    from edgepick.serve.assemble import from_registry

    lora = write_lora(tiny_model, tmp_path / "tuned.gguf", rank=4, blocks=2)
    reg = Registry(tmp_path / "reg", create=True)
    ve = reg.add(tiny_model, "tiny", "1", adapter=lora, adapter_scale=0.5)
    assert ve.adapter.sha256 == sha256_of(lora) and ve.adapter.scale == 0.5
    reg.add(tiny_model, "tiny", "0")  # a version without one
    assert reg.adapter_of("tiny", "0") is None
    got = reg.adapter_of("tiny", "1")
    assert got.sha256 == ve.adapter.sha256 and got.path.startswith(str(tmp_path / "reg"))
    src = from_registry(Registry(tmp_path / "reg"), "tiny@1", {})
    assert src.runtime.adapter == got
    # the copy in the registry changed: refused, as a changed model file is
    path = tmp_path / "reg" / ve.adapter.file
    path.write_bytes(path.read_bytes()[:-2] + b"\0\0")
    with pytest.raises(ChecksumMismatch, match="its adapter"):
        reg.verify("tiny", "1")


def test_an_adapter_for_another_model_is_refused_when_added(tiny_model, smollm2_q4_1, tmp_path):
    lora = write_lora(smollm2_q4_1, tmp_path / "other.gguf", rank=4, blocks=2)
    reg = Registry(tmp_path / "reg", create=True)
    with pytest.raises(EdgepickError):
        reg.add(tiny_model, "tiny", "1", adapter=tiny_model)  # a model, not an adapter
    assert "tiny" not in reg.state().models  # nothing half-added
    reg.add(tiny_model, "tiny", "2", adapter=lora)  # same architecture and shapes: accepted


def test_serving_or_activating_a_version_hashes_its_adapter_once(tiny_model, tmp_path,
                                                                  monkeypatch):
    """verify checks the adapter; what starts the engine afterwards (serve from the registry, an
    activation's switch) takes it from there instead of reading its bytes again."""
    import asyncio
    from pathlib import Path
    from types import SimpleNamespace

    from edgepick.registry import store
    from edgepick.registry.activation import activate
    from edgepick.serve.assemble import from_registry
    from edgepick.serve.pool.control import RegistryControl
    from edgepick.serve.engine.process import EngineSpec

    lora = write_lora(tiny_model, tmp_path / "tuned.gguf", rank=4, blocks=2)
    reg = Registry(tmp_path / "reg", create=True)
    reg.add(tiny_model, "tiny", "0")
    ve = reg.add(tiny_model, "tiny", "1", adapter=lora, adapter_scale=0.5)
    hashed: list[str] = []
    real = store.sha256_of
    monkeypatch.setattr(store, "sha256_of", lambda p: hashed.append(Path(p).name) or real(p))
    adapter = Path(ve.adapter.file).name
    assert from_registry(reg, "tiny@1", {}).runtime.adapter.sha256 == ve.adapter.sha256
    assert hashed.count(adapter) == 1
    hashed.clear()
    started = []

    async def switch_to(spec, cause):
        started.append(spec)

    ctl = RegistryControl(reg, SimpleNamespace(spec=EngineSpec(path=tiny_model, name="tiny",
                                                               version="0"),
                                               switch_to=switch_to))
    asyncio.run(activate(reg, "tiny", "1", lambda path: ctl.switch(path, "1", "activate")))
    assert hashed.count(adapter) == 1 and started[0].runtime.adapter.scale == 0.5
