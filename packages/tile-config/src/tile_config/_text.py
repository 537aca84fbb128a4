"""Config values written as text (TILE_* variables, `--set`, `KEY=VALUE`), read as the type
the key declares; values from Python callers converted the way TOML would have them."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, cast, get_args, get_origin

from pydantic import BaseModel

from tile_config._models import is_optional, strip_annotation

__all__ = ["coerce", "parse_text"]

_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})
_NONE = frozenset({"", "none", "null"})


def _boolean(word: str) -> bool:
    if word.lower() not in _TRUE | _FALSE:
        raise ValueError(word)
    return word.lower() in _TRUE


# Scalar types read from one word: how, and what the error says was expected.
_WORDS: dict[type, tuple[Callable[[str], object], str]] = {
    bool: (_boolean, "a boolean (true/false, yes/no, on/off, 1/0)"),
    int: (int, "an integer"),
    float: (float, "a number"),
}


def parse_text(text: str, annotation: Any) -> object:
    """Read an env or CLI string as the declared type; ValueError says which type was expected."""
    if is_optional(annotation) and text.strip().lower() in _NONE:
        return None
    bare = strip_annotation(annotation)
    if isinstance(bare, type) and bare in _WORDS:
        read, expected = _WORDS[bare]
        try:
            return read(text.strip())
        except ValueError:
            raise ValueError(expected) from None
    if get_origin(bare) is list:
        item = get_args(bare)[0]
        return [parse_text(part.strip(), item) for part in text.split(",") if part.strip()]
    if get_origin(bare) is Literal:
        return text.strip()
    if bare is str:
        return text
    raise ValueError("a table, which cannot be written as text")


def coerce(value: object, annotation: Any) -> object:
    """CLI override values: strings parsed like env values, containers converted to TOML's."""
    if isinstance(value, os.PathLike):
        value = os.fspath(cast("os.PathLike[Any]", value))
    if isinstance(value, str):
        return parse_text(value, annotation)
    bare = strip_annotation(annotation)
    if isinstance(value, list | tuple):
        item = get_args(bare)[0] if get_origin(bare) is list else Any
        return [coerce(v, item) for v in cast("Sequence[object]", value)]
    if isinstance(value, Mapping):
        out: dict[str, object] = {}
        for key, item in cast("Mapping[object, object]", value).items():
            if get_origin(bare) is dict:
                inner = get_args(bare)[1]
            elif isinstance(bare, type) and issubclass(bare, BaseModel):
                field = bare.model_fields.get(str(key))
                inner = field.annotation if field is not None else Any
            else:
                inner = Any
            out[str(key)] = coerce(item, inner)
        return out
    return value
