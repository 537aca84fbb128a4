"""Helpers shared by the end-to-end tests (on sys.path through pytest's `pythonpath`)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"

TileRun = Callable[..., subprocess.CompletedProcess[str]]
MakeProject = Callable[..., Path]


def tile_argv(*args: str) -> list[str]:
    """The argument vector of a real `tile` process."""
    return [sys.executable, "-m", "tile_cli", *args]


def tile_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Plain, wide output so assertions can read it."""
    return {**os.environ, "NO_COLOR": "1", "COLUMNS": "240", **(extra or {})}
