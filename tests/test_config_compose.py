"""Composed configuration on the real command line: profiles in order, KEY=VALUE overrides,
refused axes, TILE_VERBOSE, `tile --version` and the bench header."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support import MakeProject, TileRun, assert_schema_valid

FAST = "[bench]\nmax_time = 0.05\nmin_runs = 5\nwarmup_runs = 1\n[runner]\ncase_timeout = 30\n"
PROFILES = """\
[profiles.ci.bench]
max_runs = 40
max_time = 0.04

[profiles.small.bench]
max_time = 0.03
"""


def test_profiles_compose_in_order_with_origins(tile: TileRun, tmp_path: Path) -> None:
    (tmp_path / "tile.toml").write_text(PROFILES)
    proc = tile("config", "--json", "--profile", "ci", "--profile=small", "bench.min_runs=3")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    values = doc["values"]
    assert doc["profiles"] == ["ci", "small"]
    assert values["bench.max_runs"] == {"value": 40, "origin": "profile ci (tile.toml:2)"}
    assert values["bench.max_time"] == {"value": 0.03, "origin": "profile small (tile.toml:6)"}
    assert values["bench.min_runs"] == {"value": 3, "origin": "cli"}
    swapped = json.loads(tile("config", "--json", "--profile", "small,ci").stdout)["values"]
    assert swapped["bench.max_time"]["value"] == 0.04


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["bench.max_tim=1"], "unknown key `bench.max_tim`"),
        (["runner.pin_cpu=maybe"], "`runner.pin_cpu` expected a boolean"),
        (["softmax"], "bad `softmax`: not a setting"),
        (["--profile", "ci", "--profile", "nightly"], "unknown profile `nightly`"),
    ],
)
def test_bad_overrides_exit_2_before_anything_runs(
    tile: TileRun, tmp_path: Path, args: list[str], needle: str
) -> None:
    (tmp_path / "tile.toml").write_text(PROFILES)
    proc = tile("bench", *args)
    assert proc.returncode == 2, proc.stderr
    assert needle in proc.stderr and "hint:" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / ".tile").exists()  # refused before a run directory was made


def test_tile_verbose_is_read_or_refused(tile: TileRun, tmp_path: Path) -> None:
    assert json.loads(tile("config", "--json", env={"TILE_VERBOSE": "2"}).stdout)["values"][
        "output.verbose"
    ] == {"value": 2, "origin": "env TILE_VERBOSE"}
    proc = tile("config", env={"TILE_VERBOSE": "loud"})
    assert proc.returncode == 2
    assert "TILE_VERBOSE" in proc.stderr and "an integer" in proc.stderr


def test_version_names_every_package_without_importing_jax(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "tile_cli", "--version"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    names = [line.split()[0] for line in proc.stdout.splitlines()]
    assert names[:2] == ["tile-cli", "tile-protocol"]
    assert {"tile-runner", "tile-stats", "tile-std", "protocol", "python"} <= set(names)
    imported = {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if "|" in line}
    assert not {m for m in imported if m.split(".")[0] in ("jax", "jaxlib", "numpy")}


@pytest.mark.slow
def test_bench_header_verbose_env_and_key_value_overrides(
    tile: TileRun, project: MakeProject
) -> None:
    root = project(["good.py"], FAST)
    proc = tile("bench", "-k", "square", "bench.warmup_runs=2", env={"TILE_VERBOSE": "1"},
                cwd=root)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    # After the start-up line (`tile bench · starting the runner`), the header names the device.
    header = next(line for line in proc.stderr.splitlines() if line.startswith("tile bench on"))
    # A CPU is named by its model and cores (`tile bench on cpu: AMD EPYC, 2 cores (cpu ×1)`).
    assert re.match(r"tile bench on cpu: .+, \d+ cores? \(cpu ×1\) · timer auto → wall · warmup 2 ·",
                    header), header  # fmt: skip
    # `[bench] target_precision` 0, the default: 2% on a CPU.
    assert "runs 5-1000 · max time 50.0 ms · precision ±2% · warm" in header
    table_header = next(line for line in proc.stdout.splitlines() if "TFLOP/s" in line)
    assert "stop" in table_header and "compile" in table_header  # what -v adds
    tool = json.loads((root / ".tile" / "latest" / "config" / "resolved_tool.json").read_text())
    assert tool["bench.warmup_runs"] == {"value": 2, "origin": "cli"}


@pytest.mark.slow
def test_an_axis_no_kernel_has_is_refused_naming_the_axes(
    tile: TileRun, project: MakeProject
) -> None:
    root = project(["good.py"], FAST)
    for command in ("bench", "list"):
        proc = tile(command, "-a", "shape=8x8", cwd=root)
        assert proc.returncode == 2, proc.stderr
        assert "error: no selected kernel has the axis `shape`" in proc.stderr
        assert "fx/scale (n, dtype)" in proc.stderr and "hint:" in proc.stderr
        assert "Traceback" not in proc.stderr
    run = root / ".tile" / "latest"
    report = json.loads((run / "report.json").read_text())
    assert report["run"]["status"] == "invalid" and report["cases"] == []
    assert_schema_valid(run)
