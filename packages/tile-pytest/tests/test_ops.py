"""Implementations of one op in a pytest session: the report `--tile-save` writes records each
kernel case's op, as `tile bench` does, and its summary.md puts them side by side."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable

import pytest

import tile_artifacts as ta

pytest_plugins = ("pytester",)
Session = Callable[..., pytest.RunResult]
Tile = Callable[..., subprocess.CompletedProcess[str]]

NORMS = """\
import tile_runner as tile

AXES = tile.axes(shape=[(64, 64)], dtype=["float32"])
OPTS = dict(inputs=lambda case, key: (tile.normal(key, case.shape, case.dtype),),
            reference=lambda x: x * 2, bench=AXES)
tile.kernel("demo/twice_add", op="twice", impl="add", **OPTS)(lambda x: x + x)
tile.kernel("demo/twice_mul", op="twice", impl="mul", baseline=True, **OPTS)(lambda x: x * 2)
"""
TESTS = """\
import pytest

import demo_norms


@pytest.mark.tile_kernel("demo/twice_add", suite="bench")
def test_add(tile_case, tile_bench):
    tile_case.check()
    tile_bench(tile_case.fn, *tile_case.inputs())


@pytest.mark.tile_kernel("demo/twice_mul", suite="bench")
def test_mul(tile_case, tile_bench):
    tile_case.check()
    tile_bench(tile_case.fn, *tile_case.inputs())
"""


def test_a_session_records_the_op_of_each_kernel_case(
    pytester: pytest.Pytester, session: Session
) -> None:
    pytester.makepyfile(demo_norms=NORMS, test_norms=TESTS)
    pytester.makefile(".toml", tile="[bench]\nmax_time = 0.2\n")
    session("--tile-save", "runs/ops").assert_outcomes(passed=2)
    assert ta.check.check_path(pytester.path / "runs/ops") == []  # what `tile schema-check` runs
    report = json.loads((pytester.path / "runs/ops/report.json").read_text())
    ops = {c["kernel"]: c["op"] for c in report["cases"]}
    assert ops == {
        "demo/twice_add": {"name": "twice", "impl": "add", "baseline": False},
        "demo/twice_mul": {"name": "twice", "impl": "mul", "baseline": True},
    }
    summary = (pytester.path / "runs/ops/summary.md").read_text()
    assert "**twice** (2 implementations, baseline `mul`)" in summary
