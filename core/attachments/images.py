"""Images for models that can see: the first frame, scaled down to a longest edge and re-encoded
within a size cap (Pillow), as a base64 data URL (the `image_url` content part of the chat
API). Never stored: the thread keeps `[image: name]` in their place."""

from __future__ import annotations

import base64
import io
import warnings
from dataclasses import dataclass

MAX_PIXELS = 60_000_000  # decoded larger than this: refused (a decompression bomb)
# Images are priced by tiles, not characters: a 1568 px image is ~1,600 tokens (OpenAI and
# Anthropic price images in this range), counted as such in prompt estimates.
IMAGE_TOKENS = 1_600


class ImageError(Exception):
    pass


@dataclass(frozen=True, slots=True)
class ImagePart:
    name: str
    data_url: str
    width: int
    height: int


def prepare_image(name: str, data: bytes, max_edge: int, max_bytes: int) -> ImagePart:
    """`data` (PNG, JPEG, WebP or GIF) ready for the model; raises ImageError."""
    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            # Pillow warns of a decompression bomb before refusing one: refused here either way.
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            img = Image.open(io.BytesIO(data))
        with img:
            if img.width * img.height > MAX_PIXELS:
                raise ImageError(f"{img.width}x{img.height} pixels")
            img.seek(0)  # a GIF's (or animated WebP's) first frame
            if img.format == "JPEG":
                img.draft("RGB", (max_edge, max_edge))  # decode at a reduced scale: fast
            frame = img.convert("RGBA" if _has_alpha(img) else "RGB")
    except (
        UnidentifiedImageError,
        OSError,
        ValueError,
        Image.DecompressionBombError,
        Image.DecompressionBombWarning,
    ) as exc:
        raise ImageError(str(exc)) from None
    frame.thumbnail((max_edge, max_edge))
    alpha = frame.mode == "RGBA"
    quality = 85
    while True:
        buf = io.BytesIO()
        if alpha:
            frame.save(buf, "PNG", optimize=True)
        else:
            frame.save(buf, "JPEG", quality=quality)
        encoded = buf.getvalue()
        if len(encoded) <= max_bytes or max(frame.size) <= 64:
            break
        if not alpha and quality > 50:
            quality -= 15
        else:
            frame.thumbnail((int(max(frame.size) * 0.7),) * 2)
    mime = "image/png" if alpha else "image/jpeg"
    url = f"data:{mime};base64,{base64.b64encode(encoded).decode()}"
    return ImagePart(name, url, frame.width, frame.height)


def _has_alpha(img: object) -> bool:
    mode = getattr(img, "mode", "")
    info = getattr(img, "info", {})
    return mode in ("RGBA", "LA", "PA") or (mode == "P" and "transparency" in info)
