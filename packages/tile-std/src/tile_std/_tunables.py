"""What `tile tune` may choose for tile-std's Pallas kernels, and the entry points it calls.

Every kernel keeps "auto" as its default (also when called without the tunables): the tiling each kernel picks today from its own
measurements (see the sweeps quoted in _norms.py, _matmul.py and _attention.py). Explicit
values are ruled out where they cannot run: blocks larger than a program can hold, or
Triton pipelines whose shared memory exceeds the H200's 227 KiB per block.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax

import tile_runner as tile

from ._attention import AttentionTiling, attention, attention_saving
from ._matmul import MatmulTiling, matmul
from ._matmul_hopper import HopperTiling, hopper_fits, on_hopper
from ._norms import layernorm, persistent_fits, rmsnorm
from ._pallas import SHARED_BYTES, next_pow2, row_tiling
from ._softmax import softmax

__all__ = [
    "ATTENTION_TUNABLES",
    "LAYERNORM_TUNABLES",
    "MATMUL_TUNABLES",
    "ROW_TUNABLES",
    "attention_fits",
    "attention_tuned",
    "attention_tuned_saving",
    "layernorm_fits",
    "layernorm_tuned",
    "matmul_fits",
    "matmul_tuned",
    "rmsnorm_tuned",
    "row_fits",
    "softmax_tuned",
]

ROW_TUNABLES = tile.axes(block_rows=["auto", 1, 2, 4, 8], num_warps=["auto", 4, 8, 16])
"""Whole rows per program and warps per program for softmax, RMSNorm and LayerNorm."""
LAYERNORM_TUNABLES = tile.axes(
    block_rows=["auto", 1, 2, 4, 8],
    num_warps=["auto", 4, 8, 16],
    programs_per_sm=["auto", 2, 4],
    param_reads=["early", "late"],
)
"""ROW_TUNABLES, a persistent grid of 2 or 4 programs per SM ("auto": one program per block,
unless LayerNorm's own choice, with every value "auto", is persistent), and whether a block
program reads weight and bias before the row statistics or after them."""
_WGMMA_BLOCKS = {
    # A warpgroup's tile; the two compute warpgroups sit side by side so that both make a
    # 128x256 program tile (the H100 sweep's best two, within 1% of each other).
    "wgmma:64x256x64": HopperTiling(64, 256, 64, split="m"),
    "wgmma:128x128x64": HopperTiling(128, 128, 64, split="n"),
}
MATMUL_TUNABLES = tile.axes(
    block=[
        "auto",
        "128x256x64",
        "128x128x64",
        "64x256x64",
        "128x128x32",
        "64x128x64",
        *_WGMMA_BLOCKS,
    ],
    num_warps=[8, 4],
    num_stages=[3, 4],
)
"""Output tile and K step (`MxNxK`), warps and pipeline stages of the Triton-backend matmul;
`wgmma:` blocks are the Hopper kernel's warpgroup tile, its stages `num_stages`."""
ATTENTION_TUNABLES = tile.axes(
    block=["auto", "256x64", "128x128", "128x64", "64x64"], num_warps=[8, 4], num_stages=[3, 2]
)
"""Query and key block sizes (`QxK`), warps and pipeline stages of the attention kernel."""

_ROW_ELEMENTS_MAX = 32768  # 4x the shared row budget of _pallas.row_tiling: register spills


def _opt(value: Any) -> Any:
    return None if value == "auto" else value


def _dims(block: str) -> list[int]:
    return [int(v) for v in block.split("x")]


def _auto_alone(config: Any, first: dict[str, Any]) -> str | None:
    """`auto` picks its own launch parameters: only one `auto` configuration is timed."""
    if config["block"] == "auto" and any(config[k] != v for k, v in first.items()):
        return "`auto` picks its own warps and stages"
    return None


def row_fits(case: Any, config: Any) -> str | None:
    """Rows per program times the padded row must fit a program's registers."""
    rows = config["block_rows"]
    if rows != "auto" and rows * next_pow2(case.shape[-1]) > _ROW_ELEMENTS_MAX:
        return f"{rows} rows of {next_pow2(case.shape[-1])} elements spill registers"
    return None


def layernorm_fits(case: Any, config: Any) -> str | None:
    """`row_fits`; a persistent grid walks whole blocks of unpadded rows only, and reads the
    parameters before its loop (late reads are the block grid's)."""
    reason = row_fits(case, config)
    if reason is not None:
        return reason
    if config["programs_per_sm"] == "auto":
        return None
    if config["param_reads"] == "late":
        return "a persistent grid reads the parameters once per program, before its loop"
    n_cols = case.shape[-1]
    n_rows = case.size // n_cols
    rows = _opt(config["block_rows"])
    t = row_tiling("std/layernorm", n_rows, n_cols, interpret=False, block_rows=rows)
    if not persistent_fits(n_rows, n_cols, t):
        return f"a persistent grid needs {t.block_rows}-row blocks of power-of-two rows"
    return None


def _wgmma_tiling(block: str, num_stages: int) -> HopperTiling:
    return dataclasses.replace(_WGMMA_BLOCKS[block], stages=num_stages)


def _wgmma_fits(case: Any, config: Any) -> str | None:
    if not on_hopper():
        return "the wgmma kernel needs an sm90 GPU (H100, H200)"
    if config["num_warps"] != 8:
        return "the wgmma kernel's warps are fixed (three warpgroups)"
    m, n, k = case.shape
    return hopper_fits(
        m, n, k, case.get("dtype"), _wgmma_tiling(config["block"], config["num_stages"])
    )


def matmul_fits(case: Any, config: Any) -> str | None:
    """Pipeline stages of the A and B tiles must fit the shared memory of one block."""
    reason = _auto_alone(config, {"num_warps": 8, "num_stages": 3})
    if reason is not None or config["block"] == "auto":
        return reason
    if config["block"] in _WGMMA_BLOCKS:
        return _wgmma_fits(case, config)
    bm, bn, bk = _dims(config["block"])
    need = config["num_stages"] * (bm * bk + bk * bn) * case.itemsize
    if need > SHARED_BYTES:
        return f"{need // 1024} KiB of shared memory per block (at most {SHARED_BYTES // 1024})"
    return None


def attention_fits(case: Any, config: Any) -> str | None:
    """The query block and the pipelined key and value blocks must fit shared memory."""
    reason = _auto_alone(config, {"num_warps": 8, "num_stages": 3})
    if reason is not None or config["block"] == "auto":
        return reason
    bq, bk = _dims(config["block"])
    head_dim = case.shape[-1]
    need = (bq * head_dim + 2 * config["num_stages"] * bk * head_dim) * case.itemsize
    if need > SHARED_BYTES:
        return f"{need // 1024} KiB of shared memory per block (at most {SHARED_BYTES // 1024})"
    return None


def softmax_tuned(x: jax.Array, *, block_rows: Any = "auto", num_warps: Any = "auto") -> jax.Array:
    """Softmax with tunable rows and warps per program ("auto": its own choice)."""
    return softmax(x, block_rows=_opt(block_rows), num_warps=_opt(num_warps))


def rmsnorm_tuned(
    x: jax.Array, w: jax.Array, *, block_rows: Any = "auto", num_warps: Any = "auto"
) -> jax.Array:
    """RMSNorm with tunable rows and warps per program ("auto": its own choice)."""
    return rmsnorm(x, w, block_rows=_opt(block_rows), num_warps=_opt(num_warps))


def layernorm_tuned(
    x: jax.Array,
    w: jax.Array,
    b: jax.Array,
    *,
    block_rows: Any = "auto",
    num_warps: Any = "auto",
    programs_per_sm: Any = "auto",
    param_reads: str = "early",
) -> jax.Array:
    """LayerNorm with tunable rows, warps, persistent grid ("auto": its own choice) and the
    order of its parameter reads."""
    return layernorm(
        x,
        w,
        b,
        block_rows=_opt(block_rows),
        num_warps=_opt(num_warps),
        programs_per_sm=_opt(programs_per_sm),
        late_params=param_reads == "late",
    )


def matmul_tuned(
    a: jax.Array, b: jax.Array, *, block: str = "auto", num_warps: int = 8, num_stages: int = 3
) -> jax.Array:
    """The matmul with a tunable tile ("auto": the measured default for the device and dtype)."""
    if block == "auto":
        return matmul(a, b)
    if block in _WGMMA_BLOCKS:
        return matmul(a, b, tiling=_wgmma_tiling(block, num_stages))
    bm, bn, bk = _dims(block)
    return matmul(a, b, tiling=MatmulTiling(bm, bn, bk, 8, num_warps, num_stages))


def _attention_tiling(block: str, num_warps: int, num_stages: int) -> AttentionTiling | None:
    if block == "auto":
        return None
    bq, bk = _dims(block)
    return AttentionTiling(bq, bk, num_warps, num_stages)


def attention_tuned(
    q: jax.Array,
    k: jax.Array,
    v: jax.Array,
    causal: bool = False,
    *,
    block: str = "auto",
    num_warps: int = 8,
    num_stages: int = 3,
) -> jax.Array:
    """Attention with tunable blocks ("auto": the measured default for the dtype)."""
    return attention(q, k, v, causal, tiling=_attention_tiling(block, num_warps, num_stages))


def attention_tuned_saving(
    q: jax.Array,
    k: jax.Array,
    v: jax.Array,
    causal: bool = False,
    *,
    block: str = "auto",
    num_warps: int = 8,
    num_stages: int = 3,
) -> tuple[jax.Array, tuple[jax.Array, jax.Array]]:
    """`attention_tuned` as a gradient's forward: `(out, (out, lse))`, what the backward reads."""
    return attention_saving(q, k, v, causal, tiling=_attention_tiling(block, num_warps, num_stages))
