"""The `speak` tool: the model's way to honour "read it aloud" / "send me a voice version".

It only marks the request; core reads the model's *final* answer aloud once it exists (the
model need not write its answer twice, and the audio always matches the text posted).
"""

from __future__ import annotations

from core.tools.context import ToolContext
from core.tools.registry import Tool, ToolArgs, tool
from core.tts import messages


class SpeakArgs(ToolArgs):
    pass


@tool(name="speak", permission="tts")
def speak(ctx: ToolContext, args: SpeakArgs) -> str:
    """Attach an audio recording of your final answer to the reply. Call it only when the user
    plainly asks to hear the answer (e.g. "read it aloud", "send me a voice version")."""
    ctx.session.effects.speak = True
    return messages.SPEAK_TOOL_RESULT


def voice_tools() -> list[Tool]:
    return [speak]
