"""The flash-attention backward (the forward is in _attention.py): two Pallas kernels.

With scores s = q k^T / sqrt(d), p = softmax(s) and o = p v, the cotangent do gives

    dv = p^T do        dp = do v^T        ds = p * (dp - delta),  delta = rowsum(do * o)
    dq = ds k / sqrt(d)                   dk = ds^T q / sqrt(d)

No (seq x seq) matrix is stored: p is recomputed block by block from q, k and the forward's
per-row log-sum-exp (`lse`, log2 units of the scores scaled by log2(e) / sqrt(d), so that
p = exp2(s2 - lse) as in the forward). The key/value kernel gives each program a block of
keys and loops over query blocks, summing dk and dv in registers; the query kernel gives each
program a block of queries and loops over key blocks, summing dq. Neither writes an element
another program writes, so no atomics. delta is one fused XLA reduction beforehand.

Ragged edges need no score mask: rows and columns past the sequence (and head-dimension
padding) load as 0, and every term they would add is a product with a zero `do`, `k` or `q`;
their outputs are not stored. Only the causal diagonal blocks are masked.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

from ._attention import key_blocks
from ._pallas import compiler_params, fori_loop, interpret_mode, load, next_pow2, span, store

__all__ = ["AttentionBwdTiling", "attention_backward"]


@dataclasses.dataclass(frozen=True)
class AttentionBwdTiling:
    """Blocks of the two backward kernels and their Triton launch parameters.

    `kv_held` keys per key/value program, stepping `q_step` queries at a time; `q_held`
    queries per query program, stepping `kv_step` keys at a time.
    """

    q_step: int = 32
    kv_held: int = 128
    q_held: int = 128
    kv_step: int = 32
    num_warps: int = 8
    num_stages: int = 3


# Swept by benchmarks/gpu/grad_sweep.py on an H100 (2026-12-05, bfloat16, seq 1024 and 4096,
# causal and not): 64-row blocks on both sides with 4 warps and 2 stages beat the 128-row
# programs of the dataclass's defaults by 8-17% at every shape (results in
# benchmarks/results/grad-sweep-h100-2026-12-05.txt). float32 is not swept yet.
_GPU_BWD = AttentionBwdTiling(64, 64, 64, 64, 4, 2)
_GPU_BWD_WIDE = AttentionBwdTiling(16, 64, 64, 16, 4, 2)  # float32 holds twice the bytes
_INTERPRET_BWD = AttentionBwdTiling(64, 64, 64, 64, 4, 1)


@dataclasses.dataclass(frozen=True)
class _Shape:
    """What both kernels know at trace time."""

    seq: int
    head_dim: int
    causal: bool
    qk_scale: float  # 1/sqrt(d) * log2(e): scores in the forward's exp2 units

    def d_mask(self, d_pad: int) -> jax.Array | None:
        return None if d_pad == self.head_dim else span(0, d_pad, 1, 2) < self.head_dim

    def rows_mask(self, block: jax.Array | int, size: int, d_pad: int) -> jax.Array | None:
        """The mask of a (size, d_pad) block of rows, None when it cannot cross an edge."""
        d_mask = self.d_mask(d_pad)
        if self.seq % size == 0:
            return d_mask
        in_seq = span(block, size, 0, 2) < self.seq
        return in_seq if d_mask is None else in_seq & d_mask

    def row_mask(self, block: jax.Array | int, size: int) -> jax.Array | None:
        """The mask of a (size,) block of per-row values."""
        return None if self.seq % size == 0 else span(block, size, 0, 1) < self.seq


def _dkdv_kernel(*refs: jax.Array, shape: _Shape, q_step: int) -> None:
    q_ref, k_ref, v_ref, do_ref, lse_ref, delta_ref, dk_ref, dv_ref = refs
    kv_held, d_pad = k_ref.shape
    kv_block = pl.program_id(0)
    kv_mask = shape.rows_mask(kv_block, kv_held, d_pad)
    k, v = load(k_ref, kv_mask), load(v_ref, kv_mask)
    k_rows = span(kv_block, kv_held, 0, 2)  # (kv_held, 1): scores here are transposed, s^T

    def step(
        i: jax.Array, carry: tuple[jax.Array, jax.Array], masked: bool
    ) -> tuple[jax.Array, jax.Array]:
        dk, dv = carry
        qs = pl.ds(pl.multiple_of(i * q_step, q_step), q_step)
        q_mask = shape.rows_mask(i, q_step, d_pad)
        q, do = load(q_ref.at[qs, :], q_mask), load(do_ref.at[qs, :], q_mask)
        lse = load(lse_ref.at[qs], shape.row_mask(i, q_step))
        delta = load(delta_ref.at[qs], shape.row_mask(i, q_step))
        s_t = lax.dot_general(k, q, (((1,), (1,)), ((), ())), preferred_element_type=jnp.float32)  # pyright: ignore[reportUnknownMemberType]
        p_t = jnp.exp2(s_t * shape.qk_scale - lse[None, :])
        if masked:
            p_t = jnp.where(span(i, q_step, 1, 2) >= k_rows, p_t, 0.0)
        dv = dv + jnp.dot(p_t.astype(do.dtype), do, preferred_element_type=jnp.float32)
        dp_t = lax.dot_general(v, do, (((1,), (1,)), ((), ())), preferred_element_type=jnp.float32)  # pyright: ignore[reportUnknownMemberType]
        ds_t = p_t * (dp_t - delta[None, :])
        dk = dk + jnp.dot(ds_t.astype(q.dtype), q, preferred_element_type=jnp.float32)
        return dk, dv

    num_q = pl.cdiv(shape.seq, q_step)
    zeros = jnp.zeros((kv_held, d_pad), jnp.float32)
    carry, below = (zeros, zeros), 0
    if shape.causal:
        # Query blocks above this key block see none of it; those crossing its diagonal part
        # see some of it (masked); those below see all of it.
        first = lax.div(kv_block * kv_held, q_step)
        below = jnp.minimum(lax.div((kv_block + 1) * kv_held + q_step - 1, q_step), num_q)
        carry = fori_loop(first, below, functools.partial(step, masked=True), carry)
    dk, dv = fori_loop(below, num_q, functools.partial(step, masked=False), carry)
    scale = shape.qk_scale / math.log2(math.e)
    store(dk_ref, (dk * scale).astype(dk_ref.dtype), kv_mask)
    store(dv_ref, dv.astype(dv_ref.dtype), kv_mask)


def _dq_kernel(*refs: jax.Array, shape: _Shape, kv_step: int) -> None:
    q_ref, k_ref, v_ref, do_ref, lse_ref, delta_ref, dq_ref = refs
    q_held, d_pad = q_ref.shape
    # Programs run in reverse query order, as in the forward: under a causal mask the long
    # rows start first.
    q_block = pl.cdiv(shape.seq, q_held) - 1 - pl.program_id(0)
    q_mask = shape.rows_mask(q_block, q_held, d_pad)
    q, do = load(q_ref, q_mask), load(do_ref, q_mask)
    lse = load(lse_ref, shape.row_mask(q_block, q_held))[:, None]
    delta = load(delta_ref, shape.row_mask(q_block, q_held))[:, None]
    q_rows = span(q_block, q_held, 0, 2)

    def step(j: jax.Array, dq: jax.Array, masked: bool) -> jax.Array:
        ks = pl.ds(pl.multiple_of(j * kv_step, kv_step), kv_step)
        kv_mask = shape.rows_mask(j, kv_step, d_pad)
        k, v = load(k_ref.at[ks, :], kv_mask), load(v_ref.at[ks, :], kv_mask)
        s = lax.dot_general(q, k, (((1,), (1,)), ((), ())), preferred_element_type=jnp.float32)  # pyright: ignore[reportUnknownMemberType]
        p = jnp.exp2(s * shape.qk_scale - lse)
        if masked:
            p = jnp.where(q_rows >= span(j, kv_step, 1, 2), p, 0.0)
        dp = lax.dot_general(do, v, (((1,), (1,)), ((), ())), preferred_element_type=jnp.float32)  # pyright: ignore[reportUnknownMemberType]
        ds = p * (dp - delta)
        return dq + jnp.dot(ds.astype(k.dtype), k, preferred_element_type=jnp.float32)

    unmasked, end = key_blocks(q_block, q_held, kv_step, shape.seq, shape.causal)
    dq = jnp.zeros((q_held, d_pad), jnp.float32)
    if not shape.causal:
        # A ragged tail needs no mask here (see the module's docstring): one loop.
        dq = fori_loop(0, end, functools.partial(step, masked=False), dq)
    else:
        dq = fori_loop(0, unmasked, functools.partial(step, masked=False), dq)
        dq = fori_loop(unmasked, end, functools.partial(step, masked=True), dq)
    scale = shape.qk_scale / math.log2(math.e)
    store(dq_ref, (dq * scale).astype(dq_ref.dtype), q_mask)


@dataclasses.dataclass(frozen=True)
class _Specs:
    """The BlockSpecs of the backward grids, (row block, batch, head): blocks of rows of q, k,
    v, do (or whole padded sequences of them) and of the per-row lse and delta."""

    seq: int
    d_pad: int
    seq_pad: int

    def block(self, size: int, reverse: bool = False) -> pl.BlockSpec:
        last = pl.cdiv(self.seq, size) - 1

        def index(i: jax.Array, b: jax.Array, h: jax.Array) -> tuple[jax.Array | int, ...]:
            return b, h, last - i if reverse else i, 0

        return pl.BlockSpec((None, None, size, self.d_pad), index)

    def stats_block(self, size: int) -> pl.BlockSpec:
        """Per-row values of a block of rows, in reverse order (the query kernel's)."""
        last = pl.cdiv(self.seq, size) - 1

        def index(i: jax.Array, b: jax.Array, h: jax.Array) -> tuple[jax.Array | int, ...]:
            return b, h, last - i

        return pl.BlockSpec((None, None, size), index)

    def all_rows(self) -> pl.BlockSpec:
        def index(i: jax.Array, b: jax.Array, h: jax.Array) -> tuple[jax.Array | int, ...]:
            return b, h, 0, 0

        return pl.BlockSpec((None, None, self.seq_pad, self.d_pad), index)

    def all_stats(self) -> pl.BlockSpec:
        def index(i: jax.Array, b: jax.Array, h: jax.Array) -> tuple[jax.Array | int, ...]:
            return b, h, 0

        return pl.BlockSpec((None, None, self.seq_pad), index)


def _pick(q: jax.Array, tiling: AttentionBwdTiling | None) -> AttentionBwdTiling:
    """The tiling to run: the given one, else the backend's and dtype's; no block longer than
    the sequence (padded to a power of two, at least 16)."""
    t = tiling
    if t is None:
        if interpret_mode():
            t = _INTERPRET_BWD
        else:
            t = _GPU_BWD if q.dtype.itemsize <= 2 else _GPU_BWD_WIDE
    fit = max(16, next_pow2(q.shape[2]))
    return dataclasses.replace(
        t,
        q_step=min(t.q_step, fit),
        kv_held=min(t.kv_held, fit),
        q_held=min(t.q_held, fit),
        kv_step=min(t.kv_step, fit),
    )


def attention_backward(
    q: jax.Array,
    k: jax.Array,
    v: jax.Array,
    saved: tuple[jax.Array, jax.Array],
    g: jax.Array,
    *,
    causal: bool,
    tiling: AttentionBwdTiling | None = None,
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """`(dq, dk, dv)` of attention for the cotangent `g`; `saved`: the forward's `(out, lse)`
    (`attention_with_lse`)."""
    out, lse = saved
    batch, heads, seq, head_dim = q.shape
    t = _pick(q, tiling)
    q_step, kv_held, q_held, kv_step = t.q_step, t.kv_held, t.q_held, t.kv_step
    d_pad = max(16, next_pow2(head_dim))
    g = g.astype(q.dtype)
    delta = jnp.sum(out.astype(jnp.float32) * g.astype(jnp.float32), axis=-1)
    shape = _Shape(seq, head_dim, causal, math.log2(math.e) / math.sqrt(head_dim))
    interpret = interpret_mode()
    params = compiler_params(t.num_warps, t.num_stages)

    # Whole sequences, padded to whole blocks: the interpreter clamps a slice that crosses an
    # array's end (shifting it), so the blocks it slices must lie inside the padded block.
    widest = max(q_step, kv_held, q_held, kv_step)
    specs = _Specs(seq, d_pad, pl.cdiv(seq, widest) * widest)
    all_rows, all_stats, block = specs.all_rows(), specs.all_stats(), specs.block
    like_q = jax.ShapeDtypeStruct(q.shape, q.dtype)
    dk, dv = pl.pallas_call(
        functools.partial(_dkdv_kernel, shape=shape, q_step=q_step),
        out_shape=(like_q, like_q),
        grid=(pl.cdiv(seq, kv_held), batch, heads),
        in_specs=[all_rows, block(kv_held), block(kv_held), all_rows, all_stats, all_stats],
        out_specs=(block(kv_held), block(kv_held)),
        interpret=interpret,
        compiler_params=params,
        name="std_attention_bwd_dkdv",
    )(q, k, v, g, lse, delta)
    dq = pl.pallas_call(
        functools.partial(_dq_kernel, shape=shape, kv_step=kv_step),
        out_shape=like_q,
        grid=(pl.cdiv(seq, q_held), batch, heads),
        in_specs=[
            block(q_held, reverse=True),
            all_rows,
            all_rows,
            block(q_held, reverse=True),
            specs.stats_block(q_held),
            specs.stats_block(q_held),
        ],
        out_specs=block(q_held, reverse=True),
        interpret=interpret,
        compiler_params=params,
        name="std_attention_bwd_dq",
    )(q, k, v, g, lse, delta)
    return dq, dk, dv
