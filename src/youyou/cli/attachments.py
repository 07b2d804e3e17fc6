"""``/attach PATH``: a file read by the CLI and sent by value with the next message.

The kernel never reads the file system, so the CLI turns a path into a block: an image into
an ``ImageBlock`` (checked now with the kernel's own size and type rules, so a bad file is
refused at ``/attach`` rather than at send) and anything else into a ``FileContentBlock``
holding its UTF-8 text.
"""

from __future__ import annotations

import base64
import mimetypes
from pathlib import Path

from youyou.domain.content import (
    MAX_IMAGE_BYTES,
    FileContentBlock,
    ImageBlock,
    detect_image_type,
    validate_user_input,
)
from youyou.domain.errors import AgentError, ErrorCode, ErrorSource

MAX_TEXT_BYTES = 1024 * 1024


def _invalid(message: str) -> AgentError:
    return AgentError(ErrorCode.INPUT_VALIDATION, message, source=ErrorSource.TURN_ENGINE)


def load_attachment(path_text: str) -> ImageBlock | FileContentBlock:
    path = Path(path_text.strip()).expanduser()
    try:
        size = path.stat().st_size
        if size > MAX_IMAGE_BYTES:
            raise _invalid(f"{path} is {size:,} bytes; attachments are limited to 20 MB")
        data = path.read_bytes()
    except OSError as exc:
        raise _invalid(f"cannot read {path}: {exc.strerror or exc}") from exc
    guessed, _ = mimetypes.guess_type(path.name)
    detected = detect_image_type(data)
    if detected is not None or (guessed or "").startswith("image/"):
        block = ImageBlock(
            mime_type=detected or guessed or "",
            data_base64=base64.b64encode(data).decode("ascii"),
        )
        validate_user_input([block])
        return block
    if len(data) > MAX_TEXT_BYTES:
        raise _invalid(f"{path} is {len(data):,} bytes; text attachments are limited to 1 MB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _invalid(f"{path} is neither UTF-8 text nor a PNG, JPEG, GIF or WebP image") from exc
    return FileContentBlock(file_name=path.name, media_type=guessed or "text/plain", text=text)


def describe(block: ImageBlock | FileContentBlock) -> str:
    if isinstance(block, ImageBlock):
        return f"image ({block.mime_type}, {len(block.data_base64) * 3 // 4:,} bytes)"
    return f"{block.file_name} ({block.media_type}, {len(block.text):,} characters)"
