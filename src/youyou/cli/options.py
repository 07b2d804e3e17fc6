"""Options several ``youyou`` command groups share (typer only: ``--help`` stays light)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        "-c",
        help="youyou.toml to read (default: $YOUYOU_CONFIG, else none).",
        # Not checked here: the settings loader reports every unusable path (missing, a
        # directory, unreadable) as INVALID_CONFIG, the same as for $YOUYOU_CONFIG.
        readable=False,
    ),
]
