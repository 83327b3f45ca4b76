"""edgepick's own gate table, data/gates.yaml, as the `edgepick.gates` entry point in
pyproject.toml names it: read when a gate is first asked for, like any other package's table."""

from __future__ import annotations

from edgepick.gate_spec import table_of

GATES = table_of("data/gates.yaml")
