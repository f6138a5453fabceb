"""Tools the model can call: the contract (``base``), the built-in tools, and the registry.

A built-in tool's arguments are a pydantic model (``arguments``): its ``input_schema`` is
derived from the model, and a call is validated against it before the tool runs.

Every tool returns a :class:`ToolOutput` (or a string the output chokepoint summarises) and
reaches files only through ``ctx.fs``; the content cap is applied by the runner, not here.
"""

from orchestrator.capabilities.tools.base import Tool, ToolContext, ToolError, ToolOutput
from orchestrator.capabilities.tools.bash import BashTool
from orchestrator.capabilities.tools.files import EditFileTool, ReadFileTool, WriteFileTool
from orchestrator.capabilities.tools.registry import ToolRegistry, default_registry
from orchestrator.capabilities.tools.search import GlobTool, GrepTool

__all__ = [
    "BashTool",
    "EditFileTool",
    "GlobTool",
    "GrepTool",
    "ReadFileTool",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolOutput",
    "ToolRegistry",
    "WriteFileTool",
    "default_registry",
]
