"""The progress callback every stage entry point takes: `tick(done, total, what)`."""

from __future__ import annotations

from typing import Callable

Tick = Callable[[int, int, str], None]


def silent(done: int, total: int, what: str) -> None:
    """For callers that show no progress."""
