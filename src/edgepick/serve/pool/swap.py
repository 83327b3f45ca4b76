"""Hot swap by policy: read the device signals, pick the rule that holds, and switch the served
version through the registry (sha256 verified, new engine healthy before the switch) — seed 000
§4.3 (switch by battery or task), seed 001 §6.3. A policy swap is a serving choice: it does not
change the registry's active version, which stays the default."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
import time
from pathlib import Path

from edgepick.errors import EdgepickError
from edgepick.registry.store import Registry, split_ref
from edgepick.serve.pool.edge import EdgePool
from edgepick.serve.pool.policy_file import SwapPolicy, SwapRule
from edgepick.serve.pool.signals import read_signals

log = logging.getLogger("edgepick.serve")


class HotSwap:
    def __init__(self, policy: SwapPolicy, registry: Registry, pool: EdgePool,
                 signals_file: Path | None = None) -> None:
        self.policy = policy
        self.registry = registry
        self.pool = pool
        self.signals_file = signals_file or policy.signals_file
        self.current: SwapRule | None = None
        self.base_name = pool.spec.name
        self._last_swap = -math.inf
        for rule in policy.rules:  # a rule naming an unknown version fails at start, not later
            self.target(rule.use)
        if policy.default:
            self.target(policy.default)

    def target(self, use: str) -> tuple[str, str]:
        name, version = split_ref(use) if "@" in use else (self.base_name, use)
        self.registry.path_of(name, version or "")
        return name, version or ""

    def default_target(self) -> tuple[str, str]:
        if self.policy.default:
            return self.target(self.policy.default)
        active = self.registry.model(self.base_name).active
        if active is None:
            raise EdgepickError(f"{self.base_name} has no active version in the registry")
        return self.base_name, active

    async def check_once(self) -> bool:
        """One look at the signals; True when it swapped."""
        signals = read_signals(self.signals_file)
        self.pool.metrics.policy_checks.inc()
        rule = self.policy.choose(signals, self.current)
        name, version = self.target(rule.use) if rule else self.default_target()
        spec = self.pool.spec
        if (name, version) == (spec.name, spec.version):
            self.current = rule
            return False
        if time.monotonic() - self._last_swap < self.policy.min_dwell_s:
            return False
        cause = f"policy:{rule.label}" if rule else "policy:default"
        path, adapter = await asyncio.to_thread(self.registry.verified, name, version)
        log.warning("hot swap %s@%s → %s@%s (%s; signals %s)", spec.name, spec.version, name,
                    version, cause, signals.model_dump(exclude_none=True))
        await self.pool.switch_to(dataclasses.replace(
            spec, path=str(path), name=name, version=version,
            runtime=spec.runtime.model_copy(update={"adapter": adapter})), cause)
        self.current = rule
        self._last_swap = time.monotonic()
        return True

    async def run(self) -> None:
        while True:
            try:
                await self.check_once()
            except Exception as exc:  # a bad signals file or a failed start: keep serving
                log.error("hot swap: %s", exc)
            await asyncio.sleep(self.policy.check_every_s)
