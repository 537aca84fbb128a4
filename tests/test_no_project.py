"""A run outside a project (no tile.toml here or above) keeps its files where it ran, as a
fresh clone's `tile bench` needs, and says so (issue 40: `.tile/` was left behind
unannounced). The runner is a fake one, named by `TILE_RUNNER_PYTHON`, since no tile.toml may
name it."""

from __future__ import annotations

from pathlib import Path

from fake_runner import fake_project, fake_runner
from support import TileRun

BODY = "hello(); plan()\nfor i, c in enumerate(ALL):\n    start(c, i); bench(c)\ndone()\n"


def test_a_run_outside_a_project_says_where_its_files_are_kept(
    tile: TileRun, tmp_path: Path
) -> None:
    bare = tmp_path / "bare"
    bare.mkdir()
    runner = fake_runner(tmp_path, BODY)
    proc = tile("bench", cwd=bare, env={"TILE_RUNNER_PYTHON": str(runner)})
    assert proc.returncode == 0, proc.stderr
    assert "no tile.toml here or above: runs and history are kept in .tile/" in proc.stderr
    assert (bare / ".tile" / "latest").is_symlink()
    assert "`tile init` makes a project" in proc.stderr


def test_a_run_in_a_project_says_nothing_of_it(tile: TileRun, tmp_path: Path) -> None:
    root = fake_project(tmp_path / "p", BODY)
    proc = tile("bench", cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert "no tile.toml" not in proc.stderr
