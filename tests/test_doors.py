"""Three doors, one answer: `tile bench`, tile-pytest and `tile_harness.bench` on the same case.

One tunable kernel, declared as the docs show it (required keyword-only tunables, a
constraint that rules the default out on the small case, a tuning file entry for the big
one), goes through each door. Every case must run the same configuration from the same
source, on the same inputs (the kernel rounds through bfloat16, so its error against the
reference is a fingerprint of the exact inputs), with the same status; then a planted
slowdown must be called a regression by all three.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import MakeProject, TileRun

import tile_artifacts as ta
import tile_harness as th
import tile_protocol as tp
import tile_runner as tile
from tile_runner._tuning import Tunables

SMALL, BIG = "doors/scale[shape=4x64]", "doors/scale[shape=16x64]"
# `[compare] basis = "absolute"`, read by every door: on a CPU the planted slowdown slows its
# interleaved reference too (a call after a 4-16 ms one waits for the host to wake up: 12 µs
# became 80-240 µs), and the default basis, seeing the reference move, widens its noise floor
# by that move squared, which under a loaded CI machine reached the 350x slowdown itself.
FAST = (
    "[bench]\nmax_time = 0.1\nmin_runs = 10\nwarmup_runs = 1\n[runner]\ncase_timeout = 120\n"
    '[compare]\nbasis = "absolute"\n[machine]\nl2_bytes = 4194304\n'
)
_TEST_MODULE = """
import doors  # registers doors/scale
import pytest


@pytest.mark.tile_kernel("doors/scale", suite="bench")
def test_scale(tile_case, tile_bench):
    tile_case.check()
    tile_bench(tile_case.fn, *tile_case.inputs())
"""


def _tuned(root: Path) -> None:
    """The big case's entry in the project's tuning file, for this CPU and any JAX."""
    axes = tile.axes(block_rows=[1, 2, 8], num_warps=[4, 8])
    signature = Tunables.declare("doors/scale", axes, None, None).signature
    entry = tp.TuningEntry(
        kernel="doors/scale",
        case_id=BIG,
        signature=signature,
        device_kind="cpu",
        values={"block_rows": "2", "num_warps": "8"},
    )
    (root / "tuning").mkdir()
    (root / "tuning" / "cpu.json").write_bytes(
        tp.encode_tuning(tp.TuningFile(device_kind="cpu", entries=[entry]))
    )


def _facts(run_dir: Path) -> dict[str, tuple[object, ...]]:
    """Per case: configuration values and source, status, and the check's error."""
    facts: dict[str, tuple[object, ...]] = {}
    for case in ta.read_report(run_dir / "report.json").cases:
        config, check = case.config, case.check
        facts[case.case_id] = (
            config.values if config else None,
            config.source if config else None,
            case.status,
            check.rel_l2_err if check else None,
        )
    return facts


# No cache directory in the project; hypothesis's plugin (installed here for other tests) would
# cost each session ~1 s of imports.
_PLUGINS_OFF = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest")


def _pytest(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *_PLUGINS_OFF, *args, "tests"],
        cwd=root,
        env={**os.environ, "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture
def doors_project(project: MakeProject, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path / "cache"))  # no user tuning files
    monkeypatch.delenv("TILE_DOORS_SLOW", raising=False)
    root = project(["doors.py"], FAST)
    _tuned(root)
    (root / "pytest.ini").write_text("[pytest]\npythonpath = kernels\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_doors_kernel.py").write_text(_TEST_MODULE)
    return root


def test_three_doors_give_one_answer(
    doors_project: Path, tile: TileRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = doors_project
    cli = tile("bench", "--kernel", "doors/scale", "-o", str(tmp_path / "cli"), cwd=root)
    assert cli.returncode == 0, cli.stderr
    plugin = _pytest(root, "--tile-save", str(tmp_path / "pytest"))
    assert plugin.returncode == 0, plugin.stdout + plugin.stderr
    api = th.bench(kernels=["doors/scale"], project=root, output_dir=tmp_path / "api")
    assert api.ok, api.reason

    seen = {door: _facts(tmp_path / door) for door in ("cli", "pytest", "api")}
    expected_configs = {
        # 8 rows ruled out: 2, the nearest allowed, runs (with a note saying so).
        SMALL: ({"block_rows": "2", "num_warps": "4"}, "default"),
        BIG: ({"block_rows": "2", "num_warps": "8"}, "tuned"),
    }
    for door, facts in seen.items():
        assert set(facts) == {SMALL, BIG}, door
        for case_id, (values, source, status, err) in facts.items():
            assert (values, source) == expected_configs[case_id], (door, case_id)
            assert status == "success", (door, case_id)
            assert isinstance(err, float) and err > 0, (door, case_id)  # bfloat16 rounding
    # The same inputs: the bfloat16 rounding error is identical to the last bit.
    assert seen["cli"] == seen["pytest"] == seen["api"]
    # One device record, `[machine] l2_bytes` included (tile-pytest once built its own).
    devices = [
        ta.read_report(tmp_path / d / "report.json").device for d in ("cli", "pytest", "api")
    ]
    assert devices[0].l2_bytes == 4194304 and devices[0].model, devices[0]
    assert devices[0] == devices[1] == devices[2]
    big = api.cases[BIG].config
    assert big is not None and big.source == "tuned"

    # A planted slowdown: every door judges it a regression against the first run.
    monkeypatch.setenv("TILE_DOORS_SLOW", "1")
    base = str(tmp_path / "cli")
    slow_cli = tile("bench", "--kernel", "doors/scale", "--compare", base,
                    "-o", str(tmp_path / "cli-slow"), cwd=root)  # fmt: skip
    assert slow_cli.returncode == 1, slow_cli.stderr
    slow_plugin = _pytest(root, "--tile-compare", base)
    assert slow_plugin.returncode == 1, slow_plugin.stdout
    assert slow_plugin.stdout.count(": regression") >= 2
    slow_api = th.bench(kernels=["doors/scale"], project=root, compare=base,
                        output_dir=tmp_path / "api-slow")  # fmt: skip
    assert slow_api.exit_code == 1
    assert slow_api.comparison is not None
    cli_rows = json.loads((tmp_path / "cli-slow" / "comparisons.json").read_text())["rows"]
    for rows in (cli_rows, [r.model_dump() for r in slow_api.comparison.rows]):
        verdicts = {r["case_id"]: r["judgement"] for r in rows if r["metric_name"] == "time_s"}
        assert verdicts == {SMALL: "regression", BIG: "regression"}, [r["reason"] for r in rows]
        assert {r["basis"] for r in rows} == {"absolute"}  # the project's key reached the door


def test_a_misspelt_tunable_is_a_usage_error_at_the_command_line(
    doors_project: Path, tile: TileRun
) -> None:
    proc = tile("bench", "--kernel", "doors/scale", "--tunable", "block_row=2",
                "-o", str(doors_project / "run"), cwd=doors_project)  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "block_row" in proc.stderr and "block_rows" in proc.stderr
    assert "hint: override a tunable the selected kernels declare" in proc.stderr
    assert "Traceback" not in proc.stderr
