"""Checks of what `@tile.kernel` is given: its axes (per backend) and its tolerance."""

from __future__ import annotations

from collections.abc import Mapping

from tile_runner._axes import Axes
from tile_runner._errors import DefinitionError

__all__ = ["BACKENDS", "check_specs"]

BACKENDS = ("cpu", "gpu", "tpu")
"""Backend keys allowed in per-backend axes mappings, besides `default`."""


def check_specs(name: str, bench: object, test: object, tol: object) -> None:
    """The axes and tolerance given to `@tile.kernel` have the types it takes."""
    _check_axes_spec(name, "bench", bench)
    _check_axes_spec(name, "test", test)
    _check_tol(name, tol)


def _check_axes_spec(name: str, label: str, spec: object) -> None:
    if spec is None or isinstance(spec, Axes):
        return
    if isinstance(spec, Mapping):
        for key, value in spec.items():  # pyright: ignore[reportUnknownVariableType]
            if key not in (*BACKENDS, "default"):
                raise DefinitionError(
                    f"kernel `{name}`: `{label}` has key {key!r}; "
                    f"use one of {', '.join(BACKENDS)} or default"
                )
            if not isinstance(value, Axes):
                raise DefinitionError(
                    f"kernel `{name}`: `{label}[{key!r}]` must be `tile.axes(...)`"
                )
        return
    raise DefinitionError(
        f"kernel `{name}`: `{label}` must be `tile.axes(...)` or a mapping of backend to axes"
    )


def _check_tol(name: str, tol: object) -> None:
    if tol is None or (isinstance(tol, float | int) and not isinstance(tol, bool) and tol >= 0):
        return
    if isinstance(tol, Mapping) and all(
        isinstance(k, str) and isinstance(v, float | int) and not isinstance(v, bool) and v >= 0
        for k, v in tol.items()  # pyright: ignore[reportUnknownVariableType]
    ):
        return
    raise DefinitionError(
        f"kernel `{name}`: `tol` must be a number >= 0 or a mapping of dtype name to number",
        hint='e.g. `tol=1e-3` or `tol={"float32": 1e-5, "bfloat16": 2e-2}`',
    )
