"""`tile init`: the scaffolded project, name checks, overwrite rules, where the project takes
tile from, and the real thing end to end: the printed next steps, run as printed, with tile
from a folder of wheels (every step) and with tile from this checkout, made from outside it as
a new user does (the steps where the two installs differ)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tile_cli.project._init import init_project, project_name
from tile_cli.project._tile_source import TileSource, direct_url, find_tile_source
from tile_harness._errors import CliError, ExitCode

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
    "tests/test_kernels.py",
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


def test_gitignore_keeps_outputs_out_and_baselines_in(tmp_path: Path) -> None:
    # What the scaffold's README and tests tell the user to run leaves files behind: run
    # directories (`.tile/`, `pytest --tile-save runs/main`) and `tile report`'s report.html.
    # Baselines and tuning files are meant to be committed. Asked of a real git.
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed")
    dest = tmp_path / "p"
    init_project("my-kernels", dest)
    assert _run([git, "init", "-q"], cwd=dest).returncode == 0
    paths = ["report.html", "runs/main/report.json", ".tile/latest", "baselines/cpu.json",
             "tuning/cpu.json", "src/my_kernels/kernels.py"]  # fmt: skip
    checked = _run([git, "check-ignore", "--no-index", *paths], cwd=dest)
    assert checked.stdout.split() == ["report.html", "runs/main/report.json", ".tile/latest"]


def test_docs_show_the_scaffolds_pytest_tests(tmp_path: Path) -> None:
    # docs/pytest.md's worked example is the file `tile init my-kernels` writes (what the
    # end-to-end tests below run), from its first import on.
    init_project("my-kernels", tmp_path / "p")
    code = (tmp_path / "p" / "tests" / "test_kernels.py").read_text()
    example = code[code.index("import pytest") :]
    assert example in (ROOT / "docs" / "pytest.md").read_text()


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
         "--select", "E,F,W,I,UP,B,SIM,PTH", "src", "tests"],
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


# ---------------------------------------------------------------- where tile comes from


def _pyproject(source: TileSource, tmp_path: Path) -> dict[str, Any]:
    init_project("my-kernels", tmp_path / "p", source=source)
    return tomllib.loads((tmp_path / "p" / "pyproject.toml").read_text())


def test_this_workspace_is_a_checkout() -> None:
    # The workspace installs every member editable: tile init must see this checkout.
    found = direct_url("tile-cli")
    assert found is not None and found.is_dir and found.editable
    assert found.path == ROOT / "packages" / "tile-cli"
    source = find_tile_source()
    assert source.kind == "checkout" and source.editable
    assert dict(source.paths) == {
        "tile-cli": ROOT / "packages" / "tile-cli",
        "tile-runner": ROOT / "packages" / "tile-runner",
        "tile-pytest": ROOT / "packages" / "tile-pytest",
    }
    assert f"the checkout at `{ROOT}`" in source.describe()
    assert "--from-index" in source.describe()


def test_checkout_form_points_uv_at_the_checkout(tmp_path: Path) -> None:
    pyproject = _pyproject(find_tile_source(), tmp_path)
    assert pyproject["tool"]["uv"]["sources"] == {
        "tile-cli": {"path": str(ROOT / "packages" / "tile-cli"), "editable": True},
        "tile-runner": {"path": str(ROOT / "packages" / "tile-runner"), "editable": True},
        "tile-pytest": {"path": str(ROOT / "packages" / "tile-pytest"), "editable": True},
    }
    assert pyproject["dependency-groups"]["dev"] == ["pytest>=8.0", "tile-pytest>=0.1,<0.2"]
    assert pyproject["tool"]["uv"]["build-backend"]["module-name"] == "my_kernels"
    # Bytecode at install: runners on a PYTHONDONTWRITEBYTECODE machine import jax compiled.
    assert pyproject["tool"]["uv"]["compile-bytecode"] is True
    assert "pip does not" in (tmp_path / "p" / "README.md").read_text()


def test_wheelhouse_form_uses_find_links(tmp_path: Path) -> None:
    house = tmp_path / "wheel house"  # a space, to prove the quoting
    source = TileSource("wheelhouse", "test", wheelhouse=house)
    pyproject = _pyproject(source, tmp_path)
    assert pyproject["tool"]["uv"]["find-links"] == [str(house)]
    assert pyproject["tool"]["uv"]["compile-bytecode"] is True
    assert "sources" not in pyproject["tool"]["uv"]
    assert source.sync_note() == f"or: pip install --find-links '{house}' -e ."
    assert f"--find-links '{house}'" in (tmp_path / "p" / "README.md").read_text()


def test_from_index_is_the_plain_form(tmp_path: Path) -> None:
    source = find_tile_source(from_index=True)
    assert source.kind == "index"
    pyproject = _pyproject(source, tmp_path)
    assert "sources" not in pyproject["tool"]["uv"]
    assert "find-links" not in pyproject["tool"]["uv"]
    assert "{{" not in (tmp_path / "p" / "README.md").read_text()


def test_wheel_without_a_runner_beside_it_falls_back_to_the_index(tmp_path: Path) -> None:
    from tile_cli.project._tile_source import _wheelhouse

    lonely = tmp_path / "tile_cli-0.1.0-py3-none-any.whl"
    lonely.write_bytes(b"")
    source = _wheelhouse(lonely)
    assert source.kind == "index"
    assert "no tile-runner wheel" in source.describe()


# ---------------------------------------------------------------- the command


def test_cli_init_and_refusal(tmp_path: Path) -> None:
    first = _run([sys.executable, "-m", "tile_cli", "init", "my-kernels"], cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert {p.as_posix() for p in (tmp_path / "my-kernels").rglob("*") if p.is_file()} == {
        (tmp_path / "my-kernels" / f).as_posix() for f in EXPECTED
    }
    assert f"Using tile from the checkout at `{ROOT}`" in first.stderr
    again = _run([sys.executable, "-m", "tile_cli", "init", "my-kernels"], cwd=tmp_path)
    assert again.returncode == ExitCode.USAGE
    assert again.stderr.startswith("error: ") and "\nhint: " in again.stderr
    assert "--force" in again.stderr and "my-kernels" in again.stderr
    assert "Traceback" not in again.stderr
    forced = _run([sys.executable, "-m", "tile_cli", "init", "my-kernels", "--force"], cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr


def _tile(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return _run([sys.executable, "-m", "tile_cli", *args], cwd=cwd)


def _cd_step(stderr: str) -> str:
    """The directory the printed next steps `cd` into."""
    argv = _next_steps(stderr)[0]
    assert argv[0] == "cd" and len(argv) == 2, argv
    return argv[1]


@pytest.mark.parametrize("given", ["../away/deep/my-kernels", "ABSOLUTE"])
def test_cli_init_anywhere(tmp_path: Path, given: str) -> None:
    # A path outside the working directory, relative or absolute, with missing parents.
    here = tmp_path / "here"
    here.mkdir()
    dest = tmp_path / "away" / "deep" / "my-kernels"
    made = _tile("init", str(dest) if given == "ABSOLUTE" else given, cwd=here)
    assert made.returncode == 0, made.stderr
    assert {p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()} == EXPECTED
    assert f"Created project `my-kernels` in `{dest}`" in made.stderr
    assert _cd_step(made.stderr) == str(dest)  # `cd ../away/...` would need the same cwd
    assert set(made.stdout.split()) == EXPECTED  # data on stdout: the files, project-relative


def test_cli_init_dot_names_the_project_after_the_directory(tmp_path: Path) -> None:
    (tmp_path / "fast-ops").mkdir()
    made = _tile("init", ".", cwd=tmp_path / "fast-ops")
    assert made.returncode == 0, made.stderr
    assert (tmp_path / "fast-ops" / "src" / "fast_ops" / "kernels.py").is_file()
    assert _cd_step(made.stderr) == "."


@pytest.mark.parametrize("kind", ["file", "non-empty", "bad-name", "file-as-parent"])
def test_cli_init_refusals_name_the_path(tmp_path: Path, kind: str) -> None:
    target = tmp_path / ("2fast" if kind == "bad-name" else "p")
    if kind == "file":
        target.write_text("a file")
    elif kind == "non-empty":
        target.mkdir()
        (target / "notes.txt").write_text("mine")
    elif kind == "file-as-parent":
        target.write_text("a file")
        target = target / "inner"
    before = sorted(p.name for p in tmp_path.rglob("*"))
    refused = _tile("init", str(target), cwd=tmp_path)
    assert refused.returncode == ExitCode.USAGE, refused.stderr
    assert refused.stderr.startswith("error: ") and "\nhint: " in refused.stderr
    assert str(tmp_path / ("2fast" if kind == "bad-name" else "p")) in refused.stderr
    assert "Traceback" not in refused.stderr
    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # nothing written


def test_cli_from_index(tmp_path: Path) -> None:
    done = _run(
        [sys.executable, "-m", "tile_cli", "init", "my-kernels", "--from-index"], cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert "Using tile from the package index: asked for with --from-index." in done.stderr
    assert "uv sync              # or: pip install -e ." in done.stderr
    pyproject = tomllib.loads((tmp_path / "my-kernels" / "pyproject.toml").read_text())
    assert "sources" not in pyproject["tool"]["uv"]
    assert "find-links" not in pyproject["tool"]["uv"]


# ---------------------------------------------------------------- end to end: the next steps


def _next_steps(stderr: str) -> list[list[str]]:
    """The commands `tile init` printed under `Next:`, comments dropped."""
    assert "Next:\n" in stderr, stderr
    lines = stderr.split("Next:\n", 1)[1].splitlines()
    return [shlex.split(line.split(" #", 1)[0]) for line in lines if line.strip()]


_STEPS = [
    ["uv", "sync"], ["uv", "run", "tile", "list"], ["uv", "run", "tile", "test"],
    ["uv", "run", "tile", "bench"], ["uv", "run", "pytest"],
]  # fmt: skip


def _follow(
    steps: list[list[str]],
    cwd: Path,
    *,
    into: str = "my-kernels",
    extra: dict[str, tuple[str, ...]] | None = None,
    skip: tuple[str, ...] = (),
) -> dict[str, subprocess.CompletedProcess[str]]:
    """Run the steps as a shell would (`cd` changes the directory); every one must succeed.

    `extra` adds arguments to the step named by its last word (`bench`: a shorter sampling
    budget, where time matters); `skip` leaves steps out by that word.
    """
    assert steps == [["cd", into], *_STEPS]
    done: dict[str, subprocess.CompletedProcess[str]] = {}
    for argv in steps:
        if argv[0] == "cd":
            cwd = cwd / argv[1]
            continue
        if argv[-1] in skip:
            continue
        result = _run([*argv, *(extra or {}).get(argv[-1], ())], cwd=cwd)
        assert result.returncode == 0, (argv, result.stdout[-4000:], result.stderr[-4000:])
        done[argv[-1]] = result
    return done


def _check_pytest(output: str) -> None:
    """The scaffold's pytest tests: one per test case and one per bench case, all passing."""
    last = output.rstrip().splitlines()[-1]
    assert re.fullmatch(r"=* 8 passed in [0-9.]+s( \([0-9:]+\))? =*", last), output


def _check_runs(project: Path, outputs: dict[str, str]) -> None:
    """The run directories of the commands in `outputs` (command: its stdout), and no other."""
    reports = {
        p.parent.name.split("-")[0]: p for p in (project / ".tile/runs").glob("*/report.json")
    }
    assert sorted(reports) == sorted(outputs)
    for command, output in outputs.items():
        report = json.loads(reports[command].read_text())
        assert report["run"]["status"] == "success"
        ids = [case["case_id"] for case in report["cases"]]
        assert ids and all(i.startswith(f"{KERNEL}[") for i in ids)
        assert all(case["status"] == "success" for case in report["cases"])
        # Test tables show full ids; bench tables group by kernel and show the axes part.
        assert KERNEL in output
        for case_id in ids:
            assert case_id.removeprefix(KERNEL) in output, (case_id, output)
    if "bench" in reports:
        bench_report = json.loads(reports["bench"].read_text())
        assert all(case["samples"] for case in bench_report["cases"])
    test_report = json.loads(reports["test"].read_text())
    dtypes = {case["params"]["dtype"] for case in test_report["cases"]}
    assert dtypes == {"float32", "bfloat16"}


def _need_uv() -> None:
    if shutil.which("uv") is None:
        pytest.fail("uv is not on PATH: the scaffold's next steps need it (pip install uv)")


@pytest.mark.slow
def test_a_project_outside_the_clone_made_with_uv_run_project(tmp_path: Path) -> None:
    """The new user's path (issue 40), and the one end-to-end run of the checkout form (tile
    taken editable from this clone): from a directory outside the clone, `uv run --project
    <clone> tile init ../x`, then the printed steps, as printed, from that same directory.

    The two forms differ in the install: `uv sync` building tile-stats from the clone, `tile
    list` and `tile test` starting a runner from the project's environment, and pytest finding
    tile-pytest's entry point in an editable install (collection only here). `tile bench` and
    the scaffold's tests run the same installed code and are left to the wheels test."""
    _need_uv()
    home = tmp_path / "home"
    home.mkdir()
    assert not home.resolve().is_relative_to(ROOT)
    made = _run(
        ["uv", "run", "--no-sync", "--project", str(ROOT), "tile", "init", "../code/my-kernels"],
        cwd=home,
    )
    assert made.returncode == 0, made.stderr
    assert f"the checkout at `{ROOT}`" in made.stderr
    project = tmp_path / "code" / "my-kernels"
    done = _follow(
        _next_steps(made.stderr), home, into=str(project), skip=("bench",),
        extra={"pytest": ("--collect-only", "-q")},
    )  # fmt: skip
    assert f"{KERNEL}[" in done["list"].stdout
    # The project's own environment runs tile, taken from the clone; not the clone's venv.
    assert direct_url_in(project / ".venv", "tile_cli") == (ROOT / "packages/tile-cli").as_uri()
    _check_runs(project, {"test": done["test"].stdout})
    # Every case collected as a test through the plugin: 4 checks and 4 benchmarks.
    assert re.search(r"^8 tests collected in ", done["pytest"].stdout, re.M), done["pytest"].stdout


def direct_url_in(venv: Path, module: str) -> str:
    """The `url` of a distribution's direct_url.json inside another environment."""
    (record,) = venv.glob(f"lib/python*/site-packages/{module}-*.dist-info/direct_url.json")
    return json.loads(record.read_text())["url"]


@pytest.fixture(scope="session")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every workspace wheel, built once per session; TILE_WHEELHOUSE names a folder already
    built (`just check` builds dist/ first). Not TILE_TEST_...: tile would read that as a key
    of its `[test]` table."""
    given = os.environ.get("TILE_WHEELHOUSE")
    if given:
        return Path(given)
    _need_uv()
    dist = tmp_path_factory.mktemp("dist")
    build = _run(["uv", "build", "--all-packages", "--wheel", "-o", str(dist)], cwd=ROOT)
    assert build.returncode == 0, build.stderr[-4000:]
    return dist


@pytest.mark.slow
def test_next_steps_work_with_tile_from_wheels(tmp_path: Path, wheels: Path) -> None:
    """tile installed from a folder of wheels: the project takes tile from the same folder."""
    _need_uv()
    venv = tmp_path / "venv"
    made = _run(["uv", "venv", "-q", "--python", sys.executable, str(venv)], cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    (cli_wheel,) = wheels.glob("tile_cli-*.whl")
    installed = _run(
        ["uv", "pip", "install", "-q", "--python", str(venv / "bin" / "python"),
         "--find-links", str(wheels), str(cli_wheel)],
        cwd=tmp_path,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr[-4000:]

    made = _run([str(venv / "bin" / "tile"), "init", "my-kernels"], cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert f"Using tile from the wheels in `{wheels}`" in made.stderr
    done = _follow(_next_steps(made.stderr), tmp_path, extra={"bench": ("bench.max_time=0.05",)})
    project = tmp_path / "my-kernels"
    # uv resolved every tile package from that folder (a flat index in its lockfile).
    lock = tomllib.loads((project / "uv.lock").read_text())
    sources = {p["name"]: p["source"] for p in lock["package"] if p["name"].startswith("tile-")}
    assert set(sources) >= {"tile-cli", "tile-runner", "tile-stats", "tile-protocol"}
    assert all(src == {"registry": str(wheels)} for src in sources.values()), sources
    _check_runs(project, {"test": done["test"].stdout, "bench": done["bench"].stdout})
    _check_pytest(done["pytest"].stdout)
