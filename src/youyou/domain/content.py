"""Content blocks of a message and validation of user input.

The block classes are final, like the ledger's payload classes: per-message code tells them
apart by exact class (see ``domain/ledger.py``).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Sequence
from typing import Annotated, Any, Literal, final

from pydantic import BaseModel, ConfigDict, Field

from youyou.domain.errors import AgentError, ErrorCode, ErrorSource

MAX_IMAGE_BYTES = 20 * 1024 * 1024
SUPPORTED_IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")


class _Block(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


@final
class TextBlock(_Block):
    type: Literal["text"] = "text"
    text: str


@final
class ImageBlock(_Block):
    """An image passed by value; the agent never reads the file system for it."""

    type: Literal["image"] = "image"
    mime_type: str
    data_base64: str


@final
class FileContentBlock(_Block):
    """Text the caller already read from a file; never a handle or binary attachment."""

    type: Literal["file"] = "file"
    file_name: str | None = None
    media_type: str | None = None
    text: str


ContentBlock = Annotated[TextBlock | ImageBlock | FileContentBlock, Field(discriminator="type")]


def detect_image_type(data: bytes) -> str | None:
    """Return the MIME type implied by the file signature, or None if unsupported."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def _invalid(message: str) -> AgentError:
    return AgentError(ErrorCode.INPUT_VALIDATION, message, source=ErrorSource.TURN_ENGINE)


def _validate_image(block: ImageBlock) -> None:
    # base64 inflates by 4/3: reject oversized payloads before decoding them.
    if len(block.data_base64) > (MAX_IMAGE_BYTES // 3 + 1) * 4 + 4:
        raise _invalid("image exceeds the 20 MB limit")
    try:
        data = base64.b64decode(block.data_base64, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise _invalid("image data is not valid base64") from exc
    if len(data) > MAX_IMAGE_BYTES:
        raise _invalid("image exceeds the 20 MB limit")
    detected = detect_image_type(data)
    if detected is None:
        raise _invalid("unsupported image format: only PNG, JPEG, GIF and WebP are accepted")
    if block.mime_type.lower() != detected:
        raise _invalid(f"image declared as {block.mime_type!r} but its bytes are {detected}")


def check_text(text: str, what: str) -> None:
    """INPUT_VALIDATION unless ``text`` can be stored and sent on every backend.

    A NUL character is accepted by SQLite but refused by PostgreSQL and by some model APIs;
    a lone surrogate (what undecodable bytes become, e.g. binary data piped into the CLI)
    cannot be encoded at all. Both are refused the same way everywhere, naming where they are.
    """
    if (at := text.find("\x00")) >= 0:
        raise _invalid(
            f"{what} contains a NUL character (at character {at}): binary data cannot be sent "
            "as text"
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise _invalid(
            f"{what} is not valid Unicode text (a lone surrogate at character {exc.start}): "
            "was it read from a file or pipe that is not UTF-8?"
        ) from None


_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT_CHARACTER = "\ufffd"


def valid_unicode(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD.

    A model or tool may produce one (a JSON ``"\\ud800"`` escape, bytes decoded with
    ``surrogateescape``); such text cannot be encoded, so it could be neither streamed to a
    client nor stored in the ledger, and the answer would be lost. User input is refused
    instead (``check_text``): there the user can fix it."""
    if text.isascii():
        return text
    return _SURROGATE.sub(REPLACEMENT_CHARACTER, text)


def valid_unicode_value(value: Any) -> Any:
    """``valid_unicode`` through a JSON value (a tool call's arguments): keys and strings."""
    if isinstance(value, str):
        return valid_unicode(value)
    if isinstance(value, dict):
        return {valid_unicode(str(k)): valid_unicode_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [valid_unicode_value(item) for item in value]
    return value


def validate_user_input(blocks: Sequence[TextBlock | ImageBlock | FileContentBlock]) -> None:
    """Raise INPUT_VALIDATION unless the input can be sent; called before any state changes."""
    if not blocks:
        raise _invalid("input is empty")
    has_content = False
    for block in blocks:
        if isinstance(block, ImageBlock):
            _validate_image(block)
            has_content = True
            continue
        if isinstance(block, FileContentBlock):
            what = f"the attached file {block.file_name!r}" if block.file_name else "the file"
            check_text(
                f"{block.file_name or ''}{block.media_type or ''}",
                f"the name or media type of {what}",
            )
            check_text(block.text, what)
        else:
            check_text(block.text, "the message")
        if block.text.strip():
            has_content = True
    if not has_content:
        raise _invalid("input is empty")


def text_of(blocks: Sequence[TextBlock | ImageBlock | FileContentBlock]) -> str:
    """Concatenate the text carried by text and file blocks."""
    return "\n".join(b.text for b in blocks if not isinstance(b, ImageBlock))
