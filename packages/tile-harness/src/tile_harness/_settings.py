"""Configuration and flags: load the layered config, read the flags that select cases."""

from __future__ import annotations

import fnmatch
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import tile_protocol as tp
from tile_harness._errors import CliError, ExitCode
from tile_harness._escape import escape_controls

if TYPE_CHECKING:
    from tile_config import ResolvedConfig

__all__ = [
    "CacheLocation",
    "Selection",
    "compile_cache_dir",
    "compile_cache_location",
    "describe_origin",
    "given",
    "kernel_matches",
    "matches",
    "resolve_config",
    "parse_axes",
    "parse_modes",
    "parse_assignments",
    "parse_sets",
    "parse_tunables",
]


@dataclass(frozen=True)
class Selection:
    """Which cases to run: the flags shared by list/bench/test/build."""

    filters: Sequence[str] = ()
    kernels: Sequence[str] = ()
    axes: Sequence[str] = ()
    plugins: Sequence[str] = ()
    case_ids: Sequence[str] | None = None
    overrides: Mapping[str, object] = field(default_factory=dict[str, object])
    tunables: Sequence[str] = ()
    """`--tunable NAME=VALUE`: values that override default and tuned ones."""
    modes: Sequence[str] = ()
    """`--mode`: fwd, bwd, fwd_bwd or all, each flag one or `A,B`; none: `fwd` alone."""
    capture: str | None = None
    """`--from MODULE:FUNCTION`: capture the program's kernel calls as the cases to run."""
    cases_file: Path | None = None
    """`--cases FILE`: run the cases a `--save-cases` file lists (`with_cases` reads it)."""
    save_cases: Path | None = None
    """`--save-cases FILE`: write the captured cases there."""
    cases: Sequence[tp.CaseSpec] | None = None
    """The cases `--from` captured or `--cases` listed, instead of the kernels' declared axes."""


_GLOB_CHARS = frozenset("*?[")


def matches(text: str, pattern: str) -> bool:
    """`-k` on a case id: a substring, or a glob (with `*?[`) matching part of it.

    The runner's rule (`tile_runner._plan.matches`), for the host's own selections: a
    campaign's `[select]` and the did-you-mean of a filter that matched nothing.
    """
    if pattern in text:
        return True
    return bool(_GLOB_CHARS & set(pattern)) and fnmatch.fnmatchcase(text, f"*{pattern}*")


def kernel_matches(name: str, pattern: str) -> bool:
    """`--kernel` on a kernel's name: the whole name, or a glob on it."""
    return name == pattern or fnmatch.fnmatchcase(name, pattern)


def resolve_config(
    profile: str | None, overrides: Mapping[str, object], cwd: Path | None = None
) -> ResolvedConfig:
    """Resolve the layered configuration, turning its errors into exit code 2."""
    from tile_config import ConfigError, load_config

    try:
        resolved = load_config(
            cwd=cwd or Path.cwd(), profile=profile, environ=os.environ, overrides=overrides
        )
    except ConfigError as exc:
        raise CliError(
            str(exc),
            hint=getattr(exc, "hint", None)
            or "fix the value, or run `tile config` to see where each value comes from",
            code=ExitCode.USAGE,
        ) from None
    _check_offline()
    for warning in resolved.warnings:
        if warning not in _WARNED:  # a command may load the configuration more than once
            _WARNED.add(warning)
            print(f"warning: {escape_controls(warning)}", file=sys.stderr)
    return resolved


_WARNED: set[str] = set()


def _check_offline() -> None:
    """`TILE_OFFLINE=maybe` refused by every command that loads the configuration: the
    runners' downloads read it too, and `tile bench` went on as if it were unset."""
    from tile_downloads import DownloadError, resolve_offline

    try:
        resolve_offline()
    except DownloadError as exc:
        raise CliError(str(exc), hint=exc.hint, code=ExitCode.USAGE) from None


def parse_axes(values: Sequence[str]) -> dict[str, list[str]]:
    """`-a shape=8x128,16x256 -a dtype=float32` into {axis: [values]}."""
    axes: dict[str, list[str]] = {}
    for raw in values:
        name, sep, rest = raw.partition("=")
        items = [v.strip() for v in rest.split(",") if v.strip()]
        if not sep or not name.strip() or not items:
            raise CliError(
                f"bad axis override `{raw}`",
                hint="write it as `-a AXIS=V1,V2`, e.g. `-a dtype=float32,bfloat16`",
            )
        if name.strip() == "dtype":
            _check_dtypes(raw, items)
        axes[name.strip()] = items
    return axes


def _check_dtypes(raw: str, names: Sequence[str]) -> None:
    """Refuse a dtype the runner would refuse, before JAX starts (exit 2, not 3)."""
    from tile_config import dtype_problem

    for name in names:
        problem = dtype_problem(name)
        if problem is not None:
            raise CliError(
                f"bad axis override `{raw}`: {problem}",
                hint="write dtypes as JAX names them, e.g. `-a dtype=float32,bfloat16`",
            )


def parse_sets(values: Sequence[str], *, flag: str = "--set ") -> dict[str, object]:
    """`--set bench.max_time=0.5 --set runner.env.XLA_FLAGS=...` into {dotted key: text}.

    The text is read as the key's declared type by the loader (like a TILE_* variable), which
    also names an unknown key; only the `KEY=VALUE` shape is checked here.
    """
    overrides: dict[str, object] = {}
    for raw in values:
        key, sep, value = raw.partition("=")
        parts = key.strip().split(".")
        # A blank in a key (`runner.env.A B=1`) names no setting and no variable a process has.
        if not sep or not key.strip() or any(not p or any(c.isspace() for c in p) for p in parts):
            raise CliError(
                f"bad `{flag}{raw}`: not a setting",
                hint=f"write it as `{flag}SECTION.KEY=VALUE`, e.g. `{flag}bench.max_time=0.5` or "
                f"`{flag}runner.env.XLA_FLAGS=--xla_gpu_autotune_level=0`"
                + ("; filter cases with `-k TEXT`" if not flag else ""),
            )
        overrides[key.strip()] = value
    return overrides


def parse_assignments(values: Sequence[str] | None) -> dict[str, object]:
    """Positional `bench.max_time=0.2 runner.pin_cpu=true` (Hydra-style) into overrides."""
    return parse_sets(values or [], flag="")


def parse_modes(values: Sequence[str]) -> list[tp.ModeChoice] | None:
    """`--mode bwd --mode fwd,fwd_bwd` into the request's modes; None when none was given."""
    out: list[tp.ModeChoice] = []
    for raw in values:
        for word in (w.strip() for w in raw.split(",")):
            if word not in tp.MODE_CHOICES:
                raise CliError(
                    f"unknown mode `{word}` in `--mode {raw}`",
                    hint=f"use {', '.join(tp.MODE_CHOICES)} (repeat the flag, or `A,B`)",
                )
            if word not in out:
                out.append(word)
    return out or None


def parse_tunables(values: Sequence[str]) -> dict[str, str]:
    """`--tunable block_rows=4 --tunable std/matmul:block=128x128` into {name: value}; a
    `KERNEL:` prefix narrows an override to that kernel (the runner applies it)."""
    out: dict[str, str] = {}
    for raw in values:
        name, sep, value = raw.partition("=")
        if not sep or not name.strip() or not value.strip() or "," in value:
            raise CliError(
                f"bad tunable override `{raw}`",
                hint="write it as `--tunable NAME=VALUE` (e.g. `--tunable block_rows=4`), or "
                "`--tunable KERNEL:NAME=VALUE` for one kernel's",
            )
        out[name.strip()] = value.strip()
    return out


@dataclass(frozen=True)
class CacheLocation:
    """Where JAX's persistent compilation cache lives, why there, and whether runners use it."""

    path: Path
    origin: str
    """How the path was chosen, for people: the config key and its source, or the env var."""
    enabled: bool
    """`[runner] compile_cache`; the location is resolved even when it is off."""


def compile_cache_location(resolved: ResolvedConfig) -> CacheLocation:
    """`[runner] jax_cache_dir`, else `jax/` in tile's cache directory (`TILE_CACHE_DIR`, else
    the user cache dir); the one resolution behind the runners' cache and `tile cache`."""
    runner = resolved.config.runner
    if runner.jax_cache_dir:
        where = describe_origin(resolved.origins.get("runner.jax_cache_dir"))
        path = resolved.resolve_path(runner.jax_cache_dir).absolute()
        return CacheLocation(path, f"`[runner] jax_cache_dir` ({where})", runner.compile_cache)
    from tile_downloads import resolve_cache_dir

    origin = (
        "`jax/` in `TILE_CACHE_DIR`"
        if os.environ.get("TILE_CACHE_DIR")
        else "default: `jax/` in the user cache directory"
    )
    return CacheLocation(resolve_cache_dir() / "jax", origin, runner.compile_cache)


def compile_cache_dir(resolved: ResolvedConfig) -> str | None:
    """JAX's persistent compilation cache for the runners (`compile_cache_location`); None
    when `[runner] compile_cache` is off.

    On by default: on the H200 a cache hit cut a case's compile from 0.06-0.14 s to under
    0.01 s (docs/gpu.md), and kernel authors rerun the same cases all day.
    """
    location = compile_cache_location(resolved)
    return str(location.path) if location.enabled else None


def given(flags: Mapping[str, object | None]) -> dict[str, object]:
    """Only the flags the user gave (not None), keyed by dotted config key."""
    return {key: value for key, value in flags.items() if value is not None}


def describe_origin(origin: object) -> str:
    """Where a config value came from, e.g. `tile.toml:12` or `env TILE_BENCH_MAX_RUNS`."""
    return str(getattr(origin, "detail", None) or "default")
