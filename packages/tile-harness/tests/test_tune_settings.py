"""`tile tune` samples its rungs with `tile bench`'s settings, changing only how long."""

from __future__ import annotations

from pathlib import Path

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
