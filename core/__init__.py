"""Threadline's platform-neutral core. Adapters import `Request`, `Reply` and `Core` from here."""

from core.request import Attachment, ConversationKey, Reply, Request, ToolCallRecord, Usage

__all__ = ["Attachment", "ConversationKey", "Reply", "Request", "ToolCallRecord", "Usage"]
