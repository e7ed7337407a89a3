"""The `speak` tool: the model's way to honour "read it aloud" / "send me a voice version".

It only marks the request; core reads the model's *final* answer aloud once it exists (the
model need not write its answer twice, and the audio always matches the text posted).
"""

from __future__ import annotations

import re

from core.session import ToolSession
from core.tools.context import ToolContext
from core.tools.registry import Tool, ToolArgs, tool
from core.tts import messages

# Words that make a message read like a request for audio ("read it aloud", "send me a voice
# version", "I'd rather listen"), in the languages Threadline's users most often write.
_VOICE_WORDS = re.compile(
    r"\b(aloud|audio|voice|listen|hear|speak|spoken|read (?:it|this|that|me)|tts|podcast"
    r"|vocal|voix|lire|vorlesen|stimme|anh[oö]ren|voz|ascolta|leggi)\b"
    r"|🔊|🔉|语音|朗读|読み上げ|音声",
    re.IGNORECASE,
)


def asks_for_voice(text: str) -> bool:
    """Whether the `speak` tool is worth offering for this message."""
    return _VOICE_WORDS.search(text) is not None


class SpeakArgs(ToolArgs):
    pass


async def _voice_asked(session: ToolSession) -> bool:
    return session.effects.voice_asked


@tool(permission="tts", available=_voice_asked, activity="Recording the answer aloud")
def speak(ctx: ToolContext, args: SpeakArgs) -> str:
    """Attach an audio recording of your final answer to the reply. Call it only when the user
    plainly asks to hear the answer (e.g. "read it aloud", "send me a voice version")."""
    ctx.session.effects.speak = True
    return messages.SPEAK_TOOL_RESULT


def voice_tools() -> list[Tool]:
    return [speak]
