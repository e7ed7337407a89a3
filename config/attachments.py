"""What is read of the files attached to a message (`core.attachments`): the settings of one
feature, kept apart from the rest of `config.settings.Settings`, which inherits them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings

from config.values import alias, parse_size

if TYPE_CHECKING:
    from core.attachments.limits import AttachmentLimits


class AttachmentSettings(BaseSettings):
    # Files attached to a message (core/attachments): what is read of them.
    attachments_max_file_bytes: int = Field(
        10 * 1024 * 1024,
        validation_alias=alias("THREADLINE_ATTACHMENTS_MAX_FILE", "attachments_max_file_bytes"),
        description="Largest attached file read (bytes, or `KB`/`MB` in 1,024s); at most this "
        "much is downloaded, whatever size the platform claims; larger files are named in a notice",
    )
    attachments_max_message_bytes: int = Field(
        25 * 1024 * 1024,
        validation_alias=alias(
            "THREADLINE_ATTACHMENTS_MAX_MESSAGE", "attachments_max_message_bytes"
        ),
        description="All files of one message together (bytes, or `KB`/`MB`); what does not fit "
        "is named in a notice",
    )
    attachments_max_files: int = Field(
        10,
        ge=0,
        le=100,
        validation_alias=alias("THREADLINE_ATTACHMENTS_MAX_FILES", "attachments_max_files"),
        description="Files read per message (0: none); the others are named in a notice",
    )
    attachments_max_unpacked_bytes: int = Field(
        50 * 1024 * 1024,
        validation_alias=alias(
            "THREADLINE_ATTACHMENTS_MAX_UNPACKED", "attachments_max_unpacked_bytes"
        ),
        description="What a `.gz` file may become once decompressed (bytes, or `KB`/`MB`); "
        "the rest is not read and the reply says so",
    )
    attachments_fetch_timeout: float = Field(
        20.0,
        gt=0,
        le=600,
        validation_alias=alias("THREADLINE_ATTACHMENTS_FETCH_TIMEOUT", "attachments_fetch_timeout"),
        description="Seconds the downloads of one message's files may take (all at once)",
    )
    attachments_context_share: float = Field(
        0.3,
        gt=0,
        le=0.8,
        validation_alias=alias("THREADLINE_ATTACHMENTS_CONTEXT_SHARE", "attachments_context_share"),
        description="Share of the model's context window all attached files may take together; "
        "a longer text keeps its start, end and the lines around its first errors",
    )
    attachments_image_max_edge: int = Field(
        1568,
        ge=64,
        le=8192,
        validation_alias=alias(
            "THREADLINE_ATTACHMENTS_IMAGE_MAX_EDGE", "attachments_image_max_edge"
        ),
        description="Images for a model that can see are scaled down to this longest edge (pixels)",
    )

    @field_validator(
        "attachments_max_file_bytes",
        "attachments_max_message_bytes",
        "attachments_max_unpacked_bytes",
        mode="before",
    )
    @classmethod
    def _attachment_size(cls, value: object, info: Any) -> int:
        env = {
            "attachments_max_file_bytes": "THREADLINE_ATTACHMENTS_MAX_FILE",
            "attachments_max_message_bytes": "THREADLINE_ATTACHMENTS_MAX_MESSAGE",
            "attachments_max_unpacked_bytes": "THREADLINE_ATTACHMENTS_MAX_UNPACKED",
        }
        return parse_size(value, env.get(str(info.field_name), str(info.field_name)))

    def attachment_limits(self) -> AttachmentLimits:
        from core.attachments.limits import AttachmentLimits

        return AttachmentLimits(
            max_file_bytes=self.attachments_max_file_bytes,
            max_message_bytes=self.attachments_max_message_bytes,
            max_files=self.attachments_max_files,
            max_unpacked_bytes=self.attachments_max_unpacked_bytes,
            fetch_timeout=self.attachments_fetch_timeout,
            context_share=self.attachments_context_share,
            image_max_edge=self.attachments_image_max_edge,
        )
