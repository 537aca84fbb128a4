"""docs/getting-started.md, followed as written: tile-cli, tile-runner and tile-std added to an
existing uv project with the page's own `uv add` lines and its `tile.toml`, then `tile list`
and `tile bench` from that project, outside this checkout."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "getting-started.md"
_LEAKY = ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT", "PYTHONPATH", "PYTHONHOME", "CONDA_PREFIX")
_KERNEL = """\
import tile_runner as tile


@tile.kernel(
    "mine/double",
    reference=lambda x: x * 2,
    inputs=lambda case, key: (tile.normal(key, case.shape, case.dtype),),
    bench=tile.axes(shape=[(64, 64)], dtype=["float32"]),
)
def double(x):
    return x + x
"""


def _section(title: str) -> str:
    """The text of the page's `## title` section."""
    text = PAGE.read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def _blocks(section: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", section, flags=re.DOTALL)


def _commands(block: str) -> list[list[str]]:
    """A shell block's commands, comments dropped, the clone's `~/tile` made this checkout."""
    lines = [line.split(" #", 1)[0].strip() for line in block.splitlines()]
    return [shlex.split(line.replace("~/tile", str(ROOT))) for line in lines if line]


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in _LEAKY}
    env |= {"NO_COLOR": "1", "COLUMNS": "200"}
    done = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, (argv, done.stdout[-4000:], done.stderr[-4000:])
    return done


@pytest.mark.slow
def test_adding_tile_to_an_existing_uv_project(tmp_path: Path) -> None:
    if shutil.which("uv") is None:
        pytest.fail("uv is not on PATH: the page's commands need it (pip install uv)")
    project = tmp_path / "my-project"
    project.mkdir()
    _run(["uv", "init", "-q", "--lib", "--name", "my-project", "."], cwd=project)
    (project / "src" / "my_project" / "kernels.py").write_text(_KERNEL)
    (add_block,) = _blocks(_section("An existing uv project"), "sh")
    adds = _commands(add_block)
    assert [argv[:2] for argv in adds] == [["uv", "add"], ["uv", "add"]]
    for argv in adds:
        _run(argv, cwd=project)
    (toml,) = _blocks(_section("What tile.toml needs"), "toml")
    (project / "tile.toml").write_text(toml)

    listed = _run(["uv", "run", "tile", "list"], cwd=project).stdout
    assert "mine/double[" in listed and "std/softmax" in listed  # its own, and tile-std's
    bench = _run(["uv", "run", "tile", "bench", "-k", "mine/", "bench.max_time=0.05"], project)
    assert "1 ok" in bench.stderr + bench.stdout
    assert list((project / ".tile" / "runs").glob("bench-*/report.json"))
