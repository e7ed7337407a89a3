"""Language models behind one small Protocol; the default speaks the OpenAI-compatible API."""

from core.llm.client import ChatModel, Completion, LLMError
from core.llm.providers import ProviderSpec

__all__ = ["ChatModel", "Completion", "LLMError", "ProviderSpec"]
