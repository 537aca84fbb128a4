"""Typed handles on the JAX functions the runner calls whose types jax leaves open.

`jax.block_until_ready` and `jax.config.update` have unannotated parameters, and `jax.jit`,
`jax.devices` and the pytree functions name jaxlib's native types (Device, PyTreeDef), which
ship without stubs (typings/jaxlib/_jax.pyi gives pyright a Device and little else): pyright
sees them as partly unknown. Each is bound here once, to the type the runner relies on. They are jax's own objects, not wrappers,
so a timing loop pays nothing for them.

This module imports jax: import it where jax is imported, inside functions, never at the top
of a runner module (the runner answers `hello` before jax is loaded).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar, cast

import jax

__all__ = [
    "Config",
    "Device",
    "KeyPath",
    "block_until_ready",
    "config",
    "device_put",
    "devices",
    "eval_shape",
    "jit",
    "keystr",
    "local_devices",
    "tree_flatten",
    "tree_flatten_with_path",
    "tree_unflatten",
    "vjp",
]

_T = TypeVar("_T")
KeyPath = tuple[object, ...]
"""A leaf's path in a pytree: its keys (`SequenceKey`, `DictKey`, ...) from the root down."""


class Device(Protocol):
    """What the runner reads of a `jax.Device`."""

    @property
    def id(self) -> int: ...
    @property
    def platform(self) -> str: ...
    @property
    def device_kind(self) -> str: ...
    @property
    def client(self) -> object: ...
    def memory_stats(self) -> dict[str, int] | None: ...


class Config(Protocol):
    """`jax.config`: the option table, and `update` to set one (its other attributes are the
    options themselves, read with `getattr`)."""

    @property
    def values(self) -> dict[str, object]: ...
    def update(self, name: str, value: object, /) -> None: ...


class _BlockUntilReady(Protocol):
    def __call__(self, x: _T, /) -> _T: ...


class _Jit(Protocol):
    def __call__(
        self,
        fun: Callable[..., Any],
        /,
        *,
        static_argnums: int | Sequence[int] | None = ...,
        donate_argnums: int | Sequence[int] | None = ...,
    ) -> jax.stages.Wrapped: ...


block_until_ready = cast("_BlockUntilReady", jax.block_until_ready)  # pyright: ignore[reportUnknownMemberType]
"""`jax.block_until_ready`: wait until every array in a pytree is computed; return the pytree."""
jit = cast("_Jit", jax.jit)  # pyright: ignore[reportUnknownMemberType]
"""`jax.jit`, with the options the runner passes."""
device_put = cast("Callable[[Any], Any]", jax.device_put)  # pyright: ignore[reportUnknownMemberType]
"""`jax.device_put` of an array to the default device (the runner passes no placement)."""
devices = cast("Callable[[], list[Device]]", jax.devices)  # pyright: ignore[reportUnknownMemberType]
"""`jax.devices`: the default backend's devices."""
local_devices = cast("Callable[[], list[Device]]", jax.local_devices)  # pyright: ignore[reportUnknownMemberType]
"""`jax.local_devices`: the devices this process drives."""
config = cast("Config", jax.config)
"""`jax.config`."""
tree_flatten = cast(
    "Callable[[Any], tuple[list[Any], object]]",
    jax.tree_util.tree_flatten,  # pyright: ignore[reportUnknownMemberType]
)
"""`jax.tree_util.tree_flatten`: a pytree's leaves and its structure (compared, printed)."""
tree_flatten_with_path = cast(
    "Callable[[Any], tuple[list[tuple[KeyPath, Any]], object]]",
    jax.tree_util.tree_flatten_with_path,  # pyright: ignore[reportUnknownMemberType]
)
"""`jax.tree_util.tree_flatten_with_path`: each leaf with its key path, and the structure."""
keystr = cast("Callable[[KeyPath], str]", jax.tree_util.keystr)  # pyright: ignore[reportUnknownMemberType]
"""`jax.tree_util.keystr`: a key path as text (`[0]['w']`)."""
tree_unflatten = cast(
    "Callable[[object, Sequence[Any]], Any]",
    jax.tree_util.tree_unflatten,  # pyright: ignore[reportUnknownMemberType]
)
"""`jax.tree_util.tree_unflatten`: a pytree from a structure `tree_flatten` gave and leaves."""
vjp = cast("Callable[..., tuple[Any, Callable[[Any], Any]]]", jax.vjp)  # pyright: ignore[reportUnknownMemberType]
"""`jax.vjp`: a function's value at the primals and its VJP (a pytree of its residuals)."""
eval_shape = cast("Callable[..., Any]", jax.eval_shape)  # pyright: ignore[reportUnknownMemberType]
"""`jax.eval_shape`: a function's output as shapes and dtypes, computing nothing."""
