"""JSON read by tile's strict rules: no NaN or Infinity, nested at most MAX_DEPTH deep, and
(for checks) no key written twice in one object; what breaks a rule is a DecodeIssue."""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

__all__ = ["MAX_DEPTH", "DecodeIssue", "parse_json"]

MAX_DEPTH = 64
"""Deepest nesting of arrays and objects a document may have: tile's documents nest about 8
levels; a hostile file (`[[[[...`) would otherwise end the reader in a RecursionError."""
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


class DecodeIssue(Exception):
    """Internal: why a text is not a valid document; `schema` marks a name/version mismatch."""

    def __init__(
        self,
        messages: list[str],
        *,
        line: int | None = None,
        schema: bool = False,
        hint: str | None = None,
    ) -> None:
        super().__init__("; ".join(messages))
        self.messages = messages
        self.line = line
        self.schema = schema
        self.hint = hint


def _reject_constant(name: str) -> Any:
    raise ValueError(f"`{name}` is not valid JSON (write null for an unknown number)")


def _depth_problem(text: str, within: int = 0) -> str | None:
    """Why `text` nests too deep to read, or None; brackets inside strings do not count.
    `within`: how many levels deep the text sits in its document (a report's case: 2)."""
    if within + text.count("[") + text.count("{") <= MAX_DEPTH:
        return None  # the common case, decided without scanning
    depth = within
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in ("[", "{"):
            depth += 1
            if depth > MAX_DEPTH:
                line = text.count("\n", 0, match.start()) + 1
                return f"nested deeper than {MAX_DEPTH} levels (line {line})"
        elif token in ("]", "}"):
            depth -= 1
    return None


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose every key is written once: a repeated key is one value hidden behind
    another (JSON readers keep either), so a checked document must not have one."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        counts = Counter(key for key, _ in pairs)
        repeated = next(key for key, n in counts.items() if n > 1)
        raise ValueError(f"key `{repeated}` is written twice in one object")
    return obj


_STRICT = json.JSONDecoder(parse_constant=_reject_constant)
_UNIQUE = json.JSONDecoder(parse_constant=_reject_constant, object_pairs_hook=_unique_keys)
"""Made once: `json.loads` with options makes a decoder per call, a tenth of checking a line."""


def parse_json(text: str, *, unique_keys: bool = False, within: int = 0) -> Any:
    """Parse strict JSON (no NaN/Infinity) nested at most MAX_DEPTH deep; raise DecodeIssue
    with the line on failure. `unique_keys` (checks only: it costs a Python call per object)
    refuses an object with a repeated key; `within`: levels the text sits deep in its
    document (one item of a document's array: 2)."""
    problem = _depth_problem(text, within)
    if problem is not None:
        raise DecodeIssue([f"not a tile document: {problem}"])
    try:
        if text.startswith("\ufeff"):  # json.loads's own words for it
            return json.loads(text)
        return (_UNIQUE if unique_keys else _STRICT).decode(text)
    except RecursionError:  # only past MAX_DEPTH, which is refused above; kept as a guard
        raise DecodeIssue([f"nested deeper than {MAX_DEPTH} levels"]) from None
    except json.JSONDecodeError as e:
        raise DecodeIssue(
            [f"not valid JSON: {e.msg} (line {e.lineno}, column {e.colno})"], line=e.lineno
        ) from None
    except ValueError as e:
        raise DecodeIssue([str(e)]) from None
