"""What the reply says about attached files: every sentence about them, in one place. A
notice names the file and the reason, never a URL, a token or a stack trace."""

from __future__ import annotations

NO_TEXT_QUESTION = "(The message has only the attached files: no text.)"
NOTHING_READ = "I could not read any of the attached files, so there is nothing to answer yet."
VOICE_PREFIX = "(voice message, transcribed)"
QUOTA_BOUND = (
    "The files were cut to what is left of today's token budget (`/budget` shows it), not to "
    "what the model could take."
)


def reading(count: int) -> str:
    """The status line while files are read."""
    return "Reading the attached file…" if count == 1 else f"Reading the {count} attached files…"


def size(n: int) -> str:
    """`10 MB`, `512 KB`, `900 bytes` (KB and MB in 1,024s)."""
    if n >= 1024 * 1024:
        mb = n / (1024 * 1024)
        return f"{mb:,.0f} MB" if mb >= 10 or mb == int(mb) else f"{mb:,.1f} MB"
    if n >= 1024:
        return f"{n // 1024:,} KB"
    return f"{n:,} bytes"


def too_many(limit: int, skipped: list[str]) -> str:
    names = ", ".join(f"`{n}`" for n in skipped)
    if limit == 0:
        return f"Attached files are not read here, so I did not read {names}."
    return f"I read at most {limit} files per message; these were not read: {names}."


def file_too_large(name: str, limit: int) -> str:
    return f"`{name}`: larger than the {size(limit)} I read per file, so it was not read."


def message_too_large(name: str, limit: int) -> str:
    return (
        f"`{name}`: the files of one message may have {size(limit)} together; this one did not "
        "fit, so it was not read."
    )


def fetch_timed_out(name: str, seconds: float) -> str:
    return f"`{name}`: the download did not finish within {seconds:g} s, so it was not read."


def fetch_failed(name: str) -> str:
    return f"`{name}`: the file could not be downloaded, so it was not read."


def unsupported(name: str, what: str) -> str:
    """`what`: "archives", "executables", "PDF documents"... (plural, lower case)."""
    return f"`{name}`: {what} are not read."


def empty(name: str) -> str:
    return f"`{name}`: the file is empty."


def unpacked_cut(name: str, limit: int) -> str:
    return f"`{name}`: only its first {size(limit)} once decompressed were read."


def bad_gzip(name: str) -> str:
    return f"`{name}`: not a readable gzip file, so it was not read."


def cut_to_fit(name: str, cut: str) -> str:
    return (
        f"`{name}` is too long to read whole: I read its start and end and the lines around "
        f"its first errors ({cut} cut)."
    )


def no_room(name: str) -> str:
    return f"`{name}`: no room was left for it in the model's context, so it was not read."


def cannot_see(names: list[str]) -> str:
    listed = ", ".join(f"`{n}`" for n in names)
    return f"The model here cannot read images, so I did not look at {listed}."


def too_many_images(limit: int, skipped: list[str]) -> str:
    names = ", ".join(f"`{n}`" for n in skipped)
    return f"I show the model at most {limit} images per message; not shown: {names}."


def bad_image(name: str) -> str:
    return f"`{name}`: the image could not be read, so it was not shown to the model."


def no_model(names: list[str]) -> str:
    listed = ", ".join(f"`{n}`" for n in names)
    return f"No language model is configured, so the attached files were not read: {listed}."


def cannot_transcribe(name: str) -> str:
    return (
        f"`{name}`: voice and audio cannot be transcribed here (no transcription model is "
        "set up for this model's provider), so I could not listen to it."
    )


def transcription_failed(name: str) -> str:
    return f"`{name}`: the transcription failed, so I could not listen to it."
