"""Engines behind one contract (base.py), found by name through entry points (registry.py)."""

from edgepick.backends.base import Backend, Generation, LoadOptions, Vocabulary
from edgepick.backends.registry import (backend_class, backend_names, get_backend,
                                        register_backend, supports)

__all__ = ["Backend", "Generation", "LoadOptions", "Vocabulary", "backend_class", "backend_names",
           "get_backend", "register_backend", "supports"]
