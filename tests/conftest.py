"""Shared fixtures for the end-to-end tests: the real `tile` command in real project dirs."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest
from support import FIXTURES, MakeProject, TileRun, tile_argv, tile_env


@pytest.fixture
def tile(tmp_path: Path) -> TileRun:
    """Run `tile ARGS` in a directory (default tmp_path); any exit code is returned."""

    def run(
        *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 300
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            tile_argv(*args),
            cwd=cwd or tmp_path,
            env=tile_env(env),
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    return run


@pytest.fixture
def project(tmp_path: Path) -> MakeProject:
    """A project dir whose `[project] paths` holds copies of kernel modules from fixtures/."""

    def make(names: Sequence[str], extra_toml: str = "", name: str = "proj") -> Path:
        root = tmp_path / name
        kernels = root / "kernels"
        kernels.mkdir(parents=True)
        for module in names:
            (kernels / module).write_text((FIXTURES / module).read_text())
        (root / "tile.toml").write_text('[project]\npaths = ["kernels"]\n' + extra_toml)
        return root

    return make


SLURM_SETUP = Path(__file__).parent / "slurm" / "setup.sh"


def _slurm_problem() -> str | None:
    """Why no SLURM cluster can run tasks here, or None when one answers with a usable node."""
    if shutil.which("srun") is None or shutil.which("sinfo") is None:
        return "srun/sinfo not on PATH"
    try:
        done = subprocess.run(
            ["sinfo", "--noheader", "--format=%T"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"sinfo did not answer: {exc}"
    if done.returncode != 0:
        return f"sinfo failed: {done.stderr.strip()}"
    usable = {"idle", "mixed", "allocated", "completing"}
    if not usable & {s.strip() for s in done.stdout.split()}:
        return f"no usable node (states: {done.stdout.split()})"
    return None


@pytest.fixture(scope="session")
def slurm_gres() -> str:
    """A SLURM cluster that runs tasks; the `[launcher] gres` for one shard on it.

    Skips without a cluster; with TILE_SLURM_SETUP=1 the local test cluster
    (tests/slurm/setup.sh) is started first and must come up.
    """
    if os.environ.get("TILE_SLURM_SETUP") == "1":
        done = subprocess.run(
            ["bash", str(SLURM_SETUP)], capture_output=True, text=True, timeout=900, check=False
        )
        assert done.returncode == 0, f"{SLURM_SETUP} failed:\n{done.stdout}\n{done.stderr}"
    problem = _slurm_problem()
    if problem is not None:
        pytest.skip(f"no SLURM cluster: {problem} (TILE_SLURM_SETUP=1 starts tests/slurm/setup.sh)")
    gres = subprocess.run(
        ["sinfo", "--noheader", "--format=%G"], capture_output=True, text=True, check=False
    ).stdout
    return "gpu:1" if "gpu" in gres else "none"
