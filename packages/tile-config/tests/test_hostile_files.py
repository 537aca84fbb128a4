"""Config files that are there but unusable, and keys that would do nothing: refused or said."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tile_config import DTYPE_NAMES, ConfigError, dtype_problem, load_config


def _error(cwd: Path, **kwargs: Any) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_config(cwd=cwd, environ={}, **kwargs)
    assert info.value.hint
    return info.value


def _directory(path: Path) -> None:
    path.mkdir()


def _broken_link(path: Path) -> None:
    path.symlink_to(path.parent / "gone.toml")


@pytest.mark.parametrize(
    ("make", "kind"),
    [
        (_directory, "a directory"),
        (os.mkfifo, "a FIFO (named pipe)"),
        (_broken_link, "a broken symbolic link"),
    ],
    ids=["directory", "fifo", "broken-link"],
)
def test_tile_toml_that_is_not_a_file_is_an_error_not_skipped(
    tmp_path: Path, make: Callable[[Path], object], kind: str
) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.tile.bench]\nmax_runs = 7\n")
    project = tmp_path / "project"
    project.mkdir()
    make(project / "tile.toml")
    error = _error(project)
    assert f"tile.toml: is {kind}, not a config file" in str(error)


def test_explicit_config_file_that_is_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.toml")
    error = _error(tmp_path, config_file=Path("pipe.toml"))
    assert "pipe.toml: is a FIFO (named pipe), not a config file" in str(error)


def test_tool_tile_beside_tile_toml_is_ignored_with_a_warning(tmp_path: Path) -> None:
    (tmp_path / "tile.toml").write_text("[bench]\nmax_runs = 50\n")
    (tmp_path / "pyproject.toml").write_text("[tool.tile.bench]\nmax_runs = 7\n")
    resolved = load_config(cwd=tmp_path, environ={})
    assert resolved.config.bench.max_runs == 50
    (warning,) = resolved.warnings
    assert "`[tool.tile]` in" in warning and "is ignored" in warning
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    assert load_config(cwd=tmp_path, environ={}).warnings == ()


def test_tolerances_accept_only_dtype_names_and_default(tmp_path: Path) -> None:
    (tmp_path / "tile.toml").write_text(
        "[test]\ntolerances = { float32 = 1e-4, default = 1e-3, bfloat16 = 2e-2 }\n"
    )
    tolerances = load_config(cwd=tmp_path, environ={}).config.test.tolerances
    assert tolerances == {"float32": 1e-4, "default": 1e-3, "bfloat16": 2e-2}
    (tmp_path / "tile.toml").write_text("[test]\ntolerances = { flaot16 = 1e-2 }\n")
    error = _error(tmp_path)
    assert "tile.toml:2" in str(error)
    assert "`flaot16` is not a dtype name (did you mean `float16`?)" in str(error)


def test_dtype_names() -> None:
    assert {"float32", "bfloat16", "int8", "bool", "float8_e4m3fn"} <= DTYPE_NAMES
    assert dtype_problem("float32") is None
    assert dtype_problem("notadtype") == "`notadtype` is not a dtype name"


def test_a_tile_toml_nested_too_deep_is_an_error_not_a_recursion_error(tmp_path: Path) -> None:
    """Issue 39, item 11: `a = [[[...]]]` 2000 deep ended `tile` in an internal error."""
    (tmp_path / "tile.toml").write_text("a = " + "[" * 2000 + "]" * 2000 + "\n")
    error = _error(tmp_path)
    assert "nested too deep" in str(error) and "tile.toml" in str(error)


@pytest.mark.parametrize("profile", ["", " ", "ci,", ["ci", ""]])
def test_an_empty_profile_name_is_an_error(tmp_path: Path, profile: str | list[str]) -> None:
    """Issue 39, item 11: `--profile ''` was accepted and applied nothing."""
    (tmp_path / "tile.toml").write_text("[profiles.ci.bench]\nrounds = 2\n")
    assert "empty profile" in str(_error(tmp_path, profile=profile))


@pytest.mark.parametrize(
    ("toml", "said"),
    [
        ("[machine]\npeak_tflops = { notadtype = 5 }\n", "`notadtype` is not a dtype name"),
        ("[bench]\nmax_runs = 99999999999999999999\n", "must be <= 1000000000"),
        # The sweep of 2026-12-05: the same value in the keys beside it hung the case until
        # its timeout (warmup_runs), and the blank `--set` refuses came in through tile.toml.
        ("[bench]\nwarmup_runs = 99999999999999999999\n", "must be <= 1000000000"),
        ("[bench]\nbatch = 99999999999999999999\n", "must be <= 1000000000"),
        ('[runner.env]\n"A B" = "1"\n', "`A B`, which is not a usable environment variable"),
    ],
    ids=["peak_tflops-key", "max_runs-huge", "warmup_runs-huge", "batch-huge", "env-blank"],
)
def test_values_that_would_be_ignored_or_fail_later_are_refused(
    tmp_path: Path, toml: str, said: str
) -> None:
    """Issue 39, item 11: both were accepted; the first was never used, the second failed
    later, in the runner."""
    (tmp_path / "tile.toml").write_text(toml)
    assert said in str(_error(tmp_path))


def test_tolerances_still_take_default(tmp_path: Path) -> None:
    (tmp_path / "tile.toml").write_text("[test]\ntolerances = { default = 1e-3, float32 = 1e-5 }\n")
    config = load_config(cwd=tmp_path, environ={}).config
    assert config.test.tolerances == {"default": 1e-3, "float32": 1e-5}
