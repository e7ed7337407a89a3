"""What users read (and hear) about voice replies. Kept together so the wording stays consistent."""

from __future__ import annotations

MOSTLY_CODE = (
    "This answer is mostly code, so I did not read it aloud: code is better read than heard."
)
NOTHING_TO_READ = "There is nothing in that text I could read aloud."
NO_ANSWER_YET = (
    "I have not answered anything in this thread yet, so there is nothing to read aloud."
)
TTS_USAGE = "Usage: `/tts TEXT` reads the text aloud."
FAILED = (
    "I could not produce the audio this time (the speech engine failed); no audio was posted. "
    "Please try again later."
)
SUMMARIZED = "The audio is a summary: the answer is too long to read aloud in full."
REST_IN_TEXT = "The rest of this answer is in the text."
CUT_SHORT = "The audio reads the first part only: the answer is too long to read aloud in full."
SPEAK_TOOL_RESULT = (
    "Audio of your final answer will be attached to the reply. Write the answer as usual; "
    "do not mention this tool."
)


def not_installed(detail: str) -> str:
    return f"Voice replies are not available here: {detail}."


def summary_prompt(max_chars: int) -> str:
    return (
        "Rewrite the answer below so it can be read aloud in at most "
        f"{max_chars:,} characters: plain sentences, no Markdown, no code, no lists or tables, "
        "keep the facts and conclusions. Reply with the rewritten text only."
    )
