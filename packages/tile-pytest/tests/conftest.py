"""Fixtures of the plugin's tests: real pytest sessions and real `tile` commands.

Every session runs in a subprocess (`pytester.runpytest_subprocess`): the plugin loads from
its installed `pytest11` entry point, jax starts fresh, and nothing a session registers leaks
into this one. The modules that use these declare `pytest_plugins = ("pytester",)`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable

import pytest

Session = Callable[..., pytest.RunResult]
Tile = Callable[..., subprocess.CompletedProcess[str]]

# The house rules of tile's own suite: the plugin must not break a session that has them.
# Hypothesis's plugin, which this environment installs for other tests, is left out: it has
# nothing to do with tile's, and its imports cost each session about 1 s.
STRICT_INI = """\
[pytest]
addopts = --strict-markers -p no:cacheprovider -p no:hypothesispytest
filterwarnings = error
"""

KERNELS = """\
import tile_runner as tile


@tile.kernel(
    "demo/double",
    inputs=lambda case, key: (tile.normal(key, case.shape, case.dtype),),
    reference=lambda x: x * 2,
    test=tile.axes(shape=[(8, 128), (33, 100)], dtype=["float32", "bfloat16"]),
    bench=tile.axes(shape=[(64, 64)], dtype=["float32"]),
)
def double(x):
    return x + x


@tile.kernel(
    "demo/off_by_5pct",
    inputs=lambda case, key: (tile.normal(key, case.shape, "float32"),),
    reference=lambda x: x * 2,
    test=tile.axes(shape=[(8, 128)]),
)
def off_by_5pct(x):
    return x * 2.1
"""


@pytest.fixture
def session(pytester: pytest.Pytester) -> Session:
    """Run a real pytest session in pytester's directory (strict ini, demo kernels there)."""
    pytester.makefile(".ini", pytest=STRICT_INI)
    pytester.makepyfile(demo_kernels=KERNELS)

    def run(*args: str) -> pytest.RunResult:
        return pytester.runpytest_subprocess(*args, timeout=300)

    return run


@pytest.fixture
def tile(pytester: pytest.Pytester) -> Tile:
    """Run a real `tile` command (schema-check, compare, baseline save) in pytester's directory."""

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "240"}
        return subprocess.run(
            [sys.executable, "-m", "tile_cli", *args],
            cwd=pytester.path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )

    return run
