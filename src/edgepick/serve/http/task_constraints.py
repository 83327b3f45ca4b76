"""deploy.yaml's per-task constraint applied to a request (seed 000 §2.3: a
structured answer breaks on one wrong token): a request of a task the deploy holds to a JSON
schema goes to the engine with that schema as OpenAI's `response_format`, one held to a label set
with llama-server's `grammar`, so the answer is decoded as the chosen candidate was measured
(constrain: grammar). A client's own `response_format`, `json_schema`, `grammar` or `tools`
wins (docs/serve.md, "A deployment's constraint per task"). The deploy's schemas passed the safety
check when it loaded (records/deploy.py, edgepick/constraints.py)."""

from __future__ import annotations

import logging
from typing import Any

from edgepick.backends.llama_cpp_grammar import request_fields
from edgepick.serve.router_api import RouteRequest

log = logging.getLogger("edgepick.serve")
HEADER = "x-edgepick-constraint"  # deploy: the deploy's constraint was applied; client: its own
CLIENT_FIELDS = ("response_format", "json_schema", "grammar", "tools")


class TaskConstraints:
    def __init__(self, deploy: Any = None) -> None:
        # each task's body fields, built once (a label set's grammar too); a task routed to the
        # cloud was not measured under it on the device
        self.fields: dict[str, dict] = {
            task: request_fields(c.as_constraint(), name=task, strict=False)
            for task, c in (getattr(deploy, "constraints", None) or {}).items()
            if deploy.route_for(task) != "cloud"}
        if self.fields:
            log.info("deploy.yaml constrains the answers of %s", ", ".join(sorted(self.fields)))

    def apply(self, rr: RouteRequest) -> None:
        """Put the deploy's constraint of the request's task into its body, unless the client
        sent its own; `rr.constraint` says which (the response's x-edgepick-constraint)."""
        fields = self.fields.get(rr.task or "")
        if fields is None:
            return
        if any(rr.body.get(k) is not None for k in CLIENT_FIELDS):
            rr.constraint = "client"
            return
        fmt = fields.get("response_format")
        if fmt is not None and rr.kind == "completion":  # llama-server reads it on chat only
            fields = {"json_schema": fmt["json_schema"]["schema"]}
        rr.body = {**rr.body, **fields}
        rr.constraint = "deploy"
