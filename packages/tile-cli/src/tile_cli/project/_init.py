"""`tile init PATH`: scaffold a kernel project whose `tile test` and `tile bench` pass at once.

PATH may be anywhere (`my-kernels`, `../x`, `/abs/dir`); its last part is the project name.
"""

from __future__ import annotations

import keyword
import re
import shlex
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from tile_cli.project._tile_source import TileSource, find_tile_source
from tile_harness import CliError, ExitCode, os_failure

__all__ = ["ProjectName", "init_project", "next_steps", "project_name", "run_init"]

# PEP 508 project names: letters and digits, with `.`, `_` or `-` inside.
_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$")

# Import names the project's package must not take: it would hide (or be hidden by) a module
# that the kernels or tile itself import.
_TAKEN = frozenset(
    {
        "tile", "tile_protocol", "tile_config", "tile_downloads", "tile_artifacts", "tile_stats",
        "tile_runner", "tile_cli", "tile_std", "jax", "jaxlib", "numpy", "ml_dtypes", "test",
        "tests",
    }
)  # fmt: skip

# Template (under templates/init) -> path in the project; `{package}` is filled in.
_FILES: tuple[tuple[str, str], ...] = (
    ("pyproject.toml.tmpl", "pyproject.toml"),
    ("tile.toml.tmpl", "tile.toml"),
    ("README.md.tmpl", "README.md"),
    ("gitignore.tmpl", ".gitignore"),
    ("package_init.py.tmpl", "src/{package}/__init__.py"),
    ("kernels.py.tmpl", "src/{package}/kernels.py"),
    ("campaign.toml.tmpl", "campaigns/example.toml"),
    ("test_kernels.py.tmpl", "tests/test_kernels.py"),
)


@dataclass(frozen=True)
class ProjectName:
    """A checked project name: as given (the distribution name) and as a Python package."""

    name: str
    package: str


def project_name(name: str) -> ProjectName:
    """Check NAME and derive its import name (`my-kernels` -> `my_kernels`); CliError if bad."""
    stripped = name.strip()
    hint = "use letters, digits, `-` and `_`, starting with a letter, e.g. `tile init my-kernels`"
    if not stripped:
        raise CliError("the project name is empty", hint=hint, code=ExitCode.USAGE)
    if any(sep in stripped for sep in ("/", "\\")) or stripped in (".", ".."):
        raise CliError(
            f"`{name}` is a path, not a project name",
            hint="pass the project's directory instead: `tile init ../my-kernels`",
            code=ExitCode.USAGE,
        )
    if not _NAME.match(stripped):
        raise CliError(f"`{name}` is not a valid project name", hint=hint, code=ExitCode.USAGE)
    package = re.sub(r"[-_.]+", "_", stripped).lower()
    if not package.isidentifier() or keyword.iskeyword(package):
        raise CliError(
            f"`{name}` does not give a Python package name (`{package}` is not an identifier)",
            hint=hint,
            code=ExitCode.USAGE,
        )
    if package in _TAKEN or package in sys.stdlib_module_names:
        raise CliError(
            f"`{name}` would make a package `{package}` that clashes with an existing module",
            hint="pick a more specific name, e.g. `my-kernels`",
            code=ExitCode.USAGE,
        )
    return ProjectName(name=stripped, package=package)


_INDEX = TileSource("index", "the default")


def _setup_note(source: TileSource) -> str:
    """The README's paragraph on where tile comes from (empty for the index form)."""
    if source.kind == "checkout":
        return (
            "\ntile is not on a package index yet: `pyproject.toml` takes it from a checkout of\n"
            "tile (`[tool.uv.sources]`), which uv reads and pip does not.\n"
        )
    if source.kind == "wheelhouse":
        pip = source.sync_note().removeprefix("or: ")
        return (
            "\ntile is not on a package index yet: `pyproject.toml` takes it from a folder of\n"
            f"wheels (`[tool.uv] find-links`); with pip, `{pip}`.\n"
        )
    return ""


def _render(template: str, project: ProjectName, source: TileSource) -> str:
    text = (resources.files("tile_cli") / "templates" / "init" / template).read_text("utf-8")
    return (
        text.replace("{{name}}", project.name)
        .replace("{{package}}", project.package)
        .replace("{{tile_source}}\n", source.pyproject_block())
        .replace("{{setup_note}}\n", _setup_note(source))
    )


def init_project(
    name: str, dest: Path, *, force: bool = False, source: TileSource = _INDEX
) -> list[Path]:
    """Write a new kernel project NAME into directory `dest`; return the files written.

    `dest` may be missing or empty. Otherwise CliError, unless `force`: then the files this
    writes are overwritten and every other file in `dest` is left alone. `source` says where
    the project's pyproject.toml resolves tile from (default: the package index).
    """
    project = project_name(name)
    if dest.exists() and not dest.is_dir():
        raise CliError(
            f"`{dest}` exists and is not a directory",
            hint="choose another path for the project, or remove that file",
            code=ExitCode.USAGE,
        )
    if dest.is_dir() and any(dest.iterdir()) and not force:
        raise CliError(
            f"directory `{dest}` already exists and is not empty",
            hint="choose another path, or pass `--force` to overwrite the files `tile init` "
            "writes there (other files are kept)",
            code=ExitCode.USAGE,
        )
    # Render everything before writing anything, so a broken template leaves no half project.
    planned = [
        (dest / target.format(package=project.package), _render(template, project, source))
        for template, target in _FILES
    ]
    written: list[Path] = []
    try:
        for path, text in planned:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            written.append(path)
    except OSError as exc:
        where = f"write `{exc.filename or dest}`"
        hint = "check that the directory is writable"
        raise os_failure(where, exc, hint=hint, code=ExitCode.USAGE) from exc
    return written


def run_init(path: Path, *, force: bool = False, from_index: bool = False) -> int:
    """The `tile init PATH` command: scaffold into PATH (named after its last part), print
    the next steps.

    PATH may be relative (to the working directory) or absolute, and its parents are created.
    The next steps are meant to be run as printed from where `tile init` ran (a test does
    exactly that), so each is a plain command line, with its comment after `#`.
    """
    from tile_cli.terminal._ui import make_consoles

    dest = (Path.cwd() / path.expanduser()).resolve()
    project = _name_of(dest)
    source = find_tile_source(from_index=from_index)
    files = init_project(project.name, dest, force=force, source=source)
    out, err = make_consoles()
    for path_written in files:
        out.print(str(path_written.relative_to(dest)), markup=False)
    err.print(
        f"Created project `{project.name}` in `{_shown(dest)}` (package `{project.package}`).\n"
        f"{source.describe()}.\n"
        "Next:\n" + next_steps(dest, source),
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    return int(ExitCode.OK)


def _name_of(dest: Path) -> ProjectName:
    """The project name a directory gives (its last part); CliError naming the path if bad."""
    try:
        return project_name(dest.name)
    except CliError as exc:
        raise CliError(
            f"`{dest}`: {exc.message} (the project is named after its directory)",
            hint="pick a directory whose last part is a valid name, e.g. `tile init ../my-kernels`",
            code=ExitCode.USAGE,
        ) from exc


def next_steps(dest: Path, source: TileSource) -> str:
    """The commands to run next, from the directory `tile init` ran in.

    They work wherever the project is: `cd` goes to it, and `uv sync` gives the project its
    own environment with tile in it (from the checkout, the wheels or the index this tile came
    from, see `_tile_source`), so `uv run tile` there needs neither `uv run --project
    <clone>` nor the environment that ran `tile init`.
    """
    return (
        f"  cd {shlex.quote(_shown(dest))}\n"
        f"  uv sync              # {source.sync_note()}\n"
        "  uv run tile list     # the project's kernels and their case ids\n"
        "  uv run tile test     # check the sample kernel against its reference\n"
        "  uv run tile bench    # time it; results land in .tile/runs/\n"
        "  uv run pytest        # the same checks, and a benchmark, as pytest tests"
    )


def _shown(path: Path) -> str:
    """`path` as `cd` takes it here: relative below the working directory, else absolute."""
    try:
        return str(path.relative_to(Path.cwd().resolve())) or "."
    except ValueError:
        return str(path)
