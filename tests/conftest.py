"""Shared fixtures for the end-to-end tests: run the real `tile` command in a project dir."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"

TileRun = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def tile(tmp_path: Path) -> TileRun:
    """Run `python -m tile_cli ARGS` in a directory (default tmp_path); any exit code."""

    def run(
        *args: str,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        timeout: float = 300,
    ) -> subprocess.CompletedProcess[str]:
        full_env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200", **(env or {})}
        return subprocess.run(
            [sys.executable, "-m", "tile_cli", *args],
            cwd=cwd or tmp_path,
            env=full_env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    return run


def write_project(root: Path, toml: str, files: dict[str, str] | None = None) -> Path:
    """A project directory with a tile.toml and kernel modules."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "tile.toml").write_text(toml)
    for name, text in (files or {}).items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def fixture_project(tmp_path: Path, names: Sequence[str], extra_toml: str = "") -> Path:
    """A project whose `paths` point at copies of kernel modules from tests/fixtures."""
    root = tmp_path / "proj"
    kernels = root / "kernels"
    kernels.mkdir(parents=True)
    for name in names:
        (kernels / name).write_text((FIXTURES / name).read_text())
    toml = '[project]\npaths = ["kernels"]\n' + extra_toml
    (root / "tile.toml").write_text(toml)
    return root
