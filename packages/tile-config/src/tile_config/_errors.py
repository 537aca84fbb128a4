"""The error of tile-config, and the translation of pydantic's errors into it."""

from __future__ import annotations

import datetime as dt
import difflib
from collections.abc import Callable, Sequence
from typing import NamedTuple

from pydantic import ValidationError

__all__ = ["ConfigError", "Place", "shown", "translate", "unknown_key_hint"]


class ConfigError(ValueError):
    """Raised when a config file, a TILE_* variable or a flag holds something tile cannot use.

    The message has one line per problem, each naming where the value came from (`tile.toml:12`,
    `env TILE_BENCH_MAX_RUNS`, `cli`), the dotted key and what was expected; `hint` says what to
    do next.
    """

    hint: str
    problems: tuple[str, ...]

    def __init__(self, message: str, *, hint: str, problems: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.hint = hint
        self.problems = tuple(problems) or (message,)

    @classmethod
    def collect(cls, problems: Sequence[tuple[str, str]]) -> ConfigError:
        """One error from (line, hint) pairs: the lines joined, the distinct hints joined."""
        lines = [line for line, _ in problems]
        hints = list(dict.fromkeys(hint for _, hint in problems if hint))
        return cls("\n".join(lines), hint="; ".join(hints), problems=lines)


class Place(NamedTuple):
    """Where a value was set, what to do about it, and how high its layer is (default = 0)."""

    where: str
    hint: str
    rank: int


Locate = Callable[[tuple[str, ...]], Place]
"""Dotted path -> the Place its value came from."""

KnownKeys = Callable[[tuple[str, ...]], Sequence[str] | None]
"""Path of a table -> the keys it accepts (None when any key goes)."""

_EXPECTED = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "finite_number": "a finite number",
    "bool_type": "a boolean (true or false)",
    "bool_parsing": "a boolean (true or false)",
    "string_type": "a string",
    "list_type": "an array",
    "dict_type": "a table",
    "model_type": "a table",
    "model_attributes_type": "a table",
    "string_too_short": "a non-empty string",
    "too_short": "a non-empty array",
}
_BOUNDS = {
    "greater_than": ("gt", ">"),
    "greater_than_equal": ("ge", ">="),
    "less_than": ("lt", "<"),
    "less_than_equal": ("le", "<="),
}


# First match wins: a bool is also an int.
_TOML_KINDS: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (bool, "boolean"),
    (int, "integer"),
    (float, "float"),
    (str, "string"),
    ((list, tuple), "array"),
    (dict, "table"),
    ((dt.datetime, dt.date, dt.time), "date/time"),
)


def toml_kind(value: object) -> str:
    """The TOML name of a value's type, for messages (Python's name for what TOML lacks)."""
    kinds = (name for kind, name in _TOML_KINDS if isinstance(value, kind))
    return next(kinds, type(value).__name__)


def shown(value: object) -> str:
    """A short rendering of a bad value with its TOML type."""
    if value is None:
        return "None"
    kind = toml_kind(value)
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, dict):
        text = "{...}"
    else:
        text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({kind})"


def dotted(path: Sequence[str | int]) -> str:
    """`('project', 'modules', 0)` -> `project.modules[0]`."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out or "(top level)"


def unknown_key_hint(key: str, known: Sequence[str], table: str) -> str:
    """`did you mean ...?` plus the list of valid keys."""
    close = difflib.get_close_matches(key, known, n=1)
    where = f"[{table}]" if table else "the top level"
    valid = ", ".join(known) if known else "none"
    guess = f"did you mean `{close[0]}`? " if close else ""
    return f"{guess}valid keys in {where}: {valid}"


def translate(exc: ValidationError, locate: Locate, known_keys: KnownKeys) -> ConfigError:
    """Turn pydantic's error into a ConfigError with one located line per problem."""
    problems: list[tuple[str, str]] = []
    for err in exc.errors(include_url=False):
        loc = tuple(err["loc"])
        path = tuple(str(p) for p in loc if not isinstance(p, int))
        kind = err["type"]
        ctx = err.get("ctx") or {}
        value = err.get("input")
        key = dotted(loc)
        if kind == "inconsistent":
            low, high = (*path, str(ctx["low"])), (*path, str(ctx["high"]))
            at_low, at_high = locate(low), locate(high)
            # Blame the higher layer: that is the value which broke a consistent pair.
            blamed, other = (at_low, at_high) if at_low.rank >= at_high.rank else (at_high, at_low)
            other_key = dotted(high if blamed is at_low else low)
            text = (
                f"`{dotted(low)}` = {ctx['low_value']} must be <= "
                f"`{dotted(high)}` = {ctx['high_value']} "
                f"(`{other_key}` from {other.where if other.rank else 'the defaults'})"
            )
            problems.append((f"{blamed.where}: {text}", blamed.hint))
            continue
        where, hint, _ = locate(path)
        if kind == "extra_forbidden":
            known = known_keys(path[:-1]) or ()
            text = f"unknown key `{key}`"
            hint = unknown_key_hint(path[-1], known, ".".join(path[:-1]))
        elif kind == "missing":
            text = f"missing required key `{key}`"
        elif kind == "literal_error":
            text = f"`{key}` must be one of {ctx.get('expected')}, got {shown(value)}"
        elif kind in _BOUNDS:
            name, op = _BOUNDS[kind]
            text = f"`{key}` must be {op} {ctx.get(name)}, got {shown(value)}"
        elif kind in _EXPECTED:
            text = f"`{key}` expected {_EXPECTED[kind]}, got {shown(value)}"
        elif kind == "value_error":
            text = f"`{key}` {str(err['msg']).removeprefix('Value error, ')}, got {shown(value)}"
        else:
            text = f"`{key}`: {err['msg']}, got {shown(value)}"
        problems.append((f"{where}: {text}", hint))
    return ConfigError.collect(problems)
