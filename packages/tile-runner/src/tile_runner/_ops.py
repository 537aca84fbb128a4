"""Kernels as implementations of one op: `@tile.kernel(op="layernorm", impl="pallas")`.

Several kernels may implement one op (a Pallas kernel, a jnp one, a library call); the tables
put them side by side and time each against the op's baseline implementation: the kernel
declared with `baseline=True`, else the op's first registered kernel. Labels are unique
within an op and at most one kernel of an op is marked its baseline, checked when a kernel
registers, so that a table never has two rows it cannot tell apart.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from tile_protocol import OpInfo
from tile_runner._errors import DefinitionError

__all__ = ["OpDecl", "check_op", "declare_op", "op_info"]

_BAD_CHARS = set(",=[]{}") | {"\t", "\n"}


@dataclass(frozen=True)
class OpDecl:
    """What a kernel declared of its op: the op's name, its label, whether it is the baseline."""

    name: str
    impl: str
    baseline: bool = False


class KernelDef(Protocol):
    """What these rules read of a registered kernel (`tile_runner._api.KernelDef`)."""

    @property
    def name(self) -> str: ...
    @property
    def op(self) -> OpDecl | None: ...


def _label(kernel: str, what: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip() or _BAD_CHARS & set(value):
        raise DefinitionError(
            f"kernel `{kernel}`: `{what}` must be a non-empty string without `,=[]{{}}`, "
            f"not {value!r}",
            hint='e.g. `op="layernorm", impl="pallas"`',
        )
    return value


def declare_op(kernel: str, op: object, impl: object, baseline: object) -> OpDecl | None:
    """The op `kernel` declares, checked; None without `op`. `impl` defaults to the kernel's
    name after its last `/` (`mylib/layernorm_jnp` implements its op as `layernorm_jnp`)."""
    if op is None:
        if impl is not None or baseline:
            raise DefinitionError(
                f"kernel `{kernel}`: `impl` and `baseline` need `op`, the op it implements",
                hint='e.g. `op="layernorm", impl="jnp", baseline=True`',
            )
        return None
    if not isinstance(baseline, bool):
        raise DefinitionError(f"kernel `{kernel}`: `baseline` must be True or False")
    label = kernel.rsplit("/", 1)[-1] if impl is None else _label(kernel, "impl", impl)
    return OpDecl(name=_label(kernel, "op", op), impl=label, baseline=baseline)


def check_op(new: KernelDef, registered: Iterable[KernelDef]) -> None:
    """`new` may join its op: no other kernel of the op has its label, or is the op's
    baseline too when `new` is marked one."""
    mine = new.op
    if mine is None:
        return
    for other in registered:
        theirs = other.op
        if other.name == new.name or theirs is None or theirs.name != mine.name:
            continue
        if theirs.impl == mine.impl:
            raise DefinitionError(
                f"kernels `{other.name}` and `{new.name}` both implement op `{mine.name}` "
                f"as `{mine.impl}`",
                hint="give each implementation of an op its own `impl=` label",
            )
        if theirs.baseline and mine.baseline:
            raise DefinitionError(
                f"kernels `{other.name}` and `{new.name}` are both marked the baseline of op "
                f"`{mine.name}`",
                hint="mark one implementation per op `baseline=True`",
            )


def op_info(kernel: KernelDef, registered: Iterable[KernelDef]) -> OpInfo | None:
    """`kernel`'s op as the protocol sends it, with whether it is the op's baseline: the one
    marked so, else the op's first registered kernel (`registered` in registration order)."""
    mine = kernel.op
    if mine is None:
        return None
    peers = [k for k in registered if k.op is not None and k.op.name == mine.name]
    marked = [k for k in peers if k.op is not None and k.op.baseline]
    base = marked[0] if marked else (peers[0] if peers else kernel)
    return OpInfo(name=mine.name, impl=mine.impl, baseline=base.name == kernel.name)
