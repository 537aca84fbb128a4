"""Which tunable values a kernel runs with: one answer for the runner and in-process callers.

`tile bench` resolves each case's configuration here, and so do `tile.check`, `tile.measure`
and tile-pytest, so that the same case id runs the same configuration wherever it is timed.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from os import PathLike
from typing import Any, cast

from tile_protocol import ConfigInfo, overrides_for
from tile_runner._api import Case, KernelDef, registry
from tile_runner._axes import AxisValue
from tile_runner._record import recorded_kernel
from tile_runner._tuning import bind_config, choose
from tile_runner._tuning_index import TuningIndex

__all__ = ["Configured", "configure", "with_default_config"]


@dataclass(frozen=True)
class Configured:
    """A kernel bound to the tunable values one case runs with."""

    fn: Callable[..., Any]
    """The kernel with the values as keyword arguments: call it with the case's inputs."""
    config: Mapping[str, AxisValue]
    """The values, typed as declared (empty for a kernel without tunables)."""
    info: ConfigInfo | None
    """The values as text and where they came from; None for a kernel without tunables, and
    in a mode they do not apply to (`tuned_modes`: the default runs, outside what is timed)."""


def configure(
    definition: KernelDef,
    case: Case | None,
    *,
    tuning: TuningIndex | Sequence[str | PathLike[str]] = (),
    overrides: Mapping[str, str] | None = None,
    unit: Mapping[str, str] | None = None,
) -> Configured:
    """The configuration `case` runs with, exactly as `tile bench` and `tile test` choose it.

    An override (`--tunable NAME=VALUE`), else the case's tuning entry (the project's files,
    the user cache's, then those the kernel's package ships in its `tuning/` folder), else the
    default (the declared one if the constraint allows it for the case, else the nearest
    allowed one; `info.note` says so).

    Args:
        case: None for a call without a case id: the declared default, the constraint unasked.
        tuning: a loaded `TuningIndex` (load it once for many cases), or tuning file paths,
            read for JAX's default device and version (later files win).
        overrides: text values by tunable name, or by `KERNEL:NAME` for one kernel's; names
            the kernel lacks are left out (one set of overrides serves every kernel of a run).
        unit: `tile tune`'s values to time, instead of all of the above.

    Raises:
        Skip: the constraint rules out the overridden configuration or unit, or every one.
        RunnerError: an override or unit value that is not among the tunable's values.
    """
    if not isinstance(tuning, TuningIndex):
        tuning = TuningIndex.load([tuning] if isinstance(tuning, str | PathLike) else tuning)
    config, info = choose(
        definition.tunables,
        case,
        overrides=overrides_for(definition.name, overrides or {}),
        tuning=tuning,
        unit=unit,
        module=definition.module,
    )
    return Configured(bind_config(definition.fn, config), config, info)


def with_default_config(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` with its kernel's default tunable values when it is a registered `@tile.kernel`
    function that declares tunables (or a `functools.partial` of one); else `fn` unchanged.

    A direct call has no case id, so no tuning entry applies and the constraint cannot be
    asked: the declared default runs. Values the caller bound (`functools.partial(k,
    block_rows=4)`) win over it.
    """
    definition, given = _registered(fn)
    if definition is None or definition.tunables is None:
        return fn
    configured = configure(definition, None)
    return bind_config(fn, {k: v for k, v in configured.config.items() if k not in given})


def _registered(fn: Callable[..., Any]) -> tuple[KernelDef | None, Mapping[str, Any]]:
    """The registered kernel whose function `fn` is (by identity, through a partial), and
    the keyword arguments the partial binds."""
    target, given = fn, {}
    if isinstance(fn, functools.partial):
        bound = cast("functools.partial[Any]", fn)
        target, given = bound.func, bound.keywords
    _, target = recorded_kernel(target)  # what `@tile.kernel` returned: the function inside
    return next((d for d in registry().values() if d.fn is target), None), given
