"""`tile tune` samples its rungs with `tile bench`'s settings, changing only how long."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import tile_config as tc
from tile_harness import bench_settings
from tile_harness.tune import rung_settings

_TOML = """
[bench]
timer = "wall"
cold = true
target_precision = 0.02
rounds = 3
[machine]
l2_bytes = 1048576
[tune]
eta = 3
min_runs = 4
max_time = 0.01
"""


def test_a_rung_keeps_bench_settings_but_its_length(tmp_path: Path) -> None:
    (tmp_path / "tile.toml").write_text(_TOML)
    resolved = tc.load_config(cwd=tmp_path, environ={})
    bench = bench_settings(resolved.config)
    for rung in (0, 1, 2):
        settings = rung_settings(resolved, rung, 1.0)
        assert settings.cache_bytes == 1048576  # `[machine] l2_bytes`, dropped before
        assert (settings.timer, settings.cold) == ("wall", True)
        assert settings.target_precision == bench.target_precision
        assert settings.rounds == 1
        assert settings.min_runs == 4 * 3**rung
        assert settings.max_time == max(0.005, 0.01 * 3**rung)


def test_the_budget_estimate_shares_compiles_over_the_runners_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The row kernels' 216 configurations (12 cases of 18) fit `--budget 120` on a 16-core
    GPU host, as a real tune there did (65 s on an H100); one after another they did not."""
    import os

    from tile_harness.tune import budget_scale, estimate_s

    resolved = tc.load_config(cwd=tmp_path, environ={})
    counts = [18] * 12

    def cores(n: int) -> Callable[[int], set[int]]:
        return lambda pid: set(range(n))

    monkeypatch.setattr(os, "sched_getaffinity", cores(16), raising=False)
    sixteen = estimate_s(resolved, counts)
    assert sixteen < 120 and budget_scale(resolved, counts, 120.0) == 1.0
    monkeypatch.setattr(os, "sched_getaffinity", cores(1), raising=False)
    one = estimate_s(resolved, counts)
    from tile_harness.tune import _schedule
    from tile_runner import _ahead

    # A core alone compiles rung 0's configurations one after another; the later rungs are
    # timed by the runner that kept them, and compile nothing on any number of cores.
    compile_s = _schedule._UNIT_COMPILE_S  # pyright: ignore[reportPrivateUsage]
    assert one - sixteen == pytest.approx(sum(counts) * compile_s * (1 - 1 / 16))
    # With a runner per case (`[runner] isolate`) each rung starts runners and reloads again.
    (tmp_path / "tile.toml").write_text("[runner]\nisolate = true\n")
    isolated = tc.load_config(cwd=tmp_path, environ={})
    start_s = _schedule._RUNNER_START_S  # pyright: ignore[reportPrivateUsage]
    assert estimate_s(isolated, counts) - one >= 2 * start_s  # rung 1 and the finalists
    # The estimate's thread cap is a copy of the runner's pool size (the harness does not
    # import the runner): held equal here.

    assert _schedule._COMPILE_THREADS == _ahead._MAX_WORKERS  # pyright: ignore[reportPrivateUsage]
