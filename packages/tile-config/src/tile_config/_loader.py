"""The layered loader: defaults < config file < profile < TILE_* env < CLI overrides."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

from pydantic import BaseModel, ValidationError

from tile_config._errors import ConfigError, Place, shown, translate, unknown_key_hint
from tile_config._files import ConfigSource, find_config, read_config, shadowed_tool_tile
from tile_config._models import (
    SECTIONS,
    TileConfig,
    annotation_at,
    is_mapping,
    known_keys,
)
from tile_config._text import coerce, parse_text

__all__ = ["Origin", "OriginKind", "ResolvedConfig", "flatten", "load_config", "profile_names"]

OriginKind = Literal["default", "file", "profile", "env", "cli"]

_NOT_FROM_ENV = ("downloads", "profiles", "campaigns")
# Whole tables of their own, not settings: left out of `flatten` and of `tile config`.
_NOT_SETTINGS = ("profiles", "campaigns")
_MISSING = object()
_RANK: dict[str, int] = {"default": 0, "file": 1, "profile": 2, "env": 3, "cli": 4}
# Variables read as a config key under a shorter name than `TILE_<SECTION>_<KEY>`.
_ENV_ALIASES: dict[str, tuple[str, str]] = {"TILE_VERBOSE": ("output", "verbose")}

_Key = tuple[str, ...]


@dataclass(frozen=True)
class Origin:
    """Where a value came from: `kind` for machines, `detail` (`tile.toml:12`) for people."""

    kind: OriginKind
    detail: str

    def __str__(self) -> str:
        return self.detail

    @property
    def hint(self) -> str:
        """What to do when the value from here is wrong."""
        if self.kind == "env":
            return f"fix or unset `{self.detail.removeprefix('env ')}`"
        if self.kind == "cli":
            return "fix the command-line flag"
        if self.kind == "default":
            return "change the value in tile.toml"
        return f"edit `{self.detail}`" if self.kind == "file" else f"edit {self.detail}"


_DEFAULT = Origin("default", "default")


@dataclass(frozen=True)
class ResolvedConfig:
    """The merged configuration, where each value came from, and the file it was read from."""

    config: TileConfig
    origins: dict[str, Origin]
    config_file: Path | None
    project_root: Path | None
    raw_text: str | None
    cwd: Path
    profile: str | None = None
    """The profiles applied, comma-separated in the order they were laid on (`ci,h200`)."""
    profiles: tuple[str, ...] = ()
    """The same names one by one; later ones win where two set the same key."""
    warnings: tuple[str, ...] = ()
    """What the user should know about how the configuration was found (it still loaded)."""

    def resolve_path(self, p: str | os.PathLike[str]) -> Path:
        """A path from the config made absolute: relative ones hang off the project root."""
        path = Path(p).expanduser()
        return path if path.is_absolute() else (self.project_root or self.cwd) / path


def _walk(value: object, path: _Key) -> Iterator[tuple[_Key, object]]:
    if isinstance(value, BaseModel):
        for name in type(value).model_fields:
            if path or name not in _NOT_SETTINGS:
                yield from _walk(getattr(value, name), (*path, name))
    elif isinstance(value, dict) and value:
        for key, item in cast("dict[object, object]", value).items():
            yield from _walk(item, (*path, str(key)))
    else:
        yield path, value


def flatten(config: TileConfig) -> dict[str, object]:
    """Dotted leaf keys to values (`bench.max_runs`, `runner.env.XLA_FLAGS`); profiles and
    campaigns left out."""
    return {".".join(path): value for path, value in _walk(config, ())}


def _apply(
    tree: dict[str, Any],
    data: Mapping[str, Any],
    path: _Key,
    origin_of: Callable[[_Key], Origin],
    origins: dict[_Key, Origin],
) -> None:
    """Deep-merge `data` into `tree`, recording the origin of every key it sets."""
    for key, value in data.items():
        here = (*path, key)
        # A download entry is replaced whole: a url from one layer and the archive kind of
        # another would describe a file that does not exist.
        whole = len(here) == 2 and here[0] == "downloads"
        if isinstance(value, dict) and not whole:
            if not isinstance(tree.get(key), dict):
                tree[key] = {}
            origins[here] = origin_of(here)
            _apply(tree[key], value, here, origin_of, origins)  # pyright: ignore[reportUnknownArgumentType]
        else:
            tree[key] = value
            for stale in [p for p in origins if p[: len(here)] == here]:
                del origins[stale]
            origins[here] = origin_of(here)
            if isinstance(value, dict):
                _apply({}, value, here, origin_of, origins)  # pyright: ignore[reportUnknownArgumentType]


def _set(
    tree: dict[str, Any], path: _Key, value: object, origin: Origin, origins: dict[_Key, Origin]
) -> None:
    """Set one dotted key (env var or flag) in the merged tree."""
    node = tree
    for part in path[:-1]:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    _apply(node, {path[-1]: value}, path[:-1], lambda _: origin, origins)


def _origin_of(path: _Key, origins: Mapping[_Key, Origin]) -> Origin:
    """The layer that set `path`: itself, or the free-form table or download entry around it."""
    if path in origins:
        return origins[path]
    for end in range(len(path) - 1, 0, -1):
        above = path[:end]
        if above in origins and (is_mapping(above) or is_mapping(above[:-1])):
            return origins[above]
    return _DEFAULT


def _env_problem(name: str, section: str, key: str) -> tuple[str, str] | None:
    """Why `name` (for `section.key`) cannot be set from the environment, if it cannot."""
    if section in _NOT_FROM_ENV:
        table = f"[{section}]"
        return f"env {name}: `{table}` cannot be set from the environment", (
            f"set `{table}` in tile.toml, or unset `{name}`"
        )
    keys = known_keys((section,)) or []
    # TILE_RUNNER_ENV_FOO reads as key `env_foo`: say that `runner.env` is a table.
    table = next((k for k in keys if is_mapping((section, k)) and key.startswith(f"{k}_")), key)
    if table in keys and is_mapping((section, table)):
        return f"env {name}: `{section}.{table}` is a table, not settable from the environment", (
            f"set `[{section}.{table}]` in tile.toml, or unset `{name}`"
        )
    if key not in keys:
        guess = unknown_key_hint(key, keys, section)
        return f"env {name}: unknown key `{section}.{key}`", f"unset `{name}`; {guess}"
    return None


def _env_layer(
    environ: Mapping[str, str], problems: list[tuple[str, str]]
) -> Iterator[tuple[_Key, object, Origin]]:
    """`TILE_<SECTION>_<KEY>` of config sections; other TILE_* (TILE_PROFILE...) are not ours."""
    for name in sorted(environ):
        if not name.startswith("TILE_"):
            continue
        if name in _ENV_ALIASES:
            section, key = _ENV_ALIASES[name]
        else:
            section, _, key = name[5:].lower().partition("_")
        if section not in SECTIONS:
            continue
        problem = _env_problem(name, section, key)
        if problem is not None:
            problems.append(problem)
            continue
        origin = Origin("env", f"env {name}")
        try:
            value = parse_text(environ[name], annotation_at((section, key)))
        except ValueError as exc:
            got = environ[name]
            problems.append(
                (f"env {name}: `{section}.{key}` expected {exc}, got {got!r}", origin.hint)
            )
            continue
        yield (section, key), value, origin


def _cli_layer(
    overrides: Mapping[str, object], problems: list[tuple[str, str]]
) -> Iterator[tuple[_Key, object, Origin]]:
    """Dotted keys from flags (`bench.max_runs`), values typed or still strings."""
    origin = Origin("cli", "cli")
    for key, value in overrides.items():
        path = tuple(str(key).split("."))
        if path[0] in _NOT_SETTINGS:
            hint = "pick one with `--profile NAME`" if path[0] == "profiles" else "edit the file"
            problems.append((f"cli: `{key}`: {path[0]} cannot be overridden", hint))
            continue
        annotation = annotation_at(path)
        if annotation is None or not all(path):
            known = known_keys(path[:-1]) or []
            hint = unknown_key_hint(path[-1], known, ".".join(path[:-1]))
            problems.append((f"cli: unknown key `{key}`", hint))
            continue
        try:
            coerced = coerce(value, annotation)
        except ValueError as exc:
            problems.append((f"cli: `{key}` expected {exc}, got {shown(value)}", origin.hint))
            continue
        yield path, coerced, origin


def _file_place(source: ConfigSource, path: _Key) -> Place:
    """Where `path` sits in the file; rank 0 when the file leaves it at its default."""
    node: object = source.data
    for part in path:
        node = (
            cast("dict[str, object]", node).get(part, _MISSING)
            if isinstance(node, dict)
            else _MISSING
        )
    where = source.where(path)
    return Place(where, f"edit `{where}`", 0 if node is _MISSING else _RANK["file"])


def _validate(data: Mapping[str, Any], locate: Callable[[_Key], Place]) -> TileConfig:
    try:
        return TileConfig.model_validate(data)
    except ValidationError as exc:
        raise translate(exc, locate, known_keys) from None


def profile_names(profile: str | Sequence[str] | None) -> tuple[str, ...]:
    """`ci,h200`, `["ci", "h200"]` or `["ci,h200"]` as the names in order; repeats kept once."""
    parts = [profile] if isinstance(profile, str) else list(profile or ())
    names = [n.strip() for part in parts for n in part.split(",") if n.strip()]
    return tuple(dict.fromkeys(names))


def load_config(
    *,
    cwd: Path | None = None,
    profile: str | Sequence[str] | None = None,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, object] | None = None,
    config_file: Path | None = None,
) -> ResolvedConfig:
    """Resolve the configuration from every layer; any problem is a ConfigError.

    `profile` names one profile or several (a sequence, or comma-separated like
    `TILE_PROFILE=ci,h200`), laid over the file in order so that a machine profile can refine
    a CI profile; each value's origin names the profile that set it.
    """
    here = (cwd if cwd is not None else Path.cwd()).resolve()
    env = os.environ if environ is None else environ
    source = _source(here, config_file)

    tree: dict[str, Any] = {}
    origins: dict[_Key, Origin] = {}
    if source is not None:
        # The file on its own first, so a bad value in it is reported even where a
        # higher layer happens to override it.
        _validate(source.data, lambda p: _file_place(source, p))
        _apply(tree, source.data, (), lambda p: Origin("file", source.where(p)), origins)

    names = _apply_profiles(tree, origins, source, profile, env)

    problems: list[tuple[str, str]] = []
    layers = [*_env_layer(env, problems), *_cli_layer(overrides or {}, problems)]
    if problems:
        raise ConfigError.collect(problems)
    for key, value, origin in layers:
        _set(tree, key, value, origin, origins)

    def locate(p: _Key) -> Place:
        if p[:1] == ("profiles",) and source is not None:
            return _file_place(source, p)
        origin = _origin_of(p, origins)
        return Place(origin.detail, origin.hint, _RANK[origin.kind])

    config = _validate(tree, locate)
    return ResolvedConfig(
        config=config,
        origins={".".join(p): _origin_of(p, origins) for p, _ in _walk(config, ())},
        config_file=source.path if source else None,
        project_root=source.path.parent if source else None,
        raw_text=source.text if source else None,
        cwd=here,
        profile=",".join(names) or None,
        profiles=names,
        warnings=_warnings(source),
    )


def _warnings(source: ConfigSource | None) -> tuple[str, ...]:
    if source is None:
        return ()
    shadowed = shadowed_tool_tile(source.path)
    if shadowed is None:
        return ()
    return (
        f"`[tool.tile]` in `{shadowed}` is ignored: `{source.display}` beside it takes "
        "precedence; move its settings into tile.toml and remove it",
    )


def _source(here: Path, config_file: Path | None) -> ConfigSource | None:
    """The tile.toml asked for (relative to `here`), else the one found upwards from `here`."""
    if config_file is not None:
        path: Path | None = (here / Path(config_file).expanduser()).resolve()
    else:
        path = find_config(here)
    return read_config(path, here) if path is not None else None


def _apply_profiles(
    tree: dict[str, Any],
    origins: dict[_Key, Origin],
    source: ConfigSource | None,
    profile: str | Sequence[str] | None,
    env: Mapping[str, str],
) -> tuple[str, ...]:
    """Lay the profiles named (else `TILE_PROFILE`'s) over `tree` in order; their names."""
    given = [profile] if isinstance(profile, str) else list(profile or ())
    if any(not name.strip() for part in given for name in part.split(",")):
        raise ConfigError(  # `--profile ''` or `--profile ci,`: it applied nothing, silently
            f"--profile {','.join(given)!r} names an empty profile",
            hint="name a `[profiles.NAME]` table of the config file, or leave `--profile` out",
        )
    names = profile_names(profile)
    from_env = not names
    if from_env:
        names = profile_names(env.get("TILE_PROFILE"))
    for name in names:
        data = _profile_data(name, source, from_env=from_env)
        _apply(tree, data, (), _profile_origin(name, source), origins)
    return names


def _profile_data(name: str, source: ConfigSource | None, *, from_env: bool) -> dict[str, Any]:
    """The raw `[profiles.NAME]` table, or a ConfigError listing the profiles there are."""
    profiles: dict[str, Any] = source.data.get("profiles", {}) if source is not None else {}
    if name in profiles:
        return profiles[name]
    asked = f"TILE_PROFILE={name}" if from_env else f"--profile {name}"
    if source is None:
        raise ConfigError(
            f"unknown profile `{name}` ({asked}): no tile.toml or `[tool.tile]` found",
            hint=f"add `[profiles.{name}]` to a tile.toml, or drop `{asked}`",
        )
    known = ", ".join(f"`{p}`" for p in sorted(profiles)) or "none"
    raise ConfigError(
        f"unknown profile `{name}` ({asked}); profiles in `{source.display}`: {known}",
        hint=f"use one of: {known}, or add `[profiles.{name}]` to `{source.display}`"
        if profiles
        else f"add `[profiles.{name}]` to `{source.display}`",
    )


def _profile_origin(name: str, source: ConfigSource | None) -> Callable[[_Key], Origin]:
    assert source is not None  # _profile_data raised when there is no file
    return lambda p: Origin("profile", f"profile {name} ({source.where(('profiles', name, *p))})")
