"""`tile init`: the scaffolded project, name checks, overwrite rules, and the real thing end to end:
a fresh venv with the built wheels, where `tile test` and `tile bench` pass at once."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tile_cli._errors import CliError, ExitCode
from tile_cli._init import init_project, project_name

ROOT = Path(__file__).resolve().parents[1]
KERNEL = "my_kernels/scale_bias"
EXPECTED = {
    "pyproject.toml",
    "tile.toml",
    "README.md",
    ".gitignore",
    "src/my_kernels/__init__.py",
    "src/my_kernels/kernels.py",
    "campaigns/example.toml",
}
# Variables that would tie a child process to the workspace's environment instead of its own.
_LEAKY = ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT", "PYTHONPATH", "PYTHONHOME", "CONDA_PREFIX")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _LEAKY}
    return {**env, "NO_COLOR": "1", "COLUMNS": "200", **extra}


def _run(args: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout, check=False
    )


def _cli_has_init(python: str) -> bool:
    """True once the lead has wired `tile init` into the CLI."""
    probe = _run([python, "-m", "tile_cli", "init", "--help"], cwd=ROOT, timeout=120)
    return probe.returncode == 0


def _relative(files: list[Path], root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in files}


# ---------------------------------------------------------------- the function


def test_writes_the_project(tmp_path: Path) -> None:
    dest = tmp_path / "my-kernels"
    files = init_project("my-kernels", dest)
    assert _relative(files, dest) == EXPECTED
    assert all(p.is_file() and p.stat().st_size > 0 for p in files)

    pyproject = tomllib.loads((dest / "pyproject.toml").read_text())
    assert pyproject["project"]["name"] == "my-kernels"
    assert pyproject["project"]["requires-python"] == ">=3.11"
    deps = pyproject["project"]["dependencies"]
    assert "tile-runner>=0.1,<0.2" in deps
    assert "tile-cli>=0.1,<0.2" in deps
    assert any(d.startswith("jax") for d in deps)
    assert pyproject["tool"]["uv"]["build-backend"]["module-name"] == "my_kernels"
    assert "tile" not in pyproject["tool"]  # config lives in tile.toml

    config = tomllib.loads((dest / "tile.toml").read_text())
    assert config["project"]["modules"] == ["my_kernels.kernels"]
    assert 0 < config["bench"]["max_time"] <= 1

    kernels = (dest / "src/my_kernels/kernels.py").read_text()
    assert f'"{KERNEL}"' in kernels
    assert "pl.pallas_call" in kernels and "interpret=interpret" in kernels
    assert "{{" not in kernels and "{{" not in (dest / "README.md").read_text()
    compile(kernels, "kernels.py", "exec")  # valid Python


def test_tile_toml_loads_with_tile_config(tmp_path: Path) -> None:
    import tile_config

    init_project("my-kernels", tmp_path / "p")
    loaded = tile_config.load_config(cwd=tmp_path / "p", environ={})
    assert loaded.config.project.modules == ["my_kernels.kernels"]
    quick = tile_config.load_config(cwd=tmp_path / "p", profile="quick", environ={})
    assert quick.config.bench.max_time < loaded.config.bench.max_time


def test_generated_python_passes_ruff(tmp_path: Path) -> None:
    ruff = shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed")
    init_project("my-kernels", tmp_path / "p")
    result = _run(
        [ruff, "check", "--isolated", "--line-length", "100",
         "--select", "E,F,W,I,UP,B,SIM,PTH", "src"],
        cwd=tmp_path / "p",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


def test_existing_empty_directory_is_fine(tmp_path: Path) -> None:
    dest = tmp_path / "p"
    dest.mkdir()
    assert _relative(init_project("p", dest), dest) == EXPECTED - {
        "src/my_kernels/__init__.py", "src/my_kernels/kernels.py"
    } | {"src/p/__init__.py", "src/p/kernels.py"}  # fmt: skip


def test_refuses_a_directory_that_is_not_empty(tmp_path: Path) -> None:
    dest = tmp_path / "p"
    dest.mkdir()
    (dest / "notes.txt").write_text("mine")
    with pytest.raises(CliError) as info:
        init_project("my-kernels", dest)
    assert str(dest) in info.value.message
    assert info.value.hint is not None and "--force" in info.value.hint
    assert info.value.code == ExitCode.USAGE
    assert sorted(p.name for p in dest.iterdir()) == ["notes.txt"]  # nothing written


def test_refuses_a_file(tmp_path: Path) -> None:
    (tmp_path / "p").write_text("a file")
    with pytest.raises(CliError, match="not a directory"):
        init_project("p", tmp_path / "p", force=True)


def test_force_overwrites_only_its_own_files(tmp_path: Path) -> None:
    dest = tmp_path / "p"
    init_project("my-kernels", dest)
    (dest / "tile.toml").write_text("# edited\n")
    (dest / "src/my_kernels/extra.py").write_text("KEEP = 1\n")
    (dest / "notes.txt").write_text("mine")

    files = init_project("my-kernels", dest, force=True)

    assert _relative(files, dest) == EXPECTED
    assert "modules" in (dest / "tile.toml").read_text()
    assert (dest / "src/my_kernels/extra.py").read_text() == "KEEP = 1\n"
    assert (dest / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize(
    ("name", "package"),
    [("my-kernels", "my_kernels"), ("My.Kernels", "my_kernels"), ("k2", "k2"),
     ("flash__attn", "flash_attn"), ("  spaced  ", "spaced")],
)  # fmt: skip
def test_package_name(name: str, package: str) -> None:
    assert project_name(name).package == package


@pytest.mark.parametrize(
    ("name", "says"),
    [("", "empty"), ("   ", "empty"), ("a/b", "path"), ("..\\x", "path"), (".", "path"),
     ("2fast", "identifier"), ("class", "identifier"), ("-x", "not a valid"),
     ("my kernels", "not a valid"), ("jax", "clashes"), ("tile-runner", "clashes"),
     ("json", "clashes")],
)  # fmt: skip
def test_bad_names_are_refused(tmp_path: Path, name: str, says: str) -> None:
    with pytest.raises(CliError, match=says) as info:
        init_project(name, tmp_path / "p")
    assert info.value.code == ExitCode.USAGE
    assert info.value.hint
    assert not (tmp_path / "p").exists()


# ---------------------------------------------------------------- the command


def test_cli_init_and_refusal(tmp_path: Path) -> None:
    if not _cli_has_init(sys.executable):
        pytest.skip("`tile init` is not wired into the CLI yet")
    first = _run([sys.executable, "-m", "tile_cli", "init", "my-kernels"], cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert {p.as_posix() for p in (tmp_path / "my-kernels").rglob("*") if p.is_file()} == {
        (tmp_path / "my-kernels" / f).as_posix() for f in EXPECTED
    }
    again = _run([sys.executable, "-m", "tile_cli", "init", "my-kernels"], cwd=tmp_path)
    assert again.returncode == ExitCode.USAGE
    assert "--force" in again.stderr and "my-kernels" in again.stderr
    forced = _run([sys.executable, "-m", "tile_cli", "init", "my-kernels", "--force"], cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr


# ---------------------------------------------------------------- end to end, fresh venv


@pytest.fixture(scope="session")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every workspace wheel, built once per session (TILE_TEST_WHEELS reuses a built folder)."""
    given = os.environ.get("TILE_TEST_WHEELS")
    if given:
        return Path(given)
    if shutil.which("uv") is None:
        pytest.skip("uv is not installed")
    dist = tmp_path_factory.mktemp("dist")
    build = _run(["uv", "build", "--all-packages", "--wheel", "-o", str(dist)], cwd=ROOT)
    assert build.returncode == 0, build.stderr[-4000:]
    return dist


@pytest.mark.slow
def test_fresh_project_tests_and_benches_in_a_fresh_venv(tmp_path: Path, wheels: Path) -> None:
    if shutil.which("uv") is None:
        pytest.skip("uv is not installed")
    # Third-party versions pinned to the lockfile: the ones CI tests, and already in uv's cache.
    pins = tmp_path / "constraints.txt"
    export = _run(
        ["uv", "export", "--frozen", "--no-hashes", "--no-dev", "--no-emit-workspace",
         "--all-packages", "-o", str(pins)],
        cwd=ROOT,
    )  # fmt: skip
    assert export.returncode == 0, export.stderr
    venv = tmp_path / "venv"
    python = str(venv / "bin" / "python")
    made = _run(["uv", "venv", "-q", "--python", sys.executable, str(venv)], cwd=tmp_path)
    assert made.returncode == 0, made.stderr

    def install(*what: str) -> None:
        done = _run(
            ["uv", "pip", "install", "-q", "--python", python, "--find-links", str(wheels),
             "-c", str(pins), *what],
            cwd=tmp_path,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-4000:]

    # What a user does: install the CLI, scaffold, install the project (which pulls the runner).
    install("tile-cli")
    if _cli_has_init(python):
        made = _run([str(venv / "bin" / "tile"), "init", "my-kernels"], cwd=tmp_path)
    else:  # until the lead adds the command
        code = "import sys, pathlib; from tile_cli._init import init_project; " \
               "init_project(sys.argv[1], pathlib.Path(sys.argv[1]))"  # fmt: skip
        made = _run([python, "-c", code, "my-kernels"], cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    project = tmp_path / "my-kernels"
    install(str(project))

    tile = str(venv / "bin" / "tile")
    test = _run([tile, "test"], cwd=project)
    assert test.returncode == 0, test.stdout + test.stderr
    bench = _run([tile, "bench"], cwd=project)
    assert bench.returncode == 0, bench.stdout + bench.stderr

    reports = {
        p.parent.name.split("-")[0]: p for p in (project / ".tile/runs").glob("*/report.json")
    }
    assert sorted(reports) == ["bench", "test"]
    for command, output in (("test", test.stdout), ("bench", bench.stdout)):
        report = json.loads(reports[command].read_text())
        assert report["run"]["status"] == "success"
        ids = [case["case_id"] for case in report["cases"]]
        assert ids and all(i.startswith(f"{KERNEL}[") for i in ids)
        assert all(case["status"] == "success" for case in report["cases"])
        # Test tables show full ids; bench tables group by kernel and show the axes part.
        assert KERNEL in output
        for case_id in ids:
            assert case_id.removeprefix(KERNEL) in output, (case_id, output)
    bench_report = json.loads(reports["bench"].read_text())
    assert all(case["samples"] for case in bench_report["cases"])
    test_report = json.loads(reports["test"].read_text())
    dtypes = {case["params"]["dtype"] for case in test_report["cases"]}
    assert dtypes == {"float32", "bfloat16"}
