"""`tile device` on a CPU: no peaks, and `--calibrate` refuses (exit 2) rather than cache a
copy rate that the CPU's caches beat by several times."""

from __future__ import annotations

from pathlib import Path

from support import TileRun


def test_calibrate_on_a_cpu_refuses_with_a_hint_and_caches_nothing(
    tile: TileRun, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    env = {"JAX_PLATFORMS": "cpu", "TILE_CACHE_DIR": str(cache)}
    proc = tile("device", "--calibrate", env=env)
    assert proc.returncode == 2, proc.stderr
    assert "error: `tile device --calibrate` does not apply to a CPU" in proc.stderr
    assert "hint: to see them anyway, set `[machine] peak_bandwidth_gbps`" in proc.stderr
    assert proc.stdout == ""
    assert not list(cache.rglob("*.json"))

    shown = tile("device", env=env)
    assert shown.returncode == 0, shown.stderr
    assert "none on a CPU, unless `[machine]` sets them" in shown.stdout
