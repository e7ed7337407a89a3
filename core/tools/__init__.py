"""Tools the model may propose: declared once, checked by the dispatcher before they run."""

from core.tools.context import ToolContext
from core.tools.registry import Tool, ToolArgs, ToolRegistry, tool

__all__ = ["Tool", "ToolArgs", "ToolContext", "ToolRegistry", "tool"]
