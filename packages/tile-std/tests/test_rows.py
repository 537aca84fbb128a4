"""softmax, rmsnorm and layernorm against float32 references, ragged rows and columns included."""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import pytest

import tile_runner as tile
from tile_std import (
    KernelInputError,
    layernorm,
    layernorm_ref,
    rmsnorm,
    rmsnorm_ref,
    softmax,
    softmax_ref,
)
from tile_std._norms import LAYERNORM_EPS, RMSNORM_EPS
from tile_std._rows_bwd import layernorm_backward, rmsnorm_backward, softmax_backward

from .conftest import TOL, AssertClose, Normal, upcast

# (shape, block_rows): a 3-D input over several programs with a ragged last block and columns
# padded to a power of two; the default tiling (one block holding every row, no masks).
CASES = [((3, 11, 100), 8), ((8, 128), None)]
IDS = ["ragged-rows-and-cols-3d", "default-tiling"]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize(("shape", "block_rows"), CASES, ids=IDS)
def test_row_kernels_match_reference(
    normal: Normal,
    assert_close: AssertClose,
    shape: tuple[int, ...],
    block_rows: int | None,
    dtype: str,
):
    x = normal(0, shape, dtype)
    hidden = shape[-1:]
    w = (1 + 0.3 * normal(1, hidden, "float32")).astype(dtype)
    b = (0.3 * normal(2, hidden, "float32")).astype(dtype)
    assert_close(softmax(x, block_rows=block_rows), softmax_ref(*upcast(x)), TOL[dtype], dtype)
    assert_close(
        rmsnorm(x, w, block_rows=block_rows), rmsnorm_ref(*upcast(x, w)), TOL[dtype], dtype
    )
    assert_close(
        layernorm(x, w, b, block_rows=block_rows),
        layernorm_ref(*upcast(x, w, b)),
        TOL[dtype],
        dtype,
    )


def _kernel_ops(fn: Any, *args: jax.Array) -> list[str]:
    """The primitives of the Pallas kernel body `fn(*args)` launches, in program order."""

    def kernel_of(jaxpr: Any) -> Any:
        for eqn in jaxpr.eqns:
            if eqn.primitive.name == "pallas_call":
                return eqn.params["jaxpr"]
            for value in eqn.params.values():
                inner = getattr(value, "jaxpr", None)
                found = kernel_of(getattr(inner, "jaxpr", inner)) if inner is not None else None
                if found is not None:
                    return found
        return None

    make_jaxpr: Any = jax.make_jaxpr  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    kernel = kernel_of(make_jaxpr(fn)(*args).jaxpr)
    assert kernel is not None, "no pallas_call in the program"
    return [eqn.primitive.name for eqn in kernel.eqns]


@pytest.mark.parametrize(("shape", "block_rows"), CASES, ids=IDS)
def test_layernorm_reading_its_parameters_late_computes_the_same_rows(
    normal: Normal, shape: tuple[int, ...], block_rows: int | None
):
    """`late_params` (tunable `param_reads="late"`) moves the weight and bias reads after the
    row statistics: the kernel reads them after its reductions, and its rows are the same."""
    x = normal(0, shape, "bfloat16")
    hidden = shape[-1:]
    w = (1 + 0.3 * normal(1, hidden, "float32")).astype("bfloat16")
    b = (0.3 * normal(2, hidden, "float32")).astype("bfloat16")
    early = layernorm(x, w, b, block_rows=block_rows)
    late = layernorm(x, w, b, block_rows=block_rows, late_params=True)
    assert jnp.array_equal(early, late)
    for late_params in (False, True):
        call = functools.partial(layernorm, block_rows=block_rows, late_params=late_params)
        ops = _kernel_ops(call, x, w, b)
        reads = [i for i, op in enumerate(ops) if op in ("get", "masked_load")]
        assert len(reads) == 3, ops  # x, weight, bias
        first_sum = ops.index("reduce_sum")
        if late_params:
            assert reads[0] < first_sum < reads[1], ops
        else:
            assert reads[-1] < first_sum, ops


# (shape, launch): more blocks than programs, so each program loops; one block per program;
# and ragged rows, which take the block grid (the loop has no masks).
PERSISTENT = [
    ((48, 256), {"block_rows": 2, "programs_per_sm": 3}),
    ((4, 128), {"block_rows": 1, "programs_per_sm": 8}),
    ((3, 11, 100), {"block_rows": 2, "programs_per_sm": 2}),
]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize(("shape", "launch"), PERSISTENT, ids=["looping", "one-each", "ragged"])
def test_persistent_norms_match_reference(
    normal: Normal,
    assert_close: AssertClose,
    shape: tuple[int, ...],
    launch: dict[str, Any],
    dtype: str,
):
    x = normal(0, shape, dtype)
    hidden = shape[-1:]
    w = (1 + 0.3 * normal(1, hidden, "float32")).astype(dtype)
    b = (0.3 * normal(2, hidden, "float32")).astype(dtype)
    assert_close(rmsnorm(x, w, **launch), rmsnorm_ref(*upcast(x, w)), TOL[dtype], dtype)
    assert_close(layernorm(x, w, b, **launch), layernorm_ref(*upcast(x, w, b)), TOL[dtype], dtype)


def test_softmax_rows_sum_to_one_with_large_values(normal: Normal):
    # Values around 1e4 overflow exp() without the max subtraction.
    x = 1e4 * normal(0, (5, 70), "float32")
    y = softmax(x, block_rows=2)
    assert jnp.allclose(jnp.sum(y, axis=-1), 1.0, atol=1e-5)
    assert jnp.array_equal(jnp.argmax(y, axis=-1), jnp.argmax(x, axis=-1))


def test_layernorm_output_is_normalized(normal: Normal):
    x = 5 + 3 * normal(0, (6, 96), "float32")
    ones, zeros = jnp.ones((96,)), jnp.zeros((96,))
    y = layernorm(x, ones, zeros, block_rows=4)
    assert jnp.allclose(jnp.mean(y, axis=-1), 0.0, atol=1e-5)
    assert jnp.allclose(jnp.var(y, axis=-1), 1.0, atol=1e-3)


def test_norms_reject_wrong_parameter_shape(normal: Normal):
    x = normal(0, (4, 16), "float32")
    with pytest.raises(KernelInputError, match=r"std/rmsnorm: parameter of shape \(8,\)"):
        rmsnorm(x, jnp.ones((8,)))
    with pytest.raises(KernelInputError, match="std/layernorm"):
        layernorm(x, jnp.ones((16,)), jnp.ones((4, 16)))


def test_rows_too_wide_for_one_program_are_refused():
    x = jax.ShapeDtypeStruct((2, (1 << 16) + 1), jnp.float32)
    with pytest.raises(KernelInputError, match="do not fit one program"):
        # jax.eval_shape's `fun` is a bare Callable in jax's sources.
        jax.eval_shape(softmax, x)  # pyright: ignore[reportUnknownMemberType]


def _row_backward_case(name: str, normal: Normal, dtype: str, block_rows: int | None) -> Any:
    """(inputs, cotangent, the Pallas backward's gradients, the reference) of one row kernel."""
    shape = (3, 50, 1000)
    x, g = normal(0, shape, dtype), normal(2, shape, dtype)
    w = (1 + 0.3 * normal(1, (1000,), "float32")).astype(dtype)
    b = (0.3 * normal(3, (1000,), "float32")).astype(dtype)
    if name == "std/softmax":
        return (x,), g, (softmax_backward(x, g, block_rows=block_rows),), softmax_ref
    if name == "std/rmsnorm":
        got = rmsnorm_backward(x, w, g, eps=RMSNORM_EPS, block_rows=block_rows)
        return (x, w), g, got, rmsnorm_ref
    got = layernorm_backward(x, w, b, g, eps=LAYERNORM_EPS, block_rows=block_rows)
    return (x, w, b), g, got, layernorm_ref


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("block_rows", [None, 8], ids=["default-tiling", "8-rows"])
@pytest.mark.parametrize("name", ["std/softmax", "std/rmsnorm", "std/layernorm"])
def test_row_pallas_backward_matches_autodiff_of_the_reference(
    normal: Normal, assert_close: AssertClose, name: str, block_rows: int | None, dtype: str
):
    # 150 rows of 1000 (padded to 1024). With 8 rows per block: 19 blocks over 4 programs, so
    # each program loops over several blocks, the last run crosses the array's end, and the
    # parameters' gradients are summed over the programs' shares.
    args, g, got, ref = _row_backward_case(name, normal, dtype, block_rows)
    _, pull = jax.vjp(ref, *upcast(*args))  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    want = pull(*upcast(g))  # pyright: ignore[reportUnknownVariableType]
    assert [a.dtype for a in got] == [a.dtype for a in args]
    for mine, theirs in zip(got, want, strict=True):  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
        assert_close(mine, theirs, TOL[dtype], dtype)  # pyright: ignore[reportUnknownArgumentType]
    if block_rows is not None:
        return
    # Through the registered kernel: jax.grad reaches the Pallas backward.
    fn = tile.get_kernel(name).fn

    def loss(*a: jax.Array) -> jax.Array:
        return jnp.sum(fn(*a).astype(jnp.float32) * g.astype(jnp.float32))

    grads = jax.grad(loss, argnums=tuple(range(len(args))))(*args)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    for through, direct in zip(grads, got, strict=True):  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
        assert_close(through, direct, 0.0, dtype)  # pyright: ignore[reportUnknownArgumentType]
