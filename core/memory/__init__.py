"""Conversation memory: thread history (short-term)."""
