"""matmul against its reference: tiles, ragged M/N/K, dtypes, and input errors."""

from __future__ import annotations

import pytest

import tile_runner as tile
from tile_std import HopperTiling, KernelInputError, MatmulTiling, matmul, matmul_ref
from tile_std._matmul_hopper import hopper_fits

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


@pytest.mark.parametrize(("split", "walk"), [("n", "n"), ("m", "m")])
def test_hopper_kernel_matches_reference_in_the_interpreter(
    normal: Normal, assert_close: AssertClose, *, split: str, walk: str
):
    # Mosaic GPU's interpreter runs the wgmma kernel on the CPU. 256x256 in 64x128 (or 128x64)
    # program tiles is 8 tiles for its 4 programs, so each program walks two and refills its
    # epilogue slots; K of 128 in 64-steps runs the two-stage pipeline round once.
    t = HopperTiling(block_m=64, block_n=64, block_k=64, stages=2, split=split, walk=walk, band=2)
    a, b = normal(0, (256, 128), "bfloat16"), normal(1, (128, 256), "bfloat16")
    out = matmul(a, b, tiling=t)
    assert out.shape == (256, 256) and out.dtype == a.dtype
    assert_close(out, matmul_ref(*upcast(a, b)), MATMUL_TOL["bfloat16"], "bfloat16")


def test_hopper_kernel_says_what_it_cannot_take(normal: Normal):
    t = HopperTiling()  # 128x256 program tile, K step 64
    assert hopper_fits(256, 256, 128, "bfloat16", t) is None
    assert "float32 inputs" in str(hopper_fits(256, 256, 128, "float32", t))
    assert "not a multiple of the 128x256x64" in str(hopper_fits(200, 256, 128, "bfloat16", t))
    deep = HopperTiling(stages=5)
    assert "KiB of shared memory" in str(hopper_fits(256, 256, 128, "bfloat16", deep))
    a, b = normal(0, (64, 64), "float32"), normal(1, (64, 64), "float32")
    with pytest.raises(KernelInputError, match="Hopper kernel cannot take float32 inputs"):
        matmul(a, b, tiling=t)


def test_tune_rules_the_wgmma_blocks_out_off_hopper():
    # `tile tune` on a CPU (or a non-sm90 GPU) must not time the Hopper kernel in its
    # interpreter: the constraint says why each wgmma configuration cannot run here.
    case = tile.cases("std/matmul", "bench", backend="gpu")[0]
    tunables = tile.get_kernel("std/matmul").tunables
    assert tunables is not None
    reasons = {
        config["block"]: why
        for config, why in tunables.configs(case)
        if str(config["block"]).startswith("wgmma:")
    }
    assert set(reasons) == {"wgmma:64x256x64", "wgmma:128x128x64"}
    assert all(why is not None and "sm90" in why for why in reasons.values()), reasons
