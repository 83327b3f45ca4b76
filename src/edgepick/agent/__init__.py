"""Tool calling on the edge (seed 004 §4, seed 003 §5.2-5.3): reading calls, a guard that validates
and repairs them, a bounded agent loop with confirmation for destructive tools, a small memory."""

from edgepick.agent.guard import Guard, GuardVerdict, Repair
from edgepick.agent.loop import Agent, AgentRun, StepRecord
from edgepick.agent.memory import LongTermMemory, Memory
from edgepick.agent.tools import ToolResult, ToolSet, ToolSpec, load_tools

__all__ = ["Agent", "AgentRun", "Guard", "GuardVerdict", "LongTermMemory", "Memory", "Repair",
           "StepRecord", "ToolResult", "ToolSet", "ToolSpec", "load_tools"]
