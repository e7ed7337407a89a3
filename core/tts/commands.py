"""`/voice` and `/tts`: reading aloud on request (`/ask --voice` lives with `/ask`).

    /voice        Threadline's last answer in this thread, read aloud (from thread history)
    /tts TEXT     the given text, read aloud

Both need the `tts` permission and spend the daily TTS character quota.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.chat import text_of
from core.commands import Command, CommandArgs, CommandContext, IgnoredArgs, declared, rest
from core.errors import Refusal
from core.memory.history import HistoryStore, is_summary
from core.request import Reply
from core.tts import messages
from core.tts.service import VoiceService

if TYPE_CHECKING:
    from core.chat import Message


class TtsArgs(CommandArgs):
    text: str = rest("TEXT")


def voice_commands(voice: VoiceService, history: HistoryStore) -> list[Command]:
    async def tts(ctx: CommandContext, args: TtsArgs) -> Reply:
        return await voice.speak(ctx.session, args.text, title=args.text)

    async def read_last(ctx: CommandContext, _args: IgnoredArgs) -> Reply:
        thread = await history.load(ctx.session.conversation)
        found = last_answer(thread.messages)
        if found is None:
            raise Refusal(messages.NO_ANSWER_YET)
        answer, question = found
        return await voice.speak(ctx.session, answer, title=question or answer)

    return [
        declared(
            "voice",
            "read my last answer in this thread aloud",
            IgnoredArgs,
            read_last,
            permission="tts",
        ),
        declared(
            "tts",
            "read the given text aloud",
            TtsArgs,
            tts,
            permission="tts",
            usage=messages.TTS_USAGE,
        ),
    ]


def last_answer(thread: list[Message]) -> tuple[str, str | None] | None:
    """The last answer Threadline gave in the thread (an assistant message with text and no
    tool calls) and the question it answered, if that is still in the history."""
    for i in range(len(thread) - 1, -1, -1):
        m = thread[i]
        text = m.get("content")
        if m.get("role") != "assistant" or m.get("tool_calls") or not isinstance(text, str):
            continue
        if not text.strip() or is_summary(m):
            continue
        question = next(
            (
                text_of(q)
                for q in reversed(thread[:i])
                if q["role"] == "user" and isinstance(q.get("content"), str)
            ),
            None,
        )
        return text, question
    return None
