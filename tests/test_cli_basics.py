"""The front end: fast start without jax/numpy, config errors, exit codes, run directories."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import MakeProject, TileRun, make_project, run_tile

FAST = "[bench]\nmax_time = 0.05\nmin_runs = 5\nwarmup_runs = 1\n"
Done = subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def scale_bench(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Done]:
    """`tile bench -k scale -v` in a project of fixtures/good.py, once for the tests that read
    its run directory and output (each reads; none changes it)."""
    root = make_project(tmp_path_factory.mktemp("scale") / "proj", ["good.py"], FAST)
    return root, run_tile("bench", "-k", "scale", "-v", cwd=root)


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["list", "--help"],
        ["bench", "--help"],
        ["report", "--help"],
        ["history", "--help"],
    ],
)
def test_help_never_imports_jax_numpy_or_tile_report(tmp_path: Path, args: list[str]) -> None:
    # -X importtime lists every module a real `tile` process imports, on stderr.
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "tile_cli", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    imported = {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if "|" in line}
    assert "tile_cli._app" in imported
    heavy = {m for m in imported if m.split(".")[0] in ("jax", "jaxlib", "numpy", "tile_report")}
    assert not heavy, heavy
    assert "Usage" in proc.stdout


def test_protocol_schema_is_json(tile: TileRun) -> None:
    proc = tile("protocol", "schema")
    assert proc.returncode == 0
    schema = json.loads(proc.stdout)
    assert "bench_result" in json.dumps(schema)


def test_toml_syntax_error_exits_2_naming_file_and_line(tile: TileRun, tmp_path: Path) -> None:
    (tmp_path / "tile.toml").write_text('[bench]\nmax_runs = 10\nmin_runs = "\n')
    proc = tile("bench")
    assert proc.returncode == 2
    assert "tile.toml:3" in proc.stderr
    assert "hint:" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_bad_env_value_exits_2_naming_the_variable(tile: TileRun) -> None:
    proc = tile("config", env={"TILE_BENCH_MAX_RUNS": "abc"})
    assert proc.returncode == 2
    assert "TILE_BENCH_MAX_RUNS" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_config_shows_origins(tile: TileRun, tmp_path: Path) -> None:
    (tmp_path / "tile.toml").write_text("[bench]\nmax_runs = 77\n")
    proc = tile("config", "--json", env={"TILE_BENCH_COLD": "false", "TILE_BENCH_MIN_RUNS": "7"})
    assert proc.returncode == 0, proc.stderr
    values = json.loads(proc.stdout)["values"]
    assert values["bench.max_runs"] == {"value": 77, "origin": "tile.toml:2"}
    assert values["bench.cold"]["value"] is False
    assert values["bench.min_runs"] == {"value": 7, "origin": "env TILE_BENCH_MIN_RUNS"}
    assert values["bench.timer"]["origin"] == "default"


def test_wrong_kernel_fails_test_with_exit_1_and_shows_its_error(
    tile: TileRun, project: MakeProject
) -> None:
    root = project(["good.py"], FAST)
    proc = tile("test", cwd=root)
    assert proc.returncode == 1, proc.stderr
    assert "fx/wrong[n=256,dtype=float32]" in proc.stderr
    assert "> tol" in proc.stderr  # its error against the tolerance
    ok = tile("test", "-k", "scale", cwd=root)
    assert ok.returncode == 0, ok.stderr
    assert "fx/scale[n=1024,dtype=float32]" in ok.stdout


def test_bench_writes_a_valid_run_directory(tile: TileRun, scale_bench: tuple[Path, Done]) -> None:
    root, proc = scale_bench
    assert proc.returncode == 0, proc.stderr
    assert "[n=256,dtype=float32]" in proc.stdout
    latest = root / ".tile" / "latest"
    assert latest.is_symlink()
    report = json.loads((latest / "report.json").read_text())
    assert report["run"]["status"] == "success"
    assert [c["case_id"] for c in report["cases"]] == [
        "fx/scale[n=256,dtype=float32]",
        "fx/scale[n=1024,dtype=float32]",
    ]
    case = report["cases"][0]
    assert case["stats"]["n"] == len(case["samples"]) >= 5
    assert case["stats"]["stop_reason"] in ("precision", "max_time", "max_runs")
    assert case["work"]["bytes"] == 2 * 256 * 4
    lines = (latest / "metrics.jsonl").read_text().splitlines()
    names = {json.loads(line)["metric_name"] for line in lines}
    assert {"time_s", "ref_time_s", "speedup", "bandwidth_gbps", "compile_s"} <= names
    check = tile("schema-check", str(latest), cwd=root)
    assert check.returncode == 0, check.stdout + check.stderr


def test_filter_matching_nothing_is_a_usage_error(tile: TileRun, project: MakeProject) -> None:
    # Issue 40: a typo is a usage error naming the filter, with the names close to it, and it
    # leaves no run directory behind nor moves `.tile/latest` off the last real run.
    root = project(["good.py"], FAST)
    nothing = tile("bench", "-k", "no-such-kernel", cwd=root)
    assert nothing.returncode == 2
    assert "no case matches `-k no-such-kernel`" in nothing.stderr
    assert "hint: run `tile list` to see every case id" in nothing.stderr
    assert "Traceback" not in nothing.stderr
    assert not (root / ".tile").exists()  # not even an empty `.tile/runs/` left behind
    done = tile("test", "--kernel", "fx/square", cwd=root)
    assert done.returncode == 0, done.stderr
    latest = root / ".tile" / "latest"
    before = (latest.resolve(), sorted((root / ".tile" / "runs").iterdir()))

    proc = tile("bench", "-k", "sqare", cwd=root)
    assert proc.returncode == 2, proc.stderr
    assert "error: no case matches `-k sqare`" in proc.stderr
    assert "hint: did you mean `-k square` or `-k scale`?" in proc.stderr
    typo = tile("test", "--kernel", "fx/scal", "-o", "runs/typo", cwd=root)
    assert typo.returncode == 2, typo.stderr
    assert "hint: did you mean `--kernel fx/scale`" in typo.stderr
    assert not (root / "runs" / "typo").exists()
    assert (latest.resolve(), sorted((root / ".tile" / "runs").iterdir())) == before

    listed = tile("list", "--kernel", "fx/sqare", cwd=root)
    assert listed.returncode == 2 and "did you mean `--kernel fx/square`" in listed.stderr


def test_missing_runner_python_is_a_usage_error(tile: TileRun, project: MakeProject) -> None:
    root = project(["good.py"], FAST + '[runner]\npython = "/nonexistent/python3"\n')
    proc = tile("bench", cwd=root)
    assert proc.returncode == 2
    assert "/nonexistent/python3" in proc.stderr and "hint:" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_unusable_output_dir_is_a_usage_error(tile: TileRun, project: MakeProject) -> None:
    root = project(["good.py"], FAST)
    (root / "occupied").write_text("a file where the run directory should go")
    proc = tile("bench", "--output-dir", str(root / "occupied"), cwd=root)
    assert proc.returncode == 2
    assert "occupied" in proc.stderr and "hint:" in proc.stderr


def test_secret_env_is_redacted_everywhere(tile: TileRun, project: MakeProject) -> None:
    secret = "s3cr3t-value-4217"
    root = project(["good.py"], FAST + f'[runner.env]\nMY_API_TOKEN = "{secret}"\nPLAIN = "ok"\n')
    proc = tile("bench", "-k", "square", cwd=root)
    assert proc.returncode == 0, proc.stderr
    run = root / ".tile" / "latest"
    commands = [
        json.loads(x) for x in (run / "commands" / "commands.jsonl").read_text().splitlines()
    ]
    assert commands[0]["environment_overrides"] == {"MY_API_TOKEN": "<redacted>", "PLAIN": "ok"}
    assert "MY_API_TOKEN" in commands[0]["redacted_environment_keys"]
    for path in run.rglob("*"):
        if path.is_file():
            assert secret not in path.read_text(errors="replace"), path


def test_compile_cache_is_on_by_default_and_can_be_turned_off(
    tile: TileRun, project: MakeProject, tmp_path: Path
) -> None:
    root = project(["good.py"], FAST)
    cache = tmp_path / "user-cache"
    env = {"TILE_CACHE_DIR": str(cache)}

    def phases(*args: str) -> list[dict[str, object]]:
        out = tmp_path / f"run-{len(list(tmp_path.glob('run-*')))}"
        proc = tile("bench", "-k", "scale", "-o", str(out), *args, cwd=root, env=env)
        assert proc.returncode == 0, proc.stderr
        report = json.loads((out / "report.json").read_text())
        return [c["phases"] for c in report["cases"]]

    first = phases()
    assert (cache / "jax").is_dir()
    assert (cache / "jax").stat().st_mode & 0o777 == 0o700
    assert all(p["cache_miss_count"] for p in first), first
    second = phases()
    assert all(p["cache_hit"] is True for p in second), second
    off = phases("--no-compile-cache")
    assert all(p["cache_hit"] is None for p in off), off


def test_bench_accounts_for_its_time(
    tile: TileRun, scale_bench: tuple[Path, Done], tmp_path: Path
) -> None:
    root, proc = scale_bench
    assert proc.returncode == 0, proc.stderr
    assert "time accounting" in proc.stdout
    assert "fx/scale[n=256,dtype=float32]" in proc.stdout.split("time accounting")[1]
    assert "overhead ratio" in proc.stderr
    # A copy of the run: the shared one stays whole for the other test.
    run = shutil.copytree((root / ".tile" / "latest").resolve(), tmp_path / "run")
    report = json.loads((run / "report.json").read_text())
    timing = report["timing"]
    assert timing["runner_start_s"] > 0 and timing["compile_s"] > 0 and timing["sampled_s"] > 0
    needed = timing["runner_start_s"] + timing["compile_s"] + timing["sampled_s"]
    assert timing["overhead_ratio"] == pytest.approx(timing["wall_s"] / needed)
    for case in report["cases"]:
        a = case["accounting"]
        parts = sum(v for k, v in a.items() if k != "total_s")
        assert parts == pytest.approx(a["total_s"])
        assert a["sample_s"] >= sum(case["samples"])
    # schema-check holds the parts to their total.
    report["cases"][0]["accounting"]["other_s"] += 1.0
    (run / "report.json").write_text(json.dumps(report))
    check = tile("schema-check", str(run), cwd=root)
    assert check.returncode == 1
    assert "not total_s" in check.stdout + check.stderr
