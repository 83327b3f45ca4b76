"""Activating a registry version: verify the SHA-256, mark it pending, start its engine and wait
until healthy, then commit (seed 001 §6.4). `start` is what "start its engine" means where the
activation runs: in a serving process it switches the live pool; from the CLI alone it starts a
llama-server, checks it answers, and stops it."""

from __future__ import annotations

import asyncio
from typing import Awaitable, Callable

from edgepick.registry.store import Registry, crash_point


async def activate(registry: Registry, name: str, version: str,
                   start: Callable[[str], Awaitable[None]]) -> str:
    """Make `name@version` active; returns the version it replaced (or "")."""
    before = registry.model(name).active or ""
    # a mismatch raises here, before anything changed; hashing runs off the event loop so a
    # serving process keeps answering meanwhile
    path = await asyncio.to_thread(registry.verify, name, version)
    crash_point("activate-verified")
    registry.mark_pending(name, version)
    crash_point("activate-pending")
    try:
        await start(str(path))
    except BaseException:
        registry.clear_pending(name)
        raise
    crash_point("activate-started")
    registry.commit(name, version)
    crash_point("activate-committed")
    return before


async def rollback(registry: Registry, name: str,
                   start: Callable[[str, str], Awaitable[None]],
                   reason: str = "") -> tuple[str, str]:
    """Go back to the version active before; returns (from, to). `reason` goes into the
    registry's events (a canary's rollback says which figure was worse)."""
    current = registry.model(name).active or ""
    target = registry.previous(name)

    async def start_target(path: str) -> None:
        await start(target, path)

    await activate(registry, name, target, start_target)
    registry.pop_history(name, current)
    registry.record(name, "rollback", target, f"from {current}" + (f": {reason}" if reason else ""))
    return current, target
