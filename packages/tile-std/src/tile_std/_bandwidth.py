"""Bandwidth probes: copy, scale (x*2+1) and add, as jnp references and 1-D tiled Pallas kernels."""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

import tile_runner as tile

from ._errors import KernelInputError
from ._pallas import CaseLike, compiler_params, interpret_mode, load, next_pow2, span, store

__all__ = [
    "add",
    "add_bytes",
    "add_flops",
    "add_ref",
    "copy",
    "copy_bytes",
    "copy_flops",
    "copy_ref",
    "scale",
    "scale_bytes",
    "scale_flops",
    "scale_ref",
]

# One 16-byte access per thread and input: 8 warps x 32 threads x 16 bytes = 4 KiB a block. On
# the H200 (jax 0.11.2, 1 GiB) this matched XLA: 4273 GB/s for float32 x*2+1 (1024 elements) and
# 4257 GB/s for bfloat16 (2048); 4096-element float32 blocks gave 4075.
_GPU_BLOCK_BYTES = 4096
_GPU_WARPS = 8
# The interpreter pays per grid step, so on CPU a few large blocks are much faster.
_INTERPRET_BLOCK = 1 << 16


def _elementwise_kernel(*refs: jax.Array, op: Callable[..., jax.Array], n: int) -> None:
    *in_refs, out_ref = refs
    block = out_ref.shape[0]
    mask = None if n % block == 0 else span(pl.program_id(0), block, 0, 1) < n
    out = op(*(load(r, mask) for r in in_refs))
    store(out_ref, out.astype(out_ref.dtype), mask)


def _elementwise(
    name: str, op: Callable[..., jax.Array], *xs: jax.Array, block: int | None
) -> jax.Array:
    """Apply `op` over the flattened inputs, one block of `block` elements per program."""
    x0 = xs[0]
    for x in xs[1:]:
        if x.shape != x0.shape or x.dtype != x0.dtype:
            raise KernelInputError(
                name,
                f"inputs differ: {x0.shape}/{x0.dtype} vs {x.shape}/{x.dtype}",
                hint="pass arrays of one shape and dtype (broadcast or cast them first)",
            )
    n = x0.size
    if n == 0:
        return jnp.empty_like(x0)
    interpret = interpret_mode()
    if block is None:
        block = _INTERPRET_BLOCK if interpret else _GPU_BLOCK_BYTES // x0.dtype.itemsize
    block = min(next_pow2(block), next_pow2(n))

    def flat_block(i: jax.Array) -> tuple[jax.Array]:
        return (i,)

    spec = pl.BlockSpec((block,), flat_block)
    flat = [x.reshape(n) for x in xs]
    out = pl.pallas_call(
        functools.partial(_elementwise_kernel, op=op, n=n),
        out_shape=jax.ShapeDtypeStruct((n,), x0.dtype),
        grid=(pl.cdiv(n, block),),
        in_specs=[spec] * len(xs),
        out_specs=spec,
        interpret=interpret,
        compiler_params=compiler_params(_GPU_WARPS, 1),
        name=name,
    )(*flat)
    return out.reshape(x0.shape)


def _identity(x: jax.Array) -> jax.Array:
    return x


def _scale_op(x: jax.Array) -> jax.Array:
    return x * 2 + 1


def _add_op(x: jax.Array, y: jax.Array) -> jax.Array:
    return x + y


@tile.recorded("std/copy")  # its calls are `std/copy`'s cases for `--from`
def copy(x: jax.Array, *, block: int | None = None) -> jax.Array:
    """y = x: reads and writes every element once; 1-D blocks of 4 KiB per program on GPU."""
    return _elementwise("std_copy", _identity, x, block=block)


@tile.recorded("std/scale")  # its calls are `std/scale`'s cases for `--from`
def scale(x: jax.Array, *, block: int | None = None) -> jax.Array:
    """y = x*2+1 in the input dtype; 1-D blocks of 4 KiB per program on GPU."""
    return _elementwise("std_scale", _scale_op, x, block=block)


@tile.recorded("std/add")  # its calls are `std/add`'s cases for `--from`
def add(x: jax.Array, y: jax.Array, *, block: int | None = None) -> jax.Array:
    """z = x + y for equal shapes and dtypes; 1-D blocks of 4 KiB per input per program on GPU."""
    return _elementwise("std_add", _add_op, x, y, block=block)


def copy_ref(x: jax.Array) -> jax.Array:
    """Reference copy (jnp): an XLA kernel that reads x and writes y."""
    # jnp.copy, x*1 and x+0 compile to a memcpy that launches no kernel, which a kernel timer
    # (CUPTI) cannot see. The select keeps every value (NaN stays NaN) and is one fused kernel.
    if not jnp.issubdtype(x.dtype, jnp.floating):
        return jnp.copy(x)
    return jnp.where(jnp.isnan(x), jnp.nan, x)


def scale_ref(x: jax.Array) -> jax.Array:
    """Reference x*2+1 (jnp)."""
    return x * 2 + 1


def add_ref(x: jax.Array, y: jax.Array) -> jax.Array:
    """Reference x + y (jnp)."""
    return x + y


def copy_bytes(case: CaseLike) -> float:
    """Read x, write y."""
    return 2.0 * case.size * case.itemsize


def copy_flops(case: CaseLike) -> float:
    """A copy does no arithmetic."""
    return 0.0


def scale_bytes(case: CaseLike) -> float:
    """Read x, write y."""
    return 2.0 * case.size * case.itemsize


def scale_flops(case: CaseLike) -> float:
    """One multiply and one add per element."""
    return 2.0 * case.size


def add_bytes(case: CaseLike) -> float:
    """Read x and y, write z."""
    return 3.0 * case.size * case.itemsize


def add_flops(case: CaseLike) -> float:
    """One add per element."""
    return 1.0 * case.size
