"""copy, scale and add against their references, including sizes that are not block multiples."""

from __future__ import annotations

import jax.numpy as jnp
import pytest

from tile_std import KernelInputError, add, add_ref, copy, copy_ref, scale, scale_ref

from .conftest import TOL, AssertClose, Normal, upcast


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize(
    ("shape", "block"),
    [((3, 5, 67), 256), ((4000,), None)],
    ids=["ragged-3d-several-blocks", "default-block"],
)
def test_elementwise_matches_reference(
    normal: Normal, assert_close: AssertClose, shape: tuple[int, ...], block: int | None, dtype: str
):
    x, y = normal(0, shape, dtype), normal(1, shape, dtype)
    out = copy(x, block=block)
    assert out.shape == x.shape and out.dtype == x.dtype
    assert jnp.array_equal(out, x), "copy must be exact"
    assert_close(out, copy_ref(*upcast(x)), TOL[dtype], dtype)
    assert_close(scale(x, block=block), scale_ref(*upcast(x)), TOL[dtype], dtype)
    assert_close(add(x, y, block=block), add_ref(*upcast(x, y)), TOL[dtype], dtype)


def test_scale_is_affine_not_identity(normal: Normal):
    x = normal(0, (300,), "float32")
    assert jnp.allclose(scale(x, block=128), 2 * x + 1)


def test_add_rejects_mismatched_inputs(normal: Normal):
    with pytest.raises(KernelInputError, match="std_add: inputs differ"):
        add(normal(0, (8,), "float32"), normal(1, (9,), "float32"))
    with pytest.raises(KernelInputError, match="hint: pass arrays of one shape and dtype"):
        add(normal(0, (8,), "float32"), normal(1, (8,), "bfloat16"))


def test_empty_input_gives_empty_output():
    x = jnp.zeros((0, 4), jnp.float32)
    assert copy(x).shape == (0, 4)
