"""The Pallas backwards lower to Triton on a machine without a GPU.

`jax.export` for the `cuda` platform runs the Pallas Triton lowering (Python to Triton IR) on
the CPU; only the Triton compile to GPU code waits for a GPU. A kernel that uses something the
Triton lowering lacks (an op, a block shape, a mask) fails here, where the interpreter would
run it. The GPU tests (`-m gpu`) check the numbers.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from jax import export

from tile_std import layernorm, rmsnorm
from tile_std._attention import attention_with_lse
from tile_std._attention_bwd import attention_backward
from tile_std._rows_bwd import layernorm_backward, rmsnorm_backward, softmax_backward

_TRITON = export.DisabledSafetyCheck.custom_call("__gpu$xla.gpu.triton")


def _lower_for_cuda(fn: Callable[..., Any], *args: jax.ShapeDtypeStruct) -> str:
    exported = export.export(jax.jit(fn), platforms=["cuda"], disabled_checks=[_TRITON])(*args)  # pyright: ignore[reportUnknownMemberType]
    return exported.mlir_module()


@pytest.fixture(autouse=True)
def _gpu_path(monkeypatch: pytest.MonkeyPatch) -> None:
    # tile_std picks Triton over the interpreter when the default backend is a GPU.
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")


@pytest.mark.parametrize("dtype", [jnp.bfloat16, jnp.float32], ids=["bfloat16", "float32"])
@pytest.mark.parametrize("shape", [(1000, 1000), (333, 8192), (2, 64, 768)])
def test_row_backwards_lower_to_triton(shape: tuple[int, ...], dtype: Any):
    x, w = jax.ShapeDtypeStruct(shape, dtype), jax.ShapeDtypeStruct(shape[-1:], dtype)

    def norms(x: jax.Array, w: jax.Array, g: jax.Array) -> tuple[jax.Array, ...]:
        return (
            softmax_backward(x, g),
            *rmsnorm_backward(x, w, g, eps=1e-6),
            *layernorm_backward(x, w, w, g, eps=1e-5),
        )

    module = _lower_for_cuda(norms, x, w, x)
    for name in ("std_softmax_bwd", "std_rmsnorm_bwd", "std_layernorm_bwd"):
        assert name in module


def _grid_x(module: str) -> int:
    return int(re.search(r"grid_x = (\d+)", module).group(1))  # pyright: ignore[reportOptionalMemberAccess]


@pytest.mark.parametrize(
    ("cols", "dtype", "grid"),
    [(8192, jnp.float32, 2), (4096, jnp.float32, 32), (8192, jnp.bfloat16, 32)],
    ids=["float32-8192-persistent", "float32-4096-blocks", "bfloat16-8192-two-rows"],
)
def test_layernorm_forward_lowers_with_its_measured_schedule(cols: int, dtype: Any, grid: int):
    # float32 rows of 8192 take a persistent grid of two programs per SM (one SM here, where
    # JAX reports none); the others one program per block of two rows (bfloat16: LayerNorm's
    # own choice; float32 at 4096: the shared tiling's budget of 8192 elements).
    x, w = jax.ShapeDtypeStruct((64, cols), dtype), jax.ShapeDtypeStruct((cols,), dtype)
    module = _lower_for_cuda(layernorm, x, w, w)
    assert "std_layernorm" in module
    assert _grid_x(module) == grid


def test_rmsnorm_forward_lowers_persistent_when_asked():
    x, w = jax.ShapeDtypeStruct((64, 512), jnp.float32), jax.ShapeDtypeStruct((512,), jnp.float32)
    module = _lower_for_cuda(functools.partial(rmsnorm, block_rows=2, programs_per_sm=4), x, w)
    assert _grid_x(module) == 4


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize(
    ("shape", "dtype"),
    [((2, 4, 1000, 64), jnp.float32), ((1, 2, 4096, 128), jnp.bfloat16)],
    ids=["ragged-float32", "bfloat16"],
)
def test_attention_backward_lowers_to_triton(shape: tuple[int, ...], dtype: Any, causal: bool):
    q = jax.ShapeDtypeStruct(shape, dtype)
    lse = jax.ShapeDtypeStruct(shape[:3], jnp.float32)

    def grads(*a: jax.Array) -> tuple[jax.Array, ...]:
        q, k, v, out, lse, g = a
        return attention_backward(q, k, v, (out, lse), g, causal=causal)

    def forward(q: jax.Array, k: jax.Array, v: jax.Array) -> tuple[jax.Array, jax.Array]:
        return attention_with_lse(q, k, v, causal)

    assert "std_attention" in _lower_for_cuda(forward, q, q, q)
    module = _lower_for_cuda(grads, q, q, q, q, lse, q)
    assert "std_attention_bwd_dkdv" in module and "std_attention_bwd_dq" in module
