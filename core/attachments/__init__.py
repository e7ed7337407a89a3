"""Files people attach to their message, read for the model: fetched within limits
(`limits`, `fetching`), recognised by their bytes (`detect`), and turned into what the model
can use — text files decoded, redacted and cut to fit (`text`, `excerpt`), images for models
that can see (`images`), voice and audio transcribed where the provider can (`transcribe`).
`intake` puts it together for one request; `notices` holds what the reply says about it.

Adapters fill `Request.files` (`core.request.IncomingFile`); nothing is downloaded before core
asks, and nothing refused is dropped silently: the reply names it and says why.
"""

from __future__ import annotations

from core.attachments.intake import AttachmentReader, Intake
from core.attachments.limits import AttachmentLimits

__all__ = ["AttachmentLimits", "AttachmentReader", "Intake"]
