"""Finding and reading the config file: tile.toml or `[tool.tile]`, with line numbers per key."""

from __future__ import annotations

import os
import re
import stat
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from tile_config._errors import ConfigError

__all__ = ["ConfigSource", "find_config", "read_config", "shadowed_tool_tile"]

_PART = r"""[A-Za-z0-9_-]+|"(?:[^"\\]|\\.)*"|'[^']*'"""
_PARTS = re.compile(_PART)
_HEADER = re.compile(rf"\s*\[\[?\s*((?:{_PART})(?:\s*\.\s*(?:{_PART}))*)\s*\]\]?\s*(?:#.*)?$")
_KEY = re.compile(rf"\s*((?:{_PART})(?:\s*\.\s*(?:{_PART}))*)\s*=")
_TOML_POS = re.compile(r"^(.*?)\s*\(at (?:line (\d+), column (\d+)|end of document)\)$", re.S)
_TOOL_TILE = re.compile(r"^\s*\[\s*tool\s*\.\s*[\"']?tile\b", re.M)


@dataclass(frozen=True)
class ConfigSource:
    """One parsed config file: its text, the tile table in it, and where each key sits."""

    path: Path
    display: str
    text: str
    data: dict[str, Any]
    prefix: tuple[str, ...] = ()
    lines: dict[tuple[str, ...], int] = field(default_factory=dict[tuple[str, ...], int])

    def line_of(self, path: tuple[str, ...]) -> int | None:
        """Line of the key at `path` (or of the nearest table above it that is written out)."""
        full = (*self.prefix, *path)
        for end in range(len(full), len(self.prefix) - 1, -1):
            line = self.lines.get(full[:end])
            if line is not None:
                return line
        return None

    def where(self, path: tuple[str, ...]) -> str:
        """`tile.toml:12` for the key at `path`, or just the file when the line is unknown."""
        line = self.line_of(path)
        return f"{self.display}:{line}" if line else self.display


def _unquote(part: str) -> str:
    if part[:1] == '"':
        return part[1:-1].encode("utf-8", "backslashreplace").decode("unicode_escape", "replace")
    return part[1:-1] if part[:1] == "'" else part


def _split_key(key: str) -> tuple[str, ...]:
    return tuple(_unquote(p) for p in _PARTS.findall(key))


def line_numbers(text: str) -> dict[tuple[str, ...], int]:
    """First line of every table header and key, by dotted path (a best effort, not a parser)."""
    lines: dict[tuple[str, ...], int] = {}
    table: tuple[str, ...] = ()
    in_string: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if in_string is not None:
            # Inside a multi-line string nothing is a key; look for its end only.
            if line.count(in_string) % 2 == 1:
                in_string = None
            continue
        if header := _HEADER.match(line):
            table = _split_key(header.group(1))
            for end in range(1, len(table) + 1):
                lines.setdefault(table[:end], number)
            continue
        if key := _KEY.match(line):
            path = (*table, *_split_key(key.group(1)))
            for end in range(len(table) + 1, len(path) + 1):
                lines.setdefault(path[:end], number)
        for quote in ('"""', "'''"):
            if line.count(quote) % 2 == 1:
                in_string = quote
                break
    return lines


def _has_tool_tile(path: Path) -> bool:
    """Whether a pyproject.toml holds `[tool.tile]` (a broken one that mentions it counts)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return False
    try:
        tool = tomllib.loads(text).get("tool")
    except (tomllib.TOMLDecodeError, RecursionError):
        return bool(_TOOL_TILE.search(text))
    return isinstance(tool, dict) and "tile" in tool


def find_config(start: Path) -> Path | None:
    """The first tile.toml or pyproject.toml with `[tool.tile]` walking up from `start`.

    A tile.toml that is there but is not a regular file (a directory, a FIFO that would block
    the read, a broken link) is an error, not a reason to look further up: the user meant it.
    """
    for directory in (start, *start.parents):
        candidate = directory / "tile.toml"
        if candidate.is_file():
            return candidate
        if os.path.lexists(candidate):
            raise ConfigError(
                f"{candidate}: is {_kind(candidate)}, not a config file",
                hint=f"remove `{candidate}` or make it a TOML file (`tile init` writes one)",
            )
        candidate = directory / "pyproject.toml"
        if candidate.is_file() and _has_tool_tile(candidate):
            return candidate
    return None


def shadowed_tool_tile(config_file: Path) -> Path | None:
    """The pyproject.toml beside a tile.toml whose `[tool.tile]` the tile.toml overrides."""
    if config_file.name != "tile.toml":
        return None
    pyproject = config_file.parent / "pyproject.toml"
    return pyproject if pyproject.is_file() and _has_tool_tile(pyproject) else None


def _kind(path: Path) -> str:
    """What is at `path`, in words, when it is not a regular file."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return "a broken symbolic link"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device or other special file"


def _display(path: Path, cwd: Path) -> str:
    try:
        return str(path.relative_to(cwd))
    except ValueError:
        return str(path)


def read_config(path: Path, cwd: Path) -> ConfigSource:
    """Parse `path` into a ConfigSource; every failure is a ConfigError naming file and line."""
    display = _display(path, cwd)
    if os.path.lexists(path) and not path.is_file():
        raise ConfigError(
            f"{display}: is {_kind(path)}, not a config file",
            hint=f"point at a TOML file, or remove `{display}`",
        )
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except FileNotFoundError:
        raise ConfigError(
            f"{display}: config file not found",
            hint="check the path given with `--config`, or create it with `tile init`",
        ) from None
    except OSError as exc:
        raise ConfigError(
            f"{display}: cannot read the config file: {exc.strerror or exc}",
            hint="check the file's permissions",
        ) from None
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[: exc.start].count(b"\n") + 1
        raise ConfigError(
            f"{display}:{line}: not valid UTF-8 (TOML files must be UTF-8)",
            hint=f"re-save `{display}` as UTF-8",
        ) from None
    try:
        doc = tomllib.loads(text)
    except RecursionError:  # tomllib recurses once per level: `a = [[[[...` 2000 deep
        raise ConfigError(
            f"{display}: invalid TOML: arrays or tables nested too deep to read",
            hint=f"a tile config nests a few levels; fix `{display}`",
        ) from None
    except tomllib.TOMLDecodeError as exc:
        match = _TOML_POS.match(str(exc))
        message, line, column = match.groups() if match else (str(exc), None, None)
        line = line or str(text.count("\n") + 1)
        at = f" (column {column})" if column else ""
        raise ConfigError(
            f"{display}:{line}: invalid TOML: {message}{at}",
            hint=f"fix the TOML syntax on line {line} of `{display}`",
        ) from None
    lines = line_numbers(text)
    if path.name != "pyproject.toml":
        return ConfigSource(path, display, text, doc, (), lines)
    tool: object = doc.get("tool")
    data: object = cast("dict[str, object]", tool).get("tile") if isinstance(tool, dict) else None
    where = f"{display}:{lines.get(('tool', 'tile'), 1)}"
    if data is None:
        raise ConfigError(
            f"{display}: has no `[tool.tile]` table",
            hint=f"add `[tool.tile]` to `{display}`, or point `--config` at a tile.toml",
        )
    if not isinstance(data, dict):
        raise ConfigError(
            f"{where}: `tool.tile` must be a table, got {type(data).__name__}",
            hint=f"write the settings under `[tool.tile]` headers in `{display}`",
        )
    return ConfigSource(path, display, text, cast("dict[str, Any]", data), ("tool", "tile"), lines)
