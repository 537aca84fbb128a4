"""Fused attention forward: jnp reference and a flash-attention Pallas kernel (online softmax)."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

import tile_runner as tile

from ._errors import KernelInputError
from ._pallas import (
    CaseLike,
    compiler_params,
    fori_loop,
    interpret_mode,
    load,
    next_pow2,
    span,
    store,
)

__all__ = [
    "AttentionTiling",
    "attention",
    "attention_bytes",
    "attention_flops",
    "attention_ref",
    "attention_saving",
    "attention_with_lse",
    "key_blocks",
]


@dataclass(frozen=True)
class AttentionTiling:
    """Query/key block sizes and Triton launch parameters of the attention kernel."""

    block_q: int = 256
    block_k: int = 64
    num_warps: int = 8
    num_stages: int = 3


# H200 sweep (jax 0.11.2, bf16, head_dim 128), TFLOP/s full / causal at seq 4096 and 1024:
# 256x64 blocks, 8 warps, 3 stages: 495 / 433 and 425 / 252; 128x128: 479 / 420 and 398 / 270;
# 128x64: 413-440 / 385. 128x128 with 4 stages needs more shared memory than the H200 has.
_GPU_TILING = AttentionTiling(256, 64, 8, 3)
# float32 blocks need twice the shared memory: 256x64 over head_dim 128 does not fit the H200;
# 128x64 does (checked correct there).
_GPU_TILING_WIDE = AttentionTiling(128, 64, 8, 3)
_INTERPRET_TILING = AttentionTiling(128, 128, 4, 1)
# Finite, so masked scores never make inf - inf = nan in the running max. (ml_dtypes, behind
# jnp.finfo, leaves `max` partly untyped.)
_MASKED = -0.7 * float(jnp.finfo(jnp.float32).max)  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]


@dataclass(frozen=True)
class _Rows:
    """What every key block of one query block's loop reads: its queries and the masks."""

    q: jax.Array
    q_rows: jax.Array
    d_mask: jax.Array | None
    seq: int
    block_k: int
    causal: bool
    qk_scale: float


def _step(
    j: jax.Array,
    carry: tuple[jax.Array, ...],
    *,
    rows: _Rows,
    k_ref: jax.Array,
    v_ref: jax.Array,
    masked: bool,
) -> tuple[jax.Array, ...]:
    """One key block of the online softmax: update the running max, sum and output."""
    acc, m_prev, l_prev = carry
    seq, block_k = rows.seq, rows.block_k
    ks = pl.ds(pl.multiple_of(j * block_k, block_k), block_k)
    kv_mask = rows.d_mask
    if seq % block_k:
        in_seq = span(j, block_k, 0, 2) < seq
        kv_mask = in_seq if rows.d_mask is None else in_seq & rows.d_mask
    k = load(k_ref.at[ks, :], kv_mask)
    v = load(v_ref.at[ks, :], kv_mask)
    s = lax.dot_general(rows.q, k, (((1,), (1,)), ((), ())), preferred_element_type=jnp.float32)  # pyright: ignore[reportUnknownMemberType]
    s = s * rows.qk_scale
    if masked:
        k_cols = span(j, block_k, 1, 2)
        keep = k_cols < seq
        if rows.causal:
            keep = keep & (rows.q_rows >= k_cols)
        s = jnp.where(keep, s, _MASKED)
    m_next = jnp.maximum(m_prev, jnp.max(s, axis=1))
    p = jnp.exp2(s - m_next[:, None])
    alpha = jnp.exp2(m_prev - m_next)
    l_next = l_prev * alpha + jnp.sum(p, axis=1)
    pv = jnp.dot(p.astype(v.dtype), v, preferred_element_type=jnp.float32)
    return acc * alpha[:, None] + pv, m_next, l_next


def key_blocks(
    q_block: jax.Array, block_q: int, block_k: int, seq: int, causal: bool
) -> tuple[jax.Array | int, jax.Array | int]:
    """The key blocks [0, unmasked) seen in full by every query, and the end of the rest.

    Key blocks every query of this block sees in full need no mask; the rest (the diagonal
    under causal, the ragged tail otherwise) go through the masked loop.
    """
    num_k_blocks = pl.cdiv(seq, block_k)
    if not causal:
        return seq // block_k, num_k_blocks
    # lax.div: the program id is a traced int32 and `//` lowers to more than a division.
    unmasked = jnp.minimum(lax.div(q_block * block_q, block_k), seq // block_k)
    end = jnp.minimum(lax.div((q_block + 1) * block_q + block_k - 1, block_k), num_k_blocks)
    return unmasked, end


@dataclass(frozen=True)
class _Problem:
    """What the kernel knows at trace time: the sizes, the key block of its loop, the number
    of query blocks, the mask and the score scale."""

    seq: int
    head_dim: int
    block_k: int
    num_q_blocks: int
    causal: bool
    scale: float


def _attention_kernel(
    q_ref: jax.Array,
    k_ref: jax.Array,
    v_ref: jax.Array,
    o_ref: jax.Array,
    *lse_ref: jax.Array,
    problem: _Problem,
) -> None:
    seq, head_dim, block_k = problem.seq, problem.head_dim, problem.block_k
    num_q_blocks, causal, scale = problem.num_q_blocks, problem.causal, problem.scale
    block_q, d_pad = q_ref.shape
    # Programs run in reverse query order: under a causal mask the long rows start first.
    q_block = num_q_blocks - 1 - pl.program_id(0)
    q_rows = span(q_block, block_q, 0, 2)
    d_cols = span(0, d_pad, 1, 2)
    d_mask = None if d_pad == head_dim else d_cols < head_dim
    q_mask = d_mask
    if seq % block_q:
        q_mask = (q_rows < seq) if d_mask is None else (q_rows < seq) & d_mask
    # exp2 is the fast instruction; fold log2(e) into the score scale.
    rows = _Rows(
        load(q_ref, q_mask), q_rows, d_mask, seq, block_k, causal, scale * math.log2(math.e)
    )
    step = functools.partial(_step, rows=rows, k_ref=k_ref, v_ref=v_ref)
    carry = (
        jnp.zeros((block_q, d_pad), jnp.float32),
        jnp.full((block_q,), -jnp.inf, jnp.float32),
        jnp.zeros((block_q,), jnp.float32),
    )
    unmasked, end = key_blocks(q_block, block_q, block_k, seq, causal)
    carry = fori_loop(0, unmasked, functools.partial(step, masked=False), carry)
    carry = fori_loop(unmasked, end, functools.partial(step, masked=True), carry)
    acc, m_max, l_sum = carry
    out = acc / l_sum[:, None]
    o_mask = None
    if q_mask is not None:
        o_mask = (q_rows < seq) & (d_cols < head_dim)
    store(o_ref, out.astype(o_ref.dtype), o_mask)
    if lse_ref:
        # The backward's residual: log2 of each row's softmax sum, in the scaled-score units.
        lse = m_max + jnp.log2(l_sum)
        store(lse_ref[0], lse, None if o_mask is None else q_rows[:, 0] < seq)


def _check_inputs(q: jax.Array, k: jax.Array, v: jax.Array, causal: object) -> None:
    if q.ndim != 4 or q.shape != k.shape or q.shape != v.shape:
        raise KernelInputError(
            "std/attention",
            f"q, k, v must share one (batch, heads, seq, head_dim) shape; got "
            f"{q.shape}, {k.shape}, {v.shape}",
            hint="this kernel is self-attention with equal query and key lengths",
        )
    if not (q.dtype == k.dtype == v.dtype):
        raise KernelInputError(
            "std/attention",
            f"dtypes differ: {q.dtype}, {k.dtype}, {v.dtype}",
            hint="cast q, k and v to one dtype",
        )
    # Callers outside the type checker may pass a traced array, which cannot pick a kernel.
    if not isinstance(causal, bool):
        raise KernelInputError(
            "std/attention",
            f"causal must be a Python bool known at trace time, got {type(causal).__name__}",
            hint="pass causal=True or causal=False (it selects a different kernel)",
        )


def _pick_tiling(q: jax.Array, tiling: AttentionTiling | None, interpret: bool) -> AttentionTiling:
    if tiling is not None:
        return tiling
    if interpret:
        return _INTERPRET_TILING
    return _GPU_TILING if q.dtype.itemsize <= 2 else _GPU_TILING_WIDE


@tile.recorded("std/attention")  # its calls are `std/attention`'s cases for `--from`
def attention(
    q: jax.Array,
    k: jax.Array,
    v: jax.Array,
    causal: bool = False,
    *,
    tiling: AttentionTiling | None = None,
) -> jax.Array:
    """softmax(q k^T / sqrt(d)) v per (batch, head): one program per query block, loop over keys."""
    return _attention_call(q, k, v, causal, tiling, with_lse=False)[0]


def attention_with_lse(
    q: jax.Array,
    k: jax.Array,
    v: jax.Array,
    causal: bool = False,
    *,
    tiling: AttentionTiling | None = None,
) -> tuple[jax.Array, jax.Array]:
    """`(out, lse)`: attention and, per (batch, head, query), log2 of its softmax sum over the
    scores scaled by log2(e) / sqrt(d) (float32), the residual of the backward kernels."""
    out, lse = _attention_call(q, k, v, causal, tiling, with_lse=True)
    return out, lse


def attention_saving(
    q: jax.Array,
    k: jax.Array,
    v: jax.Array,
    causal: bool = False,
    *,
    tiling: AttentionTiling | None = None,
) -> tuple[jax.Array, tuple[jax.Array, jax.Array]]:
    """Attention as a gradient's forward: `(out, (out, lse))`, what the backward reads."""
    out, lse = attention_with_lse(q, k, v, causal, tiling=tiling)
    return out, (out, lse)


def _attention_call(
    q: jax.Array,
    k: jax.Array,
    v: jax.Array,
    causal: bool,
    tiling: AttentionTiling | None,
    *,
    with_lse: bool,
) -> tuple[jax.Array, ...]:
    _check_inputs(q, k, v, causal)
    batch, heads, seq, head_dim = q.shape
    interpret = interpret_mode()
    t = _pick_tiling(q, tiling, interpret)
    block_q = min(t.block_q, max(16, next_pow2(seq)))
    block_k = min(t.block_k, max(16, next_pow2(seq)))
    d_pad = max(16, next_pow2(head_dim))
    num_q_blocks = pl.cdiv(seq, block_q)

    def q_map(i: jax.Array, b: jax.Array, h: jax.Array) -> tuple[jax.Array | int, ...]:
        return b, h, num_q_blocks - 1 - i, 0

    def kv_map(i: jax.Array, b: jax.Array, h: jax.Array) -> tuple[jax.Array | int, ...]:
        return b, h, 0, 0

    q_spec = pl.BlockSpec((None, None, block_q, d_pad), q_map)
    kv_spec = pl.BlockSpec((None, None, seq, d_pad), kv_map)
    problem = _Problem(
        seq=seq,
        head_dim=head_dim,
        block_k=block_k,
        num_q_blocks=num_q_blocks,
        causal=causal,
        scale=1.0 / math.sqrt(head_dim),
    )

    def lse_map(i: jax.Array, b: jax.Array, h: jax.Array) -> tuple[jax.Array | int, ...]:
        return b, h, num_q_blocks - 1 - i

    out_shape = [jax.ShapeDtypeStruct(q.shape, q.dtype)]
    out_specs = [q_spec]
    if with_lse:
        out_shape.append(jax.ShapeDtypeStruct((batch, heads, seq), jnp.float32))
        out_specs.append(pl.BlockSpec((None, None, block_q), lse_map))
    kernel = functools.partial(_attention_kernel, problem=problem)
    return pl.pallas_call(
        kernel,
        out_shape=tuple(out_shape),
        grid=(num_q_blocks, batch, heads),
        in_specs=[q_spec, kv_spec, kv_spec],
        out_specs=tuple(out_specs),
        interpret=interpret,
        compiler_params=compiler_params(t.num_warps, t.num_stages),
        name="std_attention",
    )(q, k, v)


def attention_ref(q: jax.Array, k: jax.Array, v: jax.Array, causal: bool = False) -> jax.Array:
    """Reference attention in float32: softmax(q k^T / sqrt(d), masked if causal) v (jnp)."""
    qf, kf, vf = (t.astype(jnp.float32) for t in (q, k, v))
    s = jnp.einsum("bhqd,bhkd->bhqk", qf, kf) / math.sqrt(q.shape[-1])  # pyright: ignore[reportUnknownMemberType]
    if causal:
        seq = q.shape[2]
        keep = jnp.arange(seq)[:, None] >= jnp.arange(seq)[None, :]
        s = jnp.where(keep, s, -jnp.inf)
    p = jax.nn.softmax(s, axis=-1)
    return jnp.einsum("bhqk,bhkd->bhqd", p, vf).astype(q.dtype)  # pyright: ignore[reportUnknownMemberType]


def attention_bytes(case: CaseLike) -> float:
    """Read q, k, v once and write o: 4 * B*H*S*D elements."""
    b, h, s, d = case.shape
    return 4.0 * b * h * s * d * case.itemsize


def attention_flops(case: CaseLike) -> float:
    """Two matmuls of 2*S*S*D each per (batch, head): 4*B*H*S*S*D, halved when causal."""
    b, h, s, d = case.shape
    flops = 4.0 * b * h * s * s * d
    return flops / 2 if case.get("causal", False) else flops
