"""``/attach``: files become blocks with the kernel's own image checks."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from youyou.cli.attachments import describe, load_attachment
from youyou.domain.content import FileContentBlock, ImageBlock
from youyou.domain.errors import AgentError, ErrorCode

JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 16


def test_a_text_file_becomes_a_file_block(tmp_path: Path) -> None:
    path = tmp_path / "pods.csv"
    path.write_text("name,restarts\napi,7\n", encoding="utf-8")
    block = load_attachment(str(path))
    assert isinstance(block, FileContentBlock)
    assert (block.file_name, block.media_type) == ("pods.csv", "text/csv")
    assert block.text == "name,restarts\napi,7\n"
    assert describe(block) == "pods.csv (text/csv, 20 characters)"
    unknown = tmp_path / "notes"
    unknown.write_text("free text", encoding="utf-8")
    assert load_attachment(str(unknown)).model_dump()["media_type"] == "text/plain"


def test_an_image_is_sent_by_value_with_the_type_its_bytes_show(tmp_path: Path) -> None:
    path = tmp_path / "graph.bin"
    path.write_bytes(JPEG)
    block = load_attachment(str(path))
    assert isinstance(block, ImageBlock)
    assert block.mime_type == "image/jpeg"
    assert base64.b64decode(block.data_base64) == JPEG


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("fake.png", b"not really a png", "unsupported image format"),
        ("dump.bin", b"\xff\xfe\x00binary", "neither UTF-8 text nor"),
    ],
)
def test_unusable_files_are_refused_as_input_validation(
    tmp_path: Path, name: str, data: bytes, message: str
) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(AgentError) as caught:
        load_attachment(str(path))
    assert caught.value.code is ErrorCode.INPUT_VALIDATION
    assert message in caught.value.message


def test_a_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(AgentError, match="cannot read"):
        load_attachment(str(tmp_path / "nope.txt"))
