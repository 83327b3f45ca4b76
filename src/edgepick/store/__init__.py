"""The results store: SQLite, keyed by content hash, so interrupted runs resume; every row
belongs to the runs that measured or reused it."""

from edgepick.store.results import ResultStore, RunInfo, default_store_path

__all__ = ["ResultStore", "RunInfo", "default_store_path"]
