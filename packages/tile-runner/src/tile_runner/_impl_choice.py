"""Which implementation of an op runs at a point: the one `tile tune` chose there, else the
op's baseline implementation.

`tile tune` over several implementations of one op (`@tile.kernel(op=..., impl=...)`) treats
the implementation as the op's tunable and records, per point, the one that won in the tuning
file's `ops`. A library or model that holds all the implementations asks `choose_impl` which
one to call, as `configure` answers which configuration a kernel runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from os import PathLike

from tile_protocol import ConfigSource, op_point
from tile_runner._api import Case, KernelDef, registry
from tile_runner._errors import DefinitionError
from tile_runner._ops import op_info
from tile_runner._tuning_index import TuningIndex

__all__ = ["ChosenImpl", "choose_impl"]


@dataclass(frozen=True)
class ChosenImpl:
    """The implementation of an op to run at one point, and where the choice came from."""

    kernel: str
    """The registered kernel to call (`tile.get_kernel(chosen.kernel).fn`)."""
    impl: str
    source: ConfigSource
    """`tuned` (the project's tuning files), `user_cache`, `shipped` (a tuning file of the
    package of one of the op's implementations), or `default`: no choice holds here, so the
    op's baseline implementation."""
    path: str | None = None
    """The tuning file the choice came from."""
    note: str | None = None
    """Why a recorded choice was not used (its kernel is not registered now)."""


def choose_impl(
    op: str,
    case: Case | Mapping[str, str],
    *,
    tuning: TuningIndex | Sequence[str | PathLike[str]] = (),
) -> ChosenImpl:
    """The implementation of `op` to run at `case`'s point.

    Args:
        case: a case of any of the op's implementations (`tile.cases(kernel)`), or its axis
            values as case ids write them (`{"shape": "4096x1024", "dtype": "float32"}`).
        tuning: a loaded `TuningIndex`, or tuning file paths, read for JAX's default device
            and version. Below them, the tuning files the implementations' packages ship.

    Raises:
        DefinitionError: no registered kernel implements `op`.
    """
    peers = [k for k in registry().values() if k.op is not None and k.op.name == op]
    if not peers:
        raise DefinitionError(
            f"no registered kernel implements op `{op}`",
            hint="import the module that defines its implementations first",
        )
    if not isinstance(tuning, TuningIndex):
        tuning = TuningIndex.load([tuning] if isinstance(tuning, str | PathLike) else tuning)
    params = case.str_params if isinstance(case, Case) else dict(case)
    found = tuning.impl_for(op, op_point(params), modules=sorted({k.module for k in peers}))
    note = None
    if found is not None:
        choice, source, path = found
        if any(k.name == choice.kernel for k in peers):
            return ChosenImpl(choice.kernel, choice.impl, source, path)
        note = f"`{path}` chose `{choice.kernel}`, which is not registered now"
    base = _baseline(peers)
    return ChosenImpl(base.name, base.op.impl if base.op else "", "default", note=note)


def _baseline(peers: Sequence[KernelDef]) -> KernelDef:
    known = registry().values()
    return next((k for k in peers if (info := op_info(k, known)) and info.baseline), peers[0])
