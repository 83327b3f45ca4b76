"""Registry actions inside a running server (`edgepick models activate/rollback --server URL`):
the new version's engine starts beside the serving one and takes over once healthy; in-flight
requests finish on the old one (seed 001 §6.4)."""

from __future__ import annotations

import dataclasses

from edgepick.errors import EdgepickError
from edgepick.registry import canary
from edgepick.registry.activation import activate, rollback
from edgepick.registry.store import ChecksumMismatch, Registry
from edgepick.serve.pool.edge import EdgePool
from edgepick.serve.router_api import BadRequest, ServeError


class RegistryControl:
    def __init__(self, registry: Registry, pool: EdgePool) -> None:
        self.registry = registry
        self.pool = pool

    async def switch(self, path: str, version: str, cause: str) -> None:
        spec = self.pool.spec
        # each version its own adapter; every switch follows activate(), whose verify hashed
        # the adapter just now (a rollback's and a canary's too), so it is not hashed again
        adapter = self.registry.adapter_of(spec.name, version, check=False)
        spec = dataclasses.replace(spec, path=path, version=version,
                                   runtime=spec.runtime.model_copy(update={"adapter": adapter}))
        await self.pool.switch_to(spec, cause)

    async def handle(self, action: str, body: dict) -> dict:
        name = body.get("name") or self.pool.spec.name
        if name != self.pool.spec.name:
            raise BadRequest(f"this server serves '{self.pool.spec.name}', not '{name}'")
        try:
            if action == "activate":
                version = str(body.get("version") or "")
                if not version:
                    raise BadRequest("'version' is required")

                async def start(path: str) -> None:
                    await self.switch(path, version, "activate")

                # the quality probe's first half: the version serving now answers the items
                prober, old_probe = await canary.probe_before(self.pool, body)
                scrape = canary.snapshot(self.pool.metrics.registry)  # the version before's
                before = await activate(self.registry, name, version, start)
                canary.watch(self, self.registry, name, version, before, body.get("canary"),
                             self.pool.metrics.registry, scrape, self.switch, prober, old_probe)
                return {"name": name, "from": before, "to": version}
            if action == "rollback":
                async def start_rb(version: str, path: str) -> None:
                    await self.switch(path, version, "rollback")

                before, after = await rollback(self.registry, name, start_rb)
                return {"name": name, "from": before, "to": after}
        except ChecksumMismatch as exc:
            raise ServeError(str(exc), status=409) from None
        except EdgepickError as exc:
            raise ServeError(str(exc), status=400) from None
        raise ServeError(f"unknown action '{action}' (activate, rollback)", status=404)
