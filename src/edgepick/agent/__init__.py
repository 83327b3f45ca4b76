"""Tool calling on the edge (seed 004 §4, seed 003 §5.2-5.3): a bounded agent loop with
confirmation for destructive tools, and a small memory. Reading, prompting and guarding a call
are `edgepick.toolcall`'s, shared with the evaluate stage's scorer."""

from edgepick.agent.loop import Agent, AgentRun, StepRecord
from edgepick.agent.memory import LongTermMemory, Memory
from edgepick.agent.tools import ToolResult, ToolSet, ToolSpec, load_tools

__all__ = ["Agent", "AgentRun", "LongTermMemory", "Memory", "StepRecord", "ToolResult",
           "ToolSet", "ToolSpec", "load_tools"]
