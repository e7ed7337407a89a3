"""How much of a message's files Threadline reads (THREADLINE_ATTACHMENTS_* settings)."""

from __future__ import annotations

from dataclasses import dataclass

MB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class AttachmentLimits:
    max_file_bytes: int = 10 * MB  # one file, as downloaded
    max_message_bytes: int = 25 * MB  # all files of one message together
    max_files: int = 10  # files read per message; the others are named in a notice
    max_unpacked_bytes: int = 50 * MB  # a `.gz` file once decompressed (what is past it: cut)
    fetch_timeout: float = 20.0  # seconds for all downloads of a message, together
    context_share: float = 0.3  # of the model's context window, for all files together
    image_max_edge: int = 1568  # pixels: larger images are scaled down to this longest edge
    image_max_bytes: int = 4 * MB  # an image as sent to the model (re-encoded smaller past it)
    max_images: int = 4  # images given to the model per message
