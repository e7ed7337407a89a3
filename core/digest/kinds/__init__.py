"""Digest kinds, registered by name: each collects a period's material into `DigestContent`.
A new kind is one module here that calls `register` (and is imported below)."""

from __future__ import annotations

from core.digest.kinds.base import KINDS, DigestContent, DigestContext, Kind, register

# Importing a kind's module registers it.
from core.digest.kinds import activity, feedback, memory, repo_changes  # noqa: F401  isort: skip

__all__ = ["KINDS", "DigestContent", "DigestContext", "Kind", "register"]
