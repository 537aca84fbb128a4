"""Shared Pallas plumbing: backend choice, Triton compiler parameters, row views and masks."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

from ._errors import KernelInputError

__all__ = [
    "CaseLike",
    "as_rows",
    "compiler_params",
    "first_device",
    "fori_loop",
    "interpret_mode",
    "RowTiling",
    "SHARED_BYTES",
    "load",
    "next_pow2",
    "row_tiling",
    "sm_count",
    "span",
    "store",
]


class CaseLike(Protocol):
    """What the work formulas read from a case (tile_runner's Case has all of it)."""

    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def size(self) -> int: ...
    @property
    def itemsize(self) -> int: ...
    def get(self, name: str, default: Any = None) -> Any: ...


def interpret_mode() -> bool:
    """True unless the default backend is a GPU: Pallas compiles there (Triton), else interprets."""
    # Decided per call, not at import: the backend is known only once JAX has initialised.
    return jax.default_backend() != "gpu"


SHARED_BYTES = 227 * 1024
"""Shared memory one thread block may use on the H100 and H200 (sm90)."""


def first_device() -> Any:
    """JAX's default device (loosely typed: jaxlib's Device has no annotations to read)."""
    return jax.devices()[0]  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]


def sm_count() -> int:
    """Streaming multiprocessors of the default GPU (1 where the device does not say)."""
    return int(getattr(first_device(), "core_count", 0) or 1)


def compiler_params(num_warps: int, num_stages: int) -> plgpu.CompilerParams:
    """Triton compiler parameters; passing them also selects the Triton lowering on GPU."""
    # jax >= 0.10 lowers a bare pallas_call to Mosaic GPU by default (jax_pallas_use_mosaic_gpu);
    # these kernels are written for the Triton lowering, so the params are always given.
    return plgpu.CompilerParams(num_warps=num_warps, num_stages=num_stages)


_Carry = TypeVar("_Carry")


def fori_loop(
    lower: int | jax.Array,
    upper: int | jax.Array,
    body: Callable[[jax.Array, _Carry], _Carry],
    init: _Carry,
) -> _Carry:
    """`lax.fori_loop`, typed: jax leaves its parameters and result unannotated."""
    return lax.fori_loop(lower, upper, body, init)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]


def next_pow2(n: int) -> int:
    """Smallest power of two >= n (Triton blocks must have power-of-two sizes)."""
    return int(pl.next_power_of_2(max(int(n), 1)))


def as_rows(x: jax.Array) -> jax.Array:
    """View x as (rows, last axis); a 1-D array is one row."""
    if x.ndim == 1:
        return x.reshape(1, x.shape[0])
    return x.reshape(math.prod(x.shape[:-1]), x.shape[-1])


def span(block_index: Any, block: int, axis: int, ndim: int) -> jax.Array:
    """Global indices covered by block `block_index` of size `block`, broadcastable along `axis`."""
    idx = block_index * block + jnp.arange(block)
    shape = [1] * ndim
    shape[axis] = block
    return idx.reshape(shape)


def load(ref: Any, mask: jax.Array | None, other: float = 0.0) -> jax.Array:
    """Read a block; masked (with `other` outside) only when the block can cross the array's end."""
    # The Triton lowering reads blocks without bounds checks, so a ragged edge must be masked; a
    # plain ref[...] is kept where no mask is needed because it lowers to unmasked vector loads.
    if mask is None:
        return ref[...]
    return plgpu.load(ref, mask=mask, other=other)


def store(ref: Any, value: jax.Array, mask: jax.Array | None) -> None:
    """Write a block, masked only when it can cross the array's end."""
    if mask is None:
        ref[...] = value
    else:
        plgpu.store(ref, value, mask=mask)


@dataclass(frozen=True)
class RowTiling:
    """How a row kernel tiles (rows, cols): a block of whole rows per program."""

    block_rows: int
    block_cols: int
    num_warps: int


# Elements one program holds in registers on GPU (rows x padded hidden), and on the interpreter,
# where fewer, larger steps are faster. On the H200 softmax ran within 1% for 2048 to 16384
# elements and 8 to 32 warps, at 4096x4096 and 16384x8192 alike.
_GPU_ROW_ELEMENTS = 8192
_INTERPRET_ROW_ELEMENTS = 1 << 16
_MAX_COLS = 1 << 16


def row_tiling(
    kernel: str,
    n_rows: int,
    n_cols: int,
    *,
    interpret: bool,
    block_rows: int | None = None,
    num_warps: int | None = None,
) -> RowTiling:
    """Pick rows per program so a block holds about a fixed number of elements; whole rows only.

    `block_rows` and `num_warps` override the choice (for tuning sweeps).
    """
    block_cols = next_pow2(n_cols)
    if block_cols > _MAX_COLS:
        raise KernelInputError(
            kernel,
            f"rows of {n_cols} elements do not fit one program (at most {_MAX_COLS})",
            hint="split the last axis or use the jnp reference for such shapes",
        )
    budget = _INTERPRET_ROW_ELEMENTS if interpret else _GPU_ROW_ELEMENTS
    if block_rows is None:
        block_rows = max(1, budget // block_cols)
    block_rows = min(next_pow2(block_rows), next_pow2(n_rows))
    # About 16 float32 values per thread for the block; Triton allows 1..32 warps.
    if num_warps is None:
        num_warps = max(1, min(16, block_rows * block_cols // 512))
    return RowTiling(block_rows, block_cols, num_warps)
