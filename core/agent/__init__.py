"""The agent: the loop (`loop`), what goes before the thread (`context`), a request's turn."""

from core.agent.context import CodeMap, Recall
from core.agent.loop import DEFAULT_DEADLINE, Agent

__all__ = ["DEFAULT_DEADLINE", "Agent", "CodeMap", "Recall"]
