"""The plan's `cluster:` section (the plan owns it; cluster/ reads it) and the checks of its `devices:` list
(docs/scale.md)."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field


# A Ray node's device tag (cluster/nodes.py starts nodes with it); the plan checks it first.
TAG_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class ClusterSection(BaseModel):
    """How `edgepick run --executor ray` reaches and uses the device farm."""

    model_config = ConfigDict(extra="forbid")

    address: str | None = None  # the Ray head, HOST:PORT; --address wins; none: a private Ray
    max_retries: int = Field(2, ge=0)  # a job whose node or worker died is retried this often
    node_timeout_s: float = Field(60.0, gt=0)  # how long a device tag may have no node


def check_fleet(plan, fail) -> None:
    """Device tags that Ray can carry, each named once; an entry's device one of the plan's."""
    if plan.devices and plan.device != "local":
        fail(("device",), "give device (one target) or devices (a fleet), not both")
    seen: set[str] = set()
    for i, tag in enumerate(plan.devices):
        if not TAG_RE.match(tag):
            fail(("devices", i), f"'{tag}': a device tag takes letters, digits, '.', '_' or '-' "
                                 "(a node's tag, a catalog name or a profile file beside the plan)")
        if tag in seen:
            fail(("devices", i), f"'{tag}' is named twice")
        seen.add(tag)
    names = plan.devices or [plan.device]
    for i, c in enumerate(plan.candidates):
        if c.device is not None and c.device not in names:
            fail(("candidates", i, "device"),
                 f"'{c.device}' is not one of the plan's devices ({', '.join(names)})")
