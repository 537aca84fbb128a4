"""Helpers shared by the end-to-end tests (on sys.path through pytest's `pythonpath`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"

TileRun = Callable[..., subprocess.CompletedProcess[str]]
MakeProject = Callable[..., Path]


def tile_argv(*args: str) -> list[str]:
    """The argument vector of a real `tile` process."""
    return [sys.executable, "-m", "tile_cli", *args]


def tile_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Plain, wide output so assertions can read it."""
    return {**os.environ, "NO_COLOR": "1", "COLUMNS": "240", **(extra or {})}


def run_tile(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """A real `tile ARGS` process in `cwd`, its output captured; any exit code is returned."""
    return subprocess.run(tile_argv(*args), cwd=cwd, env=tile_env(env), capture_output=True,
                          text=True, timeout=timeout)  # fmt: skip


def make_project(root: Path, names: Sequence[str], extra_toml: str = "") -> Path:
    """A project dir at `root` whose `[project] paths` holds copies of modules from fixtures/."""
    kernels = root / "kernels"
    kernels.mkdir(parents=True)
    for module in names:
        (kernels / module).write_text((FIXTURES / module).read_text())
    (root / "tile.toml").write_text('[project]\npaths = ["kernels"]\n' + extra_toml)
    return root


SLURM_SETUP = Path(__file__).parent / "slurm" / "setup.sh"


def _slurm_problem() -> str | None:
    """Why no SLURM cluster can run tasks here, or None when one answers with a usable node."""
    if shutil.which("srun") is None or shutil.which("sinfo") is None:
        return "srun/sinfo not on PATH"
    # Where slurm is installed but no controller runs, sinfo retries for 9 s before it fails,
    # once per fixture and test process; `scontrol ping` says DOWN at once. Only a DOWN answer
    # is taken: anything else goes on to sinfo, which decides.
    if shutil.which("scontrol") is not None:
        try:
            ping = subprocess.run(
                ["scontrol", "ping"], capture_output=True, text=True, timeout=30, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            pass
        else:
            if ping.returncode != 0 and " is DOWN" in ping.stdout:
                return f"the controller is down (`scontrol ping`: {ping.stdout.splitlines()[0]})"
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


def slurm_cluster(gpu_gres: str) -> str:
    """For a session fixture: a SLURM cluster that runs tasks, and the gres for one task on it.

    Returns `gpu_gres` when the cluster has GPUs, else "none"; skips the test without a cluster.
    With TILE_SLURM_SETUP=1 the local test cluster (tests/slurm/setup.sh) is started first and
    must come up.
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
    return gpu_gres if "gpu" in gres else "none"


def assert_schema_valid(path: Path) -> None:
    """What `tile schema-check PATH` checks (`tile_artifacts.check.check_path`), in process.

    For tests where a run directory's validity is one fact among others: the command itself
    (its output, exit codes and errors) is tested through real `tile` processes in
    test_cli_basics, test_sweep39, test_campaigns and test_hostile_env.
    """
    import tile_artifacts as ta

    problems = ta.check.check_path(path)
    assert problems == [], "\n".join(str(problem) for problem in problems)


def wait_for(
    path: Path, needle: str, proc: subprocess.Popen[str] | subprocess.Popen[bytes], limit: float
) -> None:
    """Wait until `needle` appears in the file `path` that `proc` writes; fail if it exits first."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if path.exists() and needle in path.read_text():
            return
        if proc.poll() is not None:
            raise AssertionError(f"tile exited early: {proc.communicate()}")
        time.sleep(0.1)  # polling a file another process writes; not synchronizing threads
    raise AssertionError(f"`{needle}` never appeared in {path}")
