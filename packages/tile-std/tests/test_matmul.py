"""matmul against its reference: tiles, ragged M/N/K, dtypes, and input errors."""

from __future__ import annotations

import pytest

from tile_std import KernelInputError, MatmulTiling, matmul, matmul_ref

from .conftest import MATMUL_TOL, AssertClose, Normal, upcast

SMALL = MatmulTiling(block_m=32, block_n=32, block_k=16, group_m=2, num_warps=4, num_stages=1)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize(
    ("m", "n", "k", "tiling"),
    [(100, 90, 70, SMALL), (64, 64, 64, SMALL), (40, 24, 50, None)],
    ids=["ragged-mnk-grouped", "exact-tiles", "default-tiling"],
)
def test_matmul_matches_reference(
    normal: Normal,
    assert_close: AssertClose,
    *,
    m: int,
    n: int,
    k: int,
    tiling: MatmulTiling | None,
    dtype: str,
):
    a, b = normal(0, (m, k), dtype), normal(1, (k, n), dtype)
    out = matmul(a, b, tiling=tiling)
    assert out.shape == (m, n)
    assert_close(out, matmul_ref(*upcast(a, b)), MATMUL_TOL[dtype], dtype)


def test_matmul_rejects_bad_inputs(normal: Normal):
    with pytest.raises(KernelInputError, match=r"cannot multiply \(4, 8\) by \(9, 4\)"):
        matmul(normal(0, (4, 8), "float32"), normal(1, (9, 4), "float32"))
    with pytest.raises(KernelInputError, match="dtypes differ"):
        matmul(normal(0, (4, 8), "float32"), normal(1, (8, 4), "bfloat16"))
