"""Axes: the cartesian products of parameter values that make a kernel's cases."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeAlias, cast

import numpy as np

from tile_runner._errors import AxisValueError, DefinitionError

__all__ = ["Axes", "AxisValue", "axes", "format_value", "parse_value"]

AxisValue: TypeAlias = tuple[int, ...] | str | int | float | bool
"""One value of an axis: a shape (tuple of ints), a dtype name or other string, a number, a bool."""

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_FORBIDDEN = set(",=[]") | {" ", "\t", "\n"}
_INT_RE = re.compile(r"[+-]?\d+")
_SHAPE_RE = re.compile(r"\d+(x\d+)+")

Product = tuple[tuple[str, tuple[AxisValue, ...]], ...]


def _normalize(axis: str, value: object) -> AxisValue:
    """Turn a declared value into its canonical form, or raise DefinitionError."""
    # numpy scalars narrow to `np.integer[Unknown]` and the like: their precision is not needed.
    if isinstance(value, bool | np.bool_):
        return bool(cast("bool | np.bool[Any]", value))
    if isinstance(value, int | np.integer):
        return int(cast("int | np.integer[Any]", value))
    if isinstance(value, float | np.floating):
        return float(cast("float | np.floating[Any]", value))
    if isinstance(value, str):
        if not value or _FORBIDDEN & set(value):
            raise DefinitionError(
                f"axis `{axis}`: value {value!r} must be non-empty and free of `,=[]` and spaces",
                hint="these characters separate values in case ids; pick another spelling",
            )
        if axis == "dtype":
            _check_dtype(value)
        return value
    shape = _int_tuple(value)
    if shape is not None:
        return shape
    if isinstance(value, np.dtype) or (isinstance(value, type) and axis == "dtype"):
        return _dtype_name(value)
    raise DefinitionError(
        f"axis `{axis}`: unsupported value {value!r} of type {type(value).__name__}",
        hint="use shapes as tuples of ints, dtypes as strings, or ints, floats, bools, strings",
    )


def _int_tuple(value: object) -> tuple[int, ...] | None:
    """A tuple or list of ints (numpy's included) as a tuple of ints; None for anything else."""
    if not isinstance(value, tuple | list):
        return None
    items = cast("Sequence[object]", value)
    if not all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in items):
        return None
    return tuple(int(cast("int | np.integer[Any]", v)) for v in items)


def _dtype_name(value: Any) -> str:
    import jax.numpy as jnp

    try:
        return jnp.dtype(value).name
    except TypeError as exc:
        raise DefinitionError(f"axis `dtype`: {value!r} is not a dtype") from exc


def _check_dtype(name: str) -> None:
    import jax.numpy as jnp

    try:
        jnp.dtype(name)
    except TypeError as exc:
        raise DefinitionError(
            f"axis `dtype`: {name!r} is not a dtype name",
            hint="write dtypes as strings such as `float32` or `bfloat16`",
        ) from exc


def format_value(value: AxisValue) -> str:
    """The stable text of a value in case ids and protocol params: shapes as `4096x4096`."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return "x".join(str(d) for d in value) if value else "scalar"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def parse_value(text: str, like: Sequence[AxisValue] = ()) -> AxisValue:
    """Parse a value given on the command line, in the type of the axis' declared values `like`."""
    text = text.strip()
    read = _READERS.get(frozenset(type(v) for v in like))
    if read is None:  # no values declared, or of mixed types
        return _guess(text)
    try:
        return read(text)
    except ValueError:
        declared = ", ".join(format_value(v) for v in like)
        raise AxisValueError(
            f"axis value {text!r} does not match the declared values ({declared})"
        ) from None


def _guess(text: str) -> AxisValue:
    """A value of no one declared type: a bool, an int, a shape, a float, else the text."""
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    if _INT_RE.fullmatch(text):
        return int(text)
    if _SHAPE_RE.fullmatch(text):
        return tuple(int(d) for d in text.split("x"))
    try:
        return float(text)
    except ValueError:
        return text


def _parse_shape(text: str) -> tuple[int, ...]:
    if text == "scalar":
        return ()
    return tuple(int(d) for d in text.split("x"))


def _parse_bool(text: str) -> bool:
    low = text.lower()
    if low in ("true", "1"):
        return True
    if low in ("false", "0"):
        return False
    raise ValueError(text)


# How text is read for an axis whose declared values are all of these types (ints and floats
# mixed: floats). A reader raises ValueError for text that is none of its type.
_READERS: dict[frozenset[type], Callable[[str], AxisValue]] = {
    frozenset({tuple}): _parse_shape,
    frozenset({bool}): _parse_bool,
    frozenset({int}): int,
    frozenset({float}): float,
    frozenset({int, float}): float,
    frozenset({str}): str,
}


class Axes:
    """A set of cases: one or more cartesian products of axis values (`+` joins sets)."""

    __slots__ = ("_products",)

    def __init__(self, products: Sequence[Product]) -> None:
        self._products: tuple[Product, ...] = tuple(products)

    @property
    def names(self) -> tuple[str, ...]:
        """Axis names in declaration order (first appearance across products)."""
        seen: dict[str, None] = {}
        for product in self._products:
            for name, _ in product:
                seen.setdefault(name)
        return tuple(seen)

    def values(self, name: str) -> tuple[AxisValue, ...]:
        """Every value axis `name` takes, in order, without repeats."""
        out: dict[AxisValue, None] = {}
        for product in self._products:
            for axis, vals in product:
                if axis == name:
                    for v in vals:
                        out.setdefault(v)
        return tuple(out)

    def __iter__(self) -> Iterator[dict[str, AxisValue]]:
        """Every point, products in order, each in declaration order (last axis fastest)."""
        for product in self._products:
            names = [n for n, _ in product]
            for combo in itertools.product(*(vals for _, vals in product)):
                yield dict(zip(names, combo, strict=True))

    def __len__(self) -> int:
        total = 0
        for product in self._products:
            n = 1
            for _, vals in product:
                n *= len(vals)
            total += n
        return total

    def __add__(self, other: object) -> Axes:
        if not isinstance(other, Axes):
            return NotImplemented
        return Axes(self._products + other._products)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Axes) and self._products == other._products

    def __hash__(self) -> int:
        return hash(self._products)

    def __repr__(self) -> str:
        parts = [
            "tile.axes("
            + ", ".join(f"{n}=[{', '.join(format_value(v) for v in vals)}]" for n, vals in p)
            + ")"
            for p in self._products
        ]
        return " + ".join(parts) or "Axes([])"

    def override(self, overrides: Mapping[str, Sequence[str]]) -> Axes:
        """Replace the values of the named axes (strings from `-a axis=v1,v2`) where present."""
        products: list[Product] = []
        for product in self._products:
            new: list[tuple[str, tuple[AxisValue, ...]]] = []
            for name, vals in product:
                texts = overrides.get(name)
                if texts is None:
                    new.append((name, vals))
                    continue
                parsed = [_normalize(name, parse_value(t, vals)) for t in texts]
                new.append((name, tuple(dict.fromkeys(parsed))))
            products.append(tuple(new))
        return Axes(products)


def axes(**values: Sequence[Any] | Any) -> Axes:
    """The cartesian product of the given value lists, in declaration order.

    A single scalar is one value: `tile.axes(shape=[(8, 128), (64, 64)], causal=True)`.
    """
    product: list[tuple[str, tuple[AxisValue, ...]]] = []
    for name, raw in values.items():
        if not _NAME_RE.fullmatch(name):
            raise DefinitionError(f"axis name {name!r} must be a Python identifier")
        given = cast("tuple[object, ...]", raw) if isinstance(raw, tuple) else ()
        if given and _is_shape(given):
            raise DefinitionError(
                f"axis `{name}`: {raw!r} is ambiguous (one shape, or a list of ints?)",
                hint=f"write `{name}=[{raw!r}]` for one shape or `{name}={list(given)!r}` for values",
            )
        if isinstance(raw, list | tuple | range):
            items: list[object] = list(cast("Iterable[object]", raw))
        else:
            items = [raw]
        if not items:
            raise DefinitionError(f"axis `{name}` has no values", hint="give at least one value")
        normalized = tuple(dict.fromkeys(_normalize(name, v) for v in items))
        product.append((name, normalized))
    return Axes([tuple(product)])


def _is_shape(value: tuple[object, ...]) -> bool:
    return all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in value)
