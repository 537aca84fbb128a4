"""Shared fixtures for the end-to-end tests: the real `tile` command in real project dirs."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest
from support import MakeProject, TileRun, make_project, run_tile, slurm_cluster


@pytest.fixture
def tile(tmp_path: Path) -> TileRun:
    """Run `tile ARGS` in a directory (default tmp_path); any exit code is returned."""

    def run(
        *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 300
    ) -> subprocess.CompletedProcess[str]:
        return run_tile(*args, cwd=cwd or tmp_path, env=env, timeout=timeout)

    return run


@pytest.fixture
def project(tmp_path: Path) -> MakeProject:
    """A project dir whose `[project] paths` holds copies of kernel modules from fixtures/."""

    def make(names: Sequence[str], extra_toml: str = "", name: str = "proj") -> Path:
        return make_project(tmp_path / name, names, extra_toml)

    return make


@pytest.fixture(scope="session")
def slurm_gres() -> str:
    """A SLURM cluster that runs tasks; the `[launcher] gres` for one shard on it (or skip)."""
    return slurm_cluster("gpu:1")


@pytest.fixture(scope="session")
def chromium() -> str:
    """Debian's headless Chromium for the browser tests: skipped locally when missing, a
    failure in CI (`TILE_BROWSER_TESTS=1`, set by .ci/run, or `CI`), where it must be there."""
    from browser import browser_required, find_chromium

    found = find_chromium()
    if found is None:
        message = "no Chromium on PATH (Debian: `apt-get install chromium`; or set TILE_CHROMIUM)"
        if browser_required():
            pytest.fail(message + "; the browser tests must run in CI")
        pytest.skip(message)
    return found
