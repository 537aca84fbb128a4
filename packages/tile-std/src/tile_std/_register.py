"""Registers every tile-std kernel with tile_runner: inputs, axes per backend, work, tolerances."""

from __future__ import annotations

from typing import Any

import tile_runner as tile

from ._attention import attention_bytes, attention_flops, attention_ref
from ._bandwidth import (
    add,
    add_bytes,
    add_flops,
    add_ref,
    copy,
    copy_bytes,
    copy_flops,
    copy_ref,
    scale,
    scale_bytes,
    scale_flops,
    scale_ref,
)
from ._grad import differentiable
from ._matmul import matmul_bytes, matmul_flops, matmul_ref
from ._norms import (
    layernorm_bytes,
    layernorm_flops,
    layernorm_jnp,
    layernorm_ref,
    rmsnorm_bytes,
    rmsnorm_flops,
    rmsnorm_ref,
)
from ._public import attention_grad, layernorm_grad, rmsnorm_grad, softmax_grad
from ._softmax import softmax_bytes, softmax_flops, softmax_ref
from ._tunables import (
    ATTENTION_TUNABLES,
    LAYERNORM_TUNABLES,
    MATMUL_TUNABLES,
    ROW_TUNABLES,
    attention_fits,
    attention_tuned,
    attention_tuned_saving,
    layernorm_fits,
    layernorm_tuned,
    matmul_fits,
    matmul_tuned,
    rmsnorm_tuned,
    row_fits,
    softmax_tuned,
)

__all__ = ["KERNELS"]

KERNELS = (
    "std/copy",
    "std/scale",
    "std/add",
    "std/softmax",
    "std/rmsnorm",
    "std/layernorm",
    "std/layernorm_jnp",
    "std/matmul",
    "std/attention",
)
"""Names of the kernels this module registers, in registration order."""

_BOTH = ["float32", "bfloat16"]

# CPU runs interpret Pallas: shapes there are small so a whole `tile bench` stays short.
_ELEMENTWISE = {
    "gpu": tile.axes(shape=[(1 << 24,), (1 << 28,)], dtype=_BOTH),
    "default": tile.axes(shape=[(1 << 17,)], dtype=_BOTH),
}
_ELEMENTWISE_TEST = {
    "gpu": tile.axes(shape=[(1_000_003,), (1 << 22,), (64, 1000)], dtype=_BOTH),
    "default": tile.axes(shape=[(1000,), (4096,), (3, 5, 7)], dtype=_BOTH),
}
_ROWS = {
    "gpu": tile.axes(shape=[(4096, 4096), (16384, 8192)], dtype=_BOTH),
    "default": tile.axes(shape=[(256, 1024)], dtype=_BOTH),
}
_ROWS_TEST = {
    "gpu": tile.axes(shape=[(1000, 1000), (4096, 4096), (333, 8192), (2, 64, 768)], dtype=_BOTH),
    "default": tile.axes(shape=[(8, 128), (33, 1000), (2, 3, 64)], dtype=_BOTH),
}
_MATMUL = {
    "gpu": tile.axes(shape=[(4096, 4096, 4096), (8192, 8192, 8192)], dtype="bfloat16"),
    "default": tile.axes(shape=[(256, 256, 256)], dtype=_BOTH),
}
_MATMUL_TEST = {
    "gpu": tile.axes(shape=[(1024, 1024, 1024), (1000, 1200, 900)], dtype=_BOTH),
    "default": tile.axes(shape=[(64, 48, 80), (128, 128, 128)], dtype=_BOTH),
}
_ATTENTION = {
    "gpu": tile.axes(
        shape=[(4, 32, 1024, 128), (4, 32, 4096, 128)], dtype="bfloat16", causal=[False, True]
    ),
    "default": tile.axes(shape=[(1, 4, 128, 64)], dtype=_BOTH, causal=[False, True]),
}
_ATTENTION_TEST = {
    "gpu": tile.axes(
        shape=[(2, 4, 1000, 64), (2, 8, 1024, 128)], dtype=_BOTH, causal=[False, True]
    ),
    "default": tile.axes(
        shape=[(1, 2, 100, 32), (1, 2, 128, 64)], dtype=_BOTH, causal=[False, True]
    ),
}

# float32 matmuls on GPU run on TF32 tensor cores (kernel and XLA reference alike); bfloat16
# outputs carry one bf16 rounding (~4e-3 relative) on top of the accumulation order.
_MATMUL_TOL = {"float32": 2e-3, "bfloat16": 2e-2}


# Every kernel has a gradient: JAX's autodiff of its reference, behind a custom_vjp whose
# forward is the kernel (_grad.py). Where the count is standard the backward's flops are
# declared: a matmul's two products; attention's five matmuls (scores recomputed, then dV,
# dP, dQ and dK) against the forward's two. The row kernels' Pallas backwards read x and the
# cotangent and write dx (the parameters are a row each), whose bytes XLA cannot see inside a
# Pallas call; the forward adds its read and write. Elsewhere XLA's cost analysis says.
_GRAD = ("fwd", "bwd", "fwd_bwd")
# The tunables reach the forward alone (`differentiable` hands them to it; each backward keeps
# its own tiling), so in `bwd` they change nothing timed: no configuration there, none to tune.
_TUNED = ("fwd", "fwd_bwd")
_ROW_MODES = {
    "bwd": tile.mode(bytes=lambda case: 3.0 * case.size * case.itemsize),
    "fwd_bwd": tile.mode(bytes=lambda case: 5.0 * case.size * case.itemsize),
}
_MATMUL_MODES = {
    "bwd": tile.mode(flops=lambda case: 2 * matmul_flops(case)),
    "fwd_bwd": tile.mode(flops=lambda case: 3 * matmul_flops(case)),
}
# Attention's backward reads q, k, v, o and the cotangent and writes dq, dk and dv: 8
# tensors of the forward's 4 (the per-row log-sum-exp is a D-th of one); the whole step 12.
_ATTENTION_MODES = {
    "bwd": tile.mode(
        flops=lambda case: 2.5 * attention_flops(case),
        bytes=lambda case: 2.0 * attention_bytes(case),
    ),
    "fwd_bwd": tile.mode(
        flops=lambda case: 3.5 * attention_flops(case),
        bytes=lambda case: 3.0 * attention_bytes(case),
    ),
}


def _one(case: Any, key: Any) -> tuple[Any, ...]:
    return (tile.normal(key, case.shape, case.dtype),)


def _two(case: Any, key: Any) -> tuple[Any, ...]:
    kx, ky = _split(key, 2)
    return tile.normal(kx, case.shape, case.dtype), tile.normal(ky, case.shape, case.dtype)


def _norm_inputs(case: Any, key: Any, n_params: int) -> tuple[Any, ...]:
    kx, *kp = _split(key, 1 + n_params)
    hidden = case.shape[-1]
    x = tile.normal(kx, case.shape, case.dtype)
    # Weights around 1 and biases around 0, as in a trained layer.
    params = [
        tile.uniform(k, (hidden,), case.dtype, 0.5, 1.5)
        if i == 0
        else tile.uniform(k, (hidden,), case.dtype, -0.5, 0.5)
        for i, k in enumerate(kp)
    ]
    return (x, *params)


def _rmsnorm_inputs(case: Any, key: Any) -> tuple[Any, ...]:
    return _norm_inputs(case, key, 1)


def _layernorm_inputs(case: Any, key: Any) -> tuple[Any, ...]:
    return _norm_inputs(case, key, 2)


def _matmul_inputs(case: Any, key: Any) -> tuple[Any, ...]:
    m, n, k = case.shape
    ka, kb = _split(key, 2)
    return tile.normal(ka, (m, k), case.dtype), tile.normal(kb, (k, n), case.dtype)


def _attention_inputs(case: Any, key: Any) -> tuple[Any, ...]:
    kq, kk, kv = _split(key, 3)
    q, k, v = (tile.normal(x, case.shape, case.dtype) for x in (kq, kk, kv))
    # A Python bool: the runner passes it as a static argument, selecting the causal kernel.
    return q, k, v, bool(case.causal)


def _split(key: Any, n: int) -> list[Any]:
    import jax

    return list(jax.random.split(key, n))


tile.kernel(
    "std/copy",
    inputs=_one,
    reference=copy_ref,
    bench=_ELEMENTWISE,
    test=_ELEMENTWISE_TEST,
    bytes=copy_bytes,
    flops=copy_flops,
    modes=_GRAD,
)(differentiable(copy, copy_ref))

tile.kernel(
    "std/scale",
    inputs=_one,
    reference=scale_ref,
    bench=_ELEMENTWISE,
    test=_ELEMENTWISE_TEST,
    bytes=scale_bytes,
    flops=scale_flops,
    modes=_GRAD,
)(differentiable(scale, scale_ref))

tile.kernel(
    "std/add",
    inputs=_two,
    reference=add_ref,
    bench=_ELEMENTWISE,
    test=_ELEMENTWISE_TEST,
    bytes=add_bytes,
    flops=add_flops,
    modes=_GRAD,
)(differentiable(add, add_ref))

tile.kernel(
    "std/softmax",
    inputs=_one,
    reference=softmax_ref,
    bench=_ROWS,
    test=_ROWS_TEST,
    bytes=softmax_bytes,
    flops=softmax_flops,
    modes=_ROW_MODES,
    tol={"float32": 1e-5, "bfloat16": 1e-2},
    tunables=ROW_TUNABLES,
    tuned_modes=_TUNED,
    constraint=row_fits,
)(differentiable(softmax_tuned, softmax_ref, softmax_grad))

tile.kernel(
    "std/rmsnorm",
    inputs=_rmsnorm_inputs,
    reference=rmsnorm_ref,
    bench=_ROWS,
    test=_ROWS_TEST,
    bytes=rmsnorm_bytes,
    flops=rmsnorm_flops,
    modes=_ROW_MODES,
    tol={"float32": 1e-5, "bfloat16": 1e-2},
    tunables=ROW_TUNABLES,
    tuned_modes=_TUNED,
    constraint=row_fits,
)(differentiable(rmsnorm_tuned, rmsnorm_ref, rmsnorm_grad))

# What the op's two implementations share: one declaration, so their cases stay one set.
_LAYERNORM: dict[str, Any] = {
    "inputs": _layernorm_inputs,
    "reference": layernorm_ref,
    "bench": _ROWS,
    "test": _ROWS_TEST,
    "bytes": layernorm_bytes,
    "flops": layernorm_flops,
    "tol": {"float32": 1e-5, "bfloat16": 1e-2},
}

tile.kernel(
    "std/layernorm",
    **_LAYERNORM,
    modes=_ROW_MODES,
    tunables=LAYERNORM_TUNABLES,
    tuned_modes=_TUNED,
    constraint=layernorm_fits,
    op="layernorm",
    impl="pallas",
)(differentiable(layernorm_tuned, layernorm_ref, layernorm_grad))

# The same op in plain jnp, the baseline the Pallas kernel's `vs jnp` column is against.
tile.kernel(
    "std/layernorm_jnp",
    **_LAYERNORM,
    modes=_GRAD,
    op="layernorm",
    impl="jnp",
    baseline=True,
)(layernorm_jnp)

tile.kernel(
    "std/matmul",
    inputs=_matmul_inputs,
    reference=matmul_ref,
    bench=_MATMUL,
    test=_MATMUL_TEST,
    bytes=matmul_bytes,
    flops=matmul_flops,
    modes=_MATMUL_MODES,
    tol=_MATMUL_TOL,
    tunables=MATMUL_TUNABLES,
    tuned_modes=_TUNED,
    constraint=matmul_fits,
)(differentiable(matmul_tuned, matmul_ref))

tile.kernel(
    "std/attention",
    inputs=_attention_inputs,
    reference=attention_ref,
    bench=_ATTENTION,
    test=_ATTENTION_TEST,
    bytes=attention_bytes,
    flops=attention_flops,
    modes=_ATTENTION_MODES,
    tol={"float32": 2e-3, "bfloat16": 2e-2},
    tunables=ATTENTION_TUNABLES,
    tuned_modes=_TUNED,
    constraint=attention_fits,
)(differentiable(attention_tuned, attention_ref, attention_grad, saving=attention_tuned_saving))
