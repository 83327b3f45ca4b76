"""The results store: SQLite, keyed by content hash, so interrupted runs resume."""

from edgepick.store.results import ResultStore, default_store_path

__all__ = ["ResultStore", "default_store_path"]
