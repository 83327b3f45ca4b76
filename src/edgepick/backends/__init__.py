"""Engines behind one protocol, registered by name (SPEC §13)."""

from edgepick.backends.base import Backend, Generation, get_backend, register_backend, backend_names

__all__ = ["Backend", "Generation", "get_backend", "register_backend", "backend_names"]
