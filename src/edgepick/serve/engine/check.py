"""Whether a model file loads in llama-server: the CLI's `start` for a registry activation when
no server is running (registry/activation.py)."""

from __future__ import annotations

from edgepick.serve.engine.llama_server import Engine, EngineSpec


async def check_engine(path: str, name: str, version: str) -> None:
    """Start a llama-server on the file, wait until healthy, stop it: the CLI's proof that the
    version loads when no server is running."""
    engine = Engine(EngineSpec(path=path, name=name, version=version, slots=1))
    try:
        await engine.start()
    finally:
        await engine.stop()
