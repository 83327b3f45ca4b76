"""Tool calling on the edge (seed 004 §4, seed 003 §5.2-5.3): reading calls, a guard that validates
and repairs them, a bounded agent loop with confirmation for destructive tools, a small memory."""


import importlib

# Imported on first use (PEP 562): the evaluate stage's tool-call scorer reads agent.calls and
# agent.guard, and must not pull in the agent loop (and its routing context) with them.
_EXPORTS = {"Guard": "guard", "GuardVerdict": "guard", "Repair": "guard", "Agent": "loop",
            "AgentRun": "loop", "StepRecord": "loop", "LongTermMemory": "memory",
            "Memory": "memory", "ToolResult": "tools", "ToolSet": "tools", "ToolSpec": "tools",
            "load_tools": "tools"}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
