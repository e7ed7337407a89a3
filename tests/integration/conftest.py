"""Fixtures shared by the integration tests of one feature, defined next to their helpers."""

from tests.mcp_support import make_world

__all__ = ["make_world"]
