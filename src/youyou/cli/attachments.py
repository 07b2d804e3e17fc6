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

from youyou.cli.runtime import in_daemon_thread
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
    guessed, _ = mimetypes.guess_type(path.name)
    try:
        data, detected = _read_bounded(path, guessed)
    except OSError as exc:
        raise _invalid(f"cannot read {path}: {exc.strerror or exc}") from exc
    if detected is not None or (guessed or "").startswith("image/"):
        if len(data) > MAX_IMAGE_BYTES:
            raise _invalid(f"{path} is larger than 20 MB; images are limited to 20 MB")
        block = ImageBlock(
            mime_type=detected or guessed or "",
            data_base64=base64.b64encode(data).decode("ascii"),
        )
        validate_user_input([block])
        return block
    if len(data) > MAX_TEXT_BYTES:
        raise _invalid(f"{path} is larger than 1 MB; text attachments are limited to 1 MB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _invalid(f"{path} is neither UTF-8 text nor a PNG, JPEG, GIF or WebP image") from exc
    return FileContentBlock(file_name=path.name, media_type=guessed or "text/plain", text=text)


async def read_attachment(path_text: str) -> ImageBlock | FileContentBlock:
    """``load_attachment`` off the event loop, so Ctrl+C and SIGTERM still work meanwhile
    (a pipe or FIFO that never closes blocks its reader for good)."""
    return await in_daemon_thread(lambda: load_attachment(path_text))


def _read_bounded(path: Path, guessed: str | None) -> tuple[bytes, str | None]:
    """The file's bytes up to its limit plus one, and the image type they show.

    Never more: ``/dev/zero``, a pipe or a huge file claim any size. Text is read up to 1 MB
    and one byte; only what looks like an image goes on up to 20 MB and one byte.
    """
    with path.open("rb") as handle:
        data = handle.read(MAX_TEXT_BYTES + 1)
        detected = detect_image_type(data)
        if detected is not None or (guessed or "").startswith("image/"):
            data += handle.read(MAX_IMAGE_BYTES + 1 - len(data))
    return data, detected


def describe(block: ImageBlock | FileContentBlock) -> str:
    if isinstance(block, ImageBlock):
        return f"image ({block.mime_type}, {len(block.data_base64) * 3 // 4:,} bytes)"
    return f"{block.file_name} ({block.media_type}, {len(block.text):,} characters)"
