"""Ollama's `keep_alive` on serve's residency (serve/pool/residency.py): a duration is the model's
idle time before it unloads (its ttl), `0` unloads it once idle, a negative value pins it.

Two rules come first, and the answer says so when they change what was asked
(`x-edgepick-keep-alive`, and `keep_alive` on the answer's last object):
- the memory budget: a pin is granted only while the pinned models plus the largest on-demand
  one still fit the budget (records/team.py `memory_plan`, the rule serve starts by), so a pin
  can never leave a model unservable;
- deploy.yaml's pins: a model the deploy pins stays loaded whatever a client asks.
A single-model server keeps its one model loaded for its whole run."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from edgepick.records.team import memory_plan
from edgepick.serve.errors import BadRequest

HEADER = "x-edgepick-keep-alive"
_UNIT_S = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


@dataclass(frozen=True)
class Asked:
    """A parsed keep_alive: `seconds` None pins; 0 unloads."""

    seconds: float | None

    @property
    def pin(self) -> bool:
        return self.seconds is None

    @property
    def unload(self) -> bool:
        return self.seconds == 0


def parse(value: Any) -> Asked | None:
    """Ollama's forms: seconds as a number, a Go duration ("5m", "1h30m", "-1m"), or a number
    in a string; any negative value keeps the model loaded for ever."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise BadRequest("'keep_alive' must be a duration (\"5m\"), seconds, 0 or -1",
                         param="keep_alive")
    if isinstance(value, (int, float)):
        return Asked(None if value < 0 else float(value))
    if not isinstance(value, str):
        raise BadRequest("'keep_alive' must be a duration (\"5m\"), seconds, 0 or -1",
                         param="keep_alive")
    text = value.strip()
    sign = -1 if text.startswith("-") else 1
    body = text.lstrip("+-")
    try:
        return Asked(None if sign < 0 and float(body) != 0 else float(body))
    except ValueError:
        pass
    parts = _PART.findall(body)
    if not body or "".join(n + u for n, u in parts) != body:
        raise BadRequest(f"'keep_alive' '{value[:40]}' is not a duration (\"5m\", \"1h30m\", "
                         "\"30s\", 0 or -1)", param="keep_alive")
    seconds = sum(float(n) * _UNIT_S[u] for n, u in parts)
    return Asked(None if sign < 0 and seconds else seconds)


def plan_pin(team: Any, name: str) -> str | None:
    """None when pinning `name` keeps the team within its budget, else why not (one line)."""
    models = team.residency.models
    edge_models = [team.members[n].as_edge_model(r.need).model_copy(
        update={"pin": r.pin or n == name}) for n, r in models.items()]
    fit = memory_plan(edge_models, team.residency.budget)
    return None if fit.fits is not False else f"not pinned: {fit.line()}"


def apply(pool: Any, name: str, asked: Asked | None) -> str | None:
    """Set `name`'s residency as asked, before its request runs; returns what was done instead
    when that differs (None: as asked). The unload of `0` is the caller's, once idle."""
    if asked is None:
        return None
    residency = getattr(pool, "residency", None)
    if residency is None:
        if asked.pin:
            return None
        return f"{name} stays loaded: it is this server's only model"
    member, resident = pool.members[name], residency.models[name]
    if member.pin:
        return None if asked.pin else f"{name} stays loaded: deploy.yaml pins it"
    if asked.pin:
        refused = plan_pin(pool, name)
        if refused is not None:
            resident.ttl = member.ttl
            return f"{name} {refused}; it stays loaded until the budget needs its room"
        resident.pin = True
        resident.ttl = None
    else:
        resident.pin = False
        resident.ttl = asked.seconds
    pool.team_metrics.pinned.labels(name).set(1 if resident.pin else 0)
    return None
