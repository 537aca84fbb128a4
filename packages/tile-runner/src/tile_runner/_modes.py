"""Modes of a kernel: the forward call, its backward (VJP) alone, or both in one program.

`fwd` is the kernel as written. `bwd` times the VJP with the forward's residuals made outside
the timed region (they are inputs, as a training step's backward receives them); `fwd_bwd`
times the value and the VJP in one jitted program. A kernel declares its modes on
`@tile.kernel(modes=...)`, each with the work of one call where the author knows it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, cast, get_args

from tile_runner._errors import DefinitionError

__all__ = ["MODES", "Mode", "ModeWork", "declare_modes", "mode", "mode_label"]

Mode = Literal["fwd", "bwd", "fwd_bwd"]
"""How a case runs its kernel: forward, backward alone, or forward and backward together."""
MODES: Final[tuple[Mode, ...]] = get_args(Mode)


@dataclass(frozen=True)
class ModeWork:
    """The work of one call in a mode (`tile.mode(bytes=..., flops=...)`); None: XLA's estimate."""

    bytes: Callable[[Any], float] | None = None
    flops: Callable[[Any], float] | None = None


def mode(
    *, bytes: Callable[[Any], float] | None = None, flops: Callable[[Any], float] | None = None
) -> ModeWork:
    """A mode's work for `@tile.kernel(modes={"bwd": tile.mode(flops=...)})`."""
    return ModeWork(bytes=bytes, flops=flops)


ModesSpec = Sequence[str] | Mapping[str, ModeWork | None] | None


def declare_modes(
    name: str, modes: ModesSpec, fwd: ModeWork, specs: Sequence[object] = ()
) -> dict[Mode, ModeWork]:
    """The modes a kernel runs in, `fwd` always first (with the kernel's own bytes/flops).

    `specs`: the kernel's bench and test axes; a gradient mode's case id ends in `mode=...`,
    so a kernel with an axis of that name cannot declare one.
    """
    declared: dict[Mode, ModeWork] = {"fwd": fwd}
    if modes is None:
        return declared
    spec = cast("object", modes)  # checked: callers may pass anything
    if isinstance(spec, str) or not isinstance(spec, Sequence | Mapping):
        raise DefinitionError(
            f"kernel `{name}`: `modes` must be a list of mode names or a mapping of mode "
            "name to `tile.mode(...)`",
            hint='e.g. `modes=("fwd", "bwd", "fwd_bwd")`',
        )
    items: list[tuple[object, object]] = (
        list(cast("Mapping[object, object]", modes).items())
        if isinstance(modes, Mapping)
        else [(m, None) for m in cast("Sequence[object]", modes)]
    )
    if any(key != "fwd" for key, _ in items) and "mode" in _axis_names(specs):
        raise DefinitionError(
            f"kernel `{name}`: an axis named `mode` cannot stand beside gradient `modes` (the "
            "case id names the mode as `mode=bwd`)",
            hint="rename the axis, e.g. `variant`",
        )
    for key, work in items:
        if key not in MODES:
            raise DefinitionError(
                f"kernel `{name}`: unknown mode {key!r} in `modes`",
                hint=f"use {', '.join(MODES)}",
            )
        if work is not None and not isinstance(work, ModeWork):
            raise DefinitionError(
                f"kernel `{name}`: `modes[{key!r}]` must be `tile.mode(bytes=..., flops=...)` "
                "or None"
            )
        if key == "fwd" and work is not None:
            raise DefinitionError(
                f"kernel `{name}`: the forward's work is `bytes=`/`flops=` on the kernel, not "
                "`modes['fwd']`"
            )
        if key != "fwd":
            declared[cast("Mode", key)] = work if isinstance(work, ModeWork) else ModeWork()
    return declared


def _axis_names(specs: Sequence[object]) -> set[str]:
    from tile_runner._axes import Axes

    names: set[str] = set()
    for spec in specs:
        values = (
            cast("Mapping[str, object]", spec).values() if isinstance(spec, Mapping) else [spec]
        )
        names.update(n for axes in values if isinstance(axes, Axes) for n in axes.names)
    return names


def mode_label(mode: str) -> dict[str, str]:
    """What a mode adds to a case's parameters: nothing for `fwd`, so its ids stay as they were."""
    return {} if mode == "fwd" else {"mode": mode}
