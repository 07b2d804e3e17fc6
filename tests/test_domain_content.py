import base64

import pytest

from youyou.domain.content import (
    MAX_IMAGE_BYTES,
    FileContentBlock,
    ImageBlock,
    TextBlock,
    detect_image_type,
    validate_user_input,
)
from youyou.domain.errors import AgentError, ErrorCode

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 32
GIF = b"GIF89a" + b"\x00" * 32
WEBP = b"RIFF\x00\x00\x00\x00WEBPVP8 " + b"\x00" * 32


def image(data: bytes, mime: str) -> ImageBlock:
    return ImageBlock(mime_type=mime, data_base64=base64.b64encode(data).decode())


@pytest.mark.parametrize(
    ("data", "mime"),
    [(PNG, "image/png"), (JPEG, "image/jpeg"), (GIF, "image/gif"), (WEBP, "image/webp")],
)
def test_supported_images_are_detected_from_their_bytes(data: bytes, mime: str) -> None:
    assert detect_image_type(data) == mime
    validate_user_input([image(data, mime)])


def _code(blocks: list[TextBlock | ImageBlock | FileContentBlock]) -> ErrorCode:
    with pytest.raises(AgentError) as info:
        validate_user_input(blocks)
    return info.value.code


def test_empty_input_is_rejected() -> None:
    assert _code([]) is ErrorCode.INPUT_VALIDATION
    assert _code([TextBlock(text="   \n")]) is ErrorCode.INPUT_VALIDATION
    assert _code([FileContentBlock(file_name="a.txt", text="")]) is ErrorCode.INPUT_VALIDATION


def test_declared_mime_type_is_not_trusted() -> None:
    assert _code([image(PNG, "image/jpeg")]) is ErrorCode.INPUT_VALIDATION


def test_unsupported_format_is_rejected_even_if_declared_png() -> None:
    assert _code([image(b"BM" + b"\x00" * 40, "image/png")]) is ErrorCode.INPUT_VALIDATION


def test_invalid_base64_is_rejected() -> None:
    block = ImageBlock(mime_type="image/png", data_base64="not base64!!")
    assert _code([block]) is ErrorCode.INPUT_VALIDATION


def test_image_size_limit_is_20_mb() -> None:
    at_limit = PNG + b"\x00" * (MAX_IMAGE_BYTES - len(PNG))
    validate_user_input([image(at_limit, "image/png")])
    over = at_limit + b"\x00"
    assert _code([image(over, "image/png")]) is ErrorCode.INPUT_VALIDATION


def test_file_content_counts_as_content() -> None:
    validate_user_input(
        [FileContentBlock(file_name="log.txt", media_type="text/plain", text="ERROR 42")]
    )
