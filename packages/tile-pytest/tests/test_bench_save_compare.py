"""`tile_bench`, `--tile-save` and `--tile-compare` in real sessions, read back by real `tile`.

The benchmarks wait on the host (a `pure_callback` that sleeps) instead of computing: on a
shared CPU the speed of compute moves 10-50% between processes, while a sleep moves only by
the wake-up and dispatch time that load adds to each call. Under load that time is large
(about 15 ms a call at load 7-8 on the shared 2-core VM) and dilutes a 10% change of a short
wait: with 100 ms sleeps most runs at that load came out `inconclusive` (+8.5%, CI
1.049-1.119 against a 5% floor). So the sleeps are 200 ms (3 of 3 runs at load 7-8 were a
regression), at most 24 samples are taken (fewer than tile compare needs to measure
within-run drift, so the CI alone decides) and the noise floor is 5% (`[compare]
noise_floor`, which the plugin reads).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import tile_artifacts as ta

pytest_plugins = ("pytester",)
Session = Callable[..., pytest.RunResult]
Tile = Callable[..., subprocess.CompletedProcess[str]]

WAITS = """\
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

CHANGED_S = float(os.environ.get("PLANTED_WAIT_MS", "200")) / 1000


def _wait(x, seconds):
    def host(value):
        time.sleep(seconds)
        return np.asarray(value)

    return jax.pure_callback(host, jax.ShapeDtypeStruct(x.shape, x.dtype), x)


def test_steady(tile_bench):
    tile_bench(lambda x: _wait(x, 0.200) + 1.0, jnp.ones(256))


def test_changed(tile_bench):
    tile_bench(lambda x: _wait(x, CHANGED_S) + 1.0, jnp.ones(256))
"""
BUDGET = """\
[bench]
warmup_runs = 2
min_runs = 10
max_runs = 24
max_time = 6.0

[compare]
noise_floor = 5.0
"""
# An inconclusive verdict is a warning; the strict ini would turn it into an error.
SHOW_WARNING = "default::tile_pytest.TileInconclusiveWarning"

MIXED = """\
import jax.numpy as jnp
import pytest

import demo_kernels


@pytest.mark.tile_kernel("demo/double")
def test_double(tile_case):
    tile_case.check()


@pytest.mark.tile_kernel("demo/double", suite="bench")
def test_double_speed(tile_case, tile_bench):
    tile_case.check()  # correctness gates speed
    measured = tile_bench(tile_case.fn, *tile_case.inputs())
    assert measured.timer == "wall" and measured.stats.n == len(measured.samples) >= 5


@pytest.mark.parametrize("n", [256, 4096])
def test_axpy(tile_bench, n):
    tile_bench(lambda a, x: a * x + 1.0, 2.0, jnp.ones(n), max_time=0.2)


def test_twice(tile_bench):
    tile_bench(lambda x: x + 1, jnp.ones(8))
    tile_bench(lambda x: x + 2, jnp.ones(8))
"""


def _json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def _rows(run: Path) -> dict[str, dict[str, Any]]:
    return {row["case_id"]: row for row in _json(run / "comparisons.json")["rows"]}


def test_save_writes_a_run_directory_tile_reads(
    pytester: pytest.Pytester, session: Session, tile: Tile
) -> None:
    pytester.makepyfile(test_mixed=MIXED)
    pytester.makefile(".toml", tile="[bench]\nmax_time = 0.3\n")
    result = session("--tile-save", "runs/a")
    result.assert_outcomes(passed=7, failed=1)
    out = result.stdout.str()
    assert "`test_mixed.py::test_twice` calls tile_bench twice" in out
    assert f"run directory: {pytester.path / 'runs/a'} (8 tile cases)" in out

    assert ta.check.check_path(pytester.path / "runs/a") == []  # what `tile schema-check` runs
    report = _json(pytester.path / "runs/a/report.json")
    assert report["run"]["status"] == "success"
    assert report["device"]["device_kind"] == "cpu"
    cases = {c["case_id"]: c for c in report["cases"]}
    # A tile_kernel item is its tile case (check, and timing when benched); others, node ids.
    speed = cases["demo/double[shape=64x64,dtype=float32]"]
    assert speed["kernel"] == "demo/double" and speed["params"]["shape"] == "64x64"
    assert speed["check"]["passed"] and speed["timer"] == "wall" and speed["samples"]
    assert cases["demo/double[shape=8x128,dtype=bfloat16]"]["samples"] == []
    axpy = cases["test_mixed.py::test_axpy[4096]"]
    assert axpy["kernel"] == "test_mixed.py::test_axpy"
    assert axpy["stats"]["n"] == len(axpy["samples"])
    assert "test_mixed.py::test_twice" in cases  # the first call was kept
    metrics = (pytester.path / "runs/a/metrics.jsonl").read_text().splitlines()
    assert any(json.loads(m)["case_id"] == "test_mixed.py::test_axpy[256]" for m in metrics)

    # The run is an ordinary baseline; a directory of baselines is picked by device.
    saved = tile("baseline", "save", "runs/a", "--dir", "baselines")
    assert saved.returncode == 0, saved.stderr
    assert (pytester.path / "baselines/cpu.json").is_file()


def test_a_planted_10pct_slowdown_fails_under_compare(
    pytester: pytest.Pytester, session: Session, tile: Tile, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_waits=WAITS)
    pytester.makefile(".toml", tile=BUDGET)
    base = session("--tile-save", "runs/base")
    base.assert_outcomes(passed=2)
    saved = tile("baseline", "save", "runs/base", "--dir", "baselines")
    assert saved.returncode == 0, saved.stderr

    monkeypatch.setenv("PLANTED_WAIT_MS", "220")
    slower = session("--tile-compare", "baselines", "--tile-save", "runs/pr", "-W", SHOW_WARNING)
    slower.assert_outcomes(passed=1, failed=1)
    out = slower.stdout.str()
    assert "FAILED test_waits.py::test_changed" in out
    assert "test_waits.py::test_changed: regression +" in out
    assert "tile compare against" in out and "baselines" in out

    rows = _rows(pytester.path / "runs/pr")
    changed, steady = rows["test_waits.py::test_changed"], rows["test_waits.py::test_steady"]
    assert changed["judgement"] == "regression"
    assert 1.05 < changed["ratio"] < 1.15, changed
    assert steady["judgement"] != "regression", steady
    # `tile compare` of the same two run directories says the same.
    direct = tile("compare", "runs/base", "runs/pr")
    assert direct.returncode == 1, direct.stdout + direct.stderr


def test_inconclusive_warns_unless_asked_to_fail(
    pytester: pytest.Pytester, session: Session
) -> None:
    # Three samples are too few to judge: tile compare says inconclusive.
    pytester.makepyfile(
        test_few="""
        import jax.numpy as jnp

        def test_few(tile_bench):
            tile_bench(lambda x: x * 2, jnp.ones(64), min_runs=3, max_runs=3)
        """
    )
    session("--tile-save", "runs/base").assert_outcomes(passed=1)
    warned = session("--tile-compare", "runs/base", "-W", SHOW_WARNING)
    warned.assert_outcomes(passed=1, warnings=1)
    assert "TileInconclusiveWarning" in warned.stdout.str()
    assert "inconclusive" in warned.stdout.str() and "too few samples" in warned.stdout.str()
    failed = session("--tile-compare", "runs/base", "--tile-fail-on-inconclusive")
    failed.assert_outcomes(failed=1)
    assert "(--tile-fail-on-inconclusive)" in failed.stdout.str()


def test_a_benchmark_the_baseline_lacks_fails_unless_allowed(
    pytester: pytest.Pytester, session: Session
) -> None:
    pytester.makepyfile(
        test_one="""
        import jax.numpy as jnp

        def test_old(tile_bench):
            tile_bench(lambda x: x * 2, jnp.ones(64), min_runs=3, max_runs=3)
        """
    )
    session("--tile-save", "runs/base").assert_outcomes(passed=1)
    pytester.makepyfile(
        test_two="""
        import jax.numpy as jnp

        def test_new(tile_bench):
            tile_bench(lambda x: x + 2, jnp.ones(64), min_runs=3, max_runs=3)
        """
    )
    # A gate that judged nothing must not pass: the new benchmark has no baseline.
    missing = session("test_two.py", "--tile-compare", "runs/base")
    missing.assert_outcomes(failed=1)
    assert "not_comparable (added)" in missing.stdout.str()
    assert "--tile-allow-missing passes it" in missing.stdout.str()
    session("test_two.py", "--tile-compare", "runs/base", "--tile-allow-missing").assert_outcomes(
        passed=1
    )
