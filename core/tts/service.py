"""`VoiceService`: text -> an audio attachment for the thread, under permission and quota.

    permission `tts` -> prepare for speech -> mostly code? -> long-text rule -> charge the
    daily TTS quota -> synthesize (segments in parallel) -> encode for the platform

Characters are charged as reserved before synthesis and settled only once the audio exists:
a failed synthesis costs nothing. Refusals raise `Refusal` with the text for the user.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Literal

from core import messages as core_messages
from core.errors import Refusal
from core.quotas import BudgetExhausted, QuotaLedger, Reservation
from core.request import Attachment, Reply
from core.session import ToolSession
from core.tts import messages
from core.tts.audio import MIME_TYPES, AudioFormat, waveform
from core.tts.encoder import StreamingEncoder
from core.tts.engine import EngineUnavailable, SpeechEngine
from core.tts.prepare import prepare
from core.tts.synth import RetryPolicy, SpeechFailed, synthesize

log = logging.getLogger(__name__)

DEFAULT_MAX_CHARS = 3_000
FormatChoice = Literal["auto", "ogg", "mp3", "wav"]
# What each platform plays best: Discord's voice messages are OGG/Opus, Slack's inline player
# takes MP3. The console writes a file, and Opus is the smallest.
PLATFORM_FORMATS: dict[str, AudioFormat] = {"discord": "ogg", "slack": "mp3"}
TITLE_CHARS = 80

Summarize = Callable[[ToolSession, str, int], Awaitable[str]]

_SENTENCE_END = re.compile(r"[.!?…。！？](?=\s|$)")


@dataclass(frozen=True, slots=True)
class VoiceConfig:
    max_chars: int = DEFAULT_MAX_CHARS  # longer text is summarized or cut (the long-text rule)
    format: FormatChoice = "auto"
    retry: RetryPolicy = field(default_factory=RetryPolicy)


class VoiceService:
    def __init__(
        self,
        engine: SpeechEngine,
        quotas: QuotaLedger,
        config: VoiceConfig = VoiceConfig(),
        *,
        summarize: Summarize | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.engine = engine
        self.config = config
        self._quotas = quotas
        self._summarize = summarize
        self._clock = clock

    async def speak(self, session: ToolSession, text: str, *, title: str) -> Reply:
        """The audio of `text` as a reply of its own (`/tts`, `/voice`). Raises `Refusal`."""
        audio, notes = await self.audio(session, text, title=title)
        minutes, seconds = divmod(math.ceil(audio.duration_secs or 0), 60)  # never "0:00"
        heading = f"Read aloud ({minutes}:{seconds:02d}): {_title(title)}"
        return Reply(heading, attachments=(audio,), notices=notes)

    async def attach(self, session: ToolSession, reply: Reply, *, title: str) -> Reply:
        """`reply` with audio of its text attached; when that is refused or fails, the text
        answer still stands and a notice says why there is no audio."""
        if not reply.ok:
            return reply
        try:
            audio, notes = await self.audio(session, reply.text, title=title)
        except Refusal as exc:
            return replace(reply, notices=(*reply.notices, str(exc)))
        return replace(
            reply, attachments=(*reply.attachments, audio), notices=(*reply.notices, *notes)
        )

    async def audio(
        self, session: ToolSession, text: str, *, title: str
    ) -> tuple[Attachment, tuple[str, ...]]:
        session.require("tts")
        prepared = prepare(text)
        if prepared.mostly_code:
            raise Refusal(messages.MOSTLY_CODE)
        spoken = prepared.text
        if not spoken.strip():
            raise Refusal(messages.NOTHING_TO_READ)
        notes: list[str] = []
        fmt = self._format(session.identity.platform)
        # Reserved before any summary is paid for: a spent voice budget must not cost tokens.
        reservation = await self._reserve(session, min(len(spoken), self.config.max_chars))
        encoder = StreamingEncoder(fmt)
        try:
            if len(spoken) > self.config.max_chars:
                spoken, note = await self._shorten(session, spoken)
                notes.append(note)
            speech = await synthesize(self.engine, spoken, self.config.retry, encoder.add)
            data, audio = await encoder.finish()
            shape = await asyncio.to_thread(waveform, audio)
        except BaseException as exc:
            await encoder.abort()
            await self._quotas.release(reservation)
            if isinstance(exc, EngineUnavailable):
                raise Refusal(messages.not_installed(str(exc))) from None
            if isinstance(exc, SpeechFailed):
                log.warning("speech failed for request %s", session.request_id, exc_info=True)
                raise Refusal(messages.FAILED) from None
            raise
        crossed = await self._quotas.settle(reservation, len(spoken))
        notes.extend(speech.notes)
        notes.extend(
            core_messages.budget_warning(st.limit.label, st.used, st.limit.limit) for st in crossed
        )
        log.info(
            "speech: %d chars, %d segments, %.1f s of audio in %.2f s (%s, %s, %d bytes)",
            len(spoken),
            speech.segments,
            speech.audio.duration,
            speech.elapsed,
            self.engine.name,
            fmt,
            len(data),
        )
        attachment = Attachment(
            "audio",
            f"{_slug(title)}.{fmt}",
            data,
            MIME_TYPES[fmt],
            title=_title(title),
            duration_secs=audio.duration,
            waveform=shape,
        )
        return attachment, tuple(notes)

    async def _shorten(self, session: ToolSession, spoken: str) -> tuple[str, str]:
        """The long-text rule: a spoken summary when a model is configured, else the first
        part and a spoken note that the rest is in the text."""
        limit = self.config.max_chars
        if self._summarize is not None:
            try:
                summary = prepare(await self._summarize(session, spoken, limit)).text
            except BudgetExhausted:
                summary = ""  # no tokens left for it: the first part is still worth hearing
            except Exception:
                log.warning("summary for speech failed; reading the first part", exc_info=True)
                summary = ""
            if summary.strip():
                return summary[:limit], messages.SUMMARIZED
        room = limit - len(messages.REST_IN_TEXT) - 1
        return f"{first_part(spoken, room)} {messages.REST_IN_TEXT}", messages.CUT_SHORT

    async def _reserve(self, session: ToolSession, chars: int) -> Reservation:
        try:
            return await self._quotas.reserve(session.tts_limits(), chars, minimum=chars)
        except BudgetExhausted as exc:
            raise Refusal(exc.explain(self._clock())) from None

    def _format(self, platform: str) -> AudioFormat:
        if self.config.format != "auto":
            return self.config.format
        return PLATFORM_FORMATS.get(platform, "ogg")

    async def aclose(self) -> None:
        await self.engine.aclose()


def first_part(text: str, max_chars: int) -> str:
    """The longest start of `text` within `max_chars` that ends a sentence (else a word)."""
    if len(text) <= max_chars:
        return text
    window = text[: max_chars + 1]
    ends = [m.end() for m in _SENTENCE_END.finditer(window) if m.end() <= max_chars]
    if ends and ends[-1] > max_chars // 3:
        return window[: ends[-1]]
    space = window.rfind(" ")
    return window[: space if space > 0 else max_chars].rstrip()


def _title(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1].rstrip() + "…"


def _slug(text: str) -> str:
    words = re.findall(r"[a-z0-9]+", text.lower())[:6]
    return "-".join(words)[:48].strip("-") or "answer"
