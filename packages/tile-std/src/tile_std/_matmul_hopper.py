"""Matrix product for Hopper (sm90): a Pallas Mosaic GPU kernel with wgmma, TMA and warp roles.

The Triton-backend kernel in _matmul.py stays for other GPUs and for the CPU interpreter;
this one is what an sm90 device runs for 2-byte inputs whose shape its tile divides.

How it is laid out:

- **Persistent**: one program per SM walks the grid of output tiles (a snake through bands of
  `band` tiles, so programs that run together share A row-panels and B column-panels in L2).
- **Warp roles**: each program has three warpgroups. One only issues TMA copies of the next
  `stages` K-steps of A and B into shared memory; the other two each own half of the output
  tile (side by side along `split`) and run wgmma on the staged blocks into a float32
  accumulator held in registers.
- **Epilogue**: each compute warpgroup casts its accumulator and writes it back through shared
  memory in `epilogue`-square pieces (two slots, so one TMA store drains while the next fills).

Shared memory per program: `stages * (A block + B block)` plus the epilogue slots; the H100 and
H200 have 227 KiB. On the CPU the same kernel runs under Mosaic GPU's interpreter (slow: small
shapes only), which is how the test suite checks it.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

from ._pallas import SHARED_BYTES, first_device, sm_count

__all__ = ["HopperTiling", "hopper_fits", "hopper_matmul", "on_hopper"]

_MEMORY_WG_REGISTERS = 40  # the copy-issuing warpgroup needs few; the rest go to accumulators


@dataclass(frozen=True)
class HopperTiling:
    """One compute warpgroup's output tile (block_m x block_n), the K step, the pipeline depth,
    the axis the two warpgroups' tiles sit along (`split`), the grid walk's minor axis and band
    width, and the epilogue's square piece."""

    # The defaults are the H100 sweep's best (benchmarks/gpu/matmul_sweep.py --hopper, jax
    # 0.11.2, bf16): 175 µs at 4096^3 and 1383 µs at 8192^3 against XLA's 185 and 1515; the
    # other 128x256 program tiles were within 1%, 128x128 ones 13-30% slower.
    block_m: int = 64
    block_n: int = 256
    block_k: int = 64
    stages: int = 4
    split: str = "m"
    walk: str = "n"
    band: int = 8
    epilogue: int = 64

    @property
    def program_tile(self) -> tuple[int, int]:
        """The output tile of one program: two warpgroup tiles along `split`."""
        if self.split == "m":
            return 2 * self.block_m, self.block_n
        return self.block_m, 2 * self.block_n

    def shared_bytes(self, itemsize: int) -> int:
        pm, pn = self.program_tile
        staged = self.stages * (pm + pn) * self.block_k * itemsize
        return staged + 2 * 2 * self.epilogue * self.epilogue * itemsize


def on_hopper() -> bool:
    """True when JAX's default device is an sm90 GPU (H100, H200, H800, GH200) and this jax has
    the Mosaic GPU pieces the kernel is built from."""
    if jax.default_backend() != "gpu":
        return False
    capability = getattr(first_device(), "compute_capability", "")
    if not str(capability).startswith("9."):
        return False
    try:
        import jax.experimental.pallas.mosaic_gpu as plgpu
    except ImportError:
        return False
    return hasattr(plgpu, "emit_pipeline_warp_specialized")


def hopper_fits(m: int, n: int, k: int, dtype: Any, t: HopperTiling) -> str | None:
    """Why this kernel cannot take (m, n, k) of `dtype` with tiling t; None when it can."""
    dt = jnp.dtype(dtype)
    if dt not in (jnp.dtype(jnp.bfloat16), jnp.dtype(jnp.float16)):
        return f"{dt.name} inputs (the wgmma kernel takes bfloat16 and float16)"
    pm, pn = t.program_tile
    if m % pm or n % pn or k % t.block_k:
        return f"{m}x{n}x{k} is not a multiple of the {pm}x{pn}x{t.block_k} program tile"
    if t.block_m % 64 or t.block_n % t.epilogue or t.block_m % t.epilogue:
        return f"a {t.block_m}x{t.block_n} warpgroup tile is not in 64-row, {t.epilogue}-col steps"
    need = t.shared_bytes(dt.itemsize)
    if need > SHARED_BYTES:
        return f"{need // 1024} KiB of shared memory per program (at most {SHARED_BYTES // 1024})"
    return None


def _swizzled(cols: int, dtype: Any) -> tuple[Any, ...]:
    """Shared-memory layout transforms for a block `cols` wide: the widest swizzle that fits."""
    import jax.experimental.pallas.mosaic_gpu as plgpu

    itemsize = jnp.dtype(dtype).itemsize
    swizzle = plgpu.find_swizzle(cols * itemsize * 8)
    return plgpu.TilingTransform((8, swizzle // itemsize)), plgpu.SwizzleTransform(swizzle)


def _write_back(tile: jax.Array, slots: Any, dest: Any, piece: int) -> None:
    """Store a warpgroup's tile to global memory through two shared-memory slots, by TMA."""
    import jax.experimental.pallas.mosaic_gpu as plgpu

    rows, cols = tile.shape
    # The previous output tile's stores must have read their slots before they are refilled.
    plgpu.wait_smem_to_gmem(0, wait_read_only=True)
    pieces = itertools.product(range(rows // piece), range(cols // piece))
    for i, (r, c) in enumerate(pieces):
        slot = i % 2
        plgpu.wait_smem_to_gmem(1, wait_read_only=True)  # the store that used this slot is done
        r0, c0 = r * piece, c * piece
        slots[slot] = tile[r0 : r0 + piece, c0 : c0 + piece]
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(slots.at[slot], dest.at[r0 : r0 + piece, c0 : c0 + piece])


def _pipeline(t: HopperTiling, k: int, dtype: Any, step: Any, context: Any) -> Any:
    """The K loop: a copy warpgroup stages `stages` steps of A and B ahead of two compute
    warpgroups, which run `step` on each and keep the accumulator `context` opens."""
    import jax.experimental.pallas.mosaic_gpu as plgpu

    pm, pn = t.program_tile
    staged = _swizzled(t.block_k, dtype)

    def a_block(s: jax.Array) -> tuple[int, jax.Array]:
        return 0, s

    def b_block(s: jax.Array) -> tuple[jax.Array, int]:
        return s, 0

    return plgpu.emit_pipeline_warp_specialized(
        step,
        grid=(k // t.block_k,),
        memory_registers=_MEMORY_WG_REGISTERS,
        in_specs=[
            plgpu.BlockSpec((pm, t.block_k), a_block, transforms=staged),
            plgpu.BlockSpec((t.block_k, pn), b_block, transforms=staged),
        ],
        wg_axis="wg",
        num_compute_wgs=2,
        max_concurrent_steps=t.stages,
        compute_context=context,
    )


def _unused(*_: Any, **__: Any) -> None:
    return None


def _kernel(a_gmem: Any, b_gmem: Any, o_gmem: Any, *, t: HopperTiling) -> None:
    import jax.experimental.pallas.mosaic_gpu as plgpu

    (m, k), n = a_gmem.shape, b_gmem.shape[1]
    pm, pn = t.program_tile
    tiles = (m // pm, n // pn)
    pipeline = functools.partial(_pipeline, t, k, a_gmem.dtype)

    @functools.partial(
        pl.run_scoped,
        staging=pipeline(_unused, _unused).get_allocations(a_gmem, b_gmem),
        slots=plgpu.SMEM(
            (2, 2, t.epilogue, t.epilogue),
            o_gmem.dtype,
            transforms=_swizzled(t.epilogue, o_gmem.dtype),
        ),
        collective_axes="wg",
    )
    def _scope(staging: Any, slots: Any) -> None:
        wg = lax.axis_index("wg")
        if t.split == "m":
            own_rows, own_cols = pl.ds(wg * t.block_m, t.block_m), slice(None)
        else:
            own_rows, own_cols = slice(None), pl.ds(wg * t.block_n, t.block_n)

        def step(_: Any, a_smem: Any, b_smem: Any, acc: Any) -> Any:
            plgpu.wgmma(acc, a_smem.at[own_rows], b_smem.at[:, own_cols])  # pyright: ignore[reportUnknownMemberType]
            plgpu.wgmma_wait(0)
            return acc

        @plgpu.nd_loop((tiles[0] * tiles[1],), collective_axes="programs")
        def _per_tile(info: Any) -> None:
            (i,) = info.index
            tm, tn = plgpu.planar_snake(i, tiles, 1 if t.walk == "n" else 0, t.band)
            rows, cols = pl.ds(tm * pm, pm), pl.ds(tn * pn, pn)

            def context(run: Any) -> None:
                acc_type = plgpu.WGMMAAccumulatorRef((t.block_m, t.block_n), jnp.float32)

                @functools.partial(pl.run_scoped, acc=acc_type)
                def _accumulate(acc: Any) -> None:
                    run(acc)
                    dest = o_gmem.at[rows, cols].at[own_rows, own_cols]
                    _write_back(acc[...].astype(o_gmem.dtype), slots.at[wg], dest, t.epilogue)

            pipeline(step, context)(a_gmem.at[rows, :], b_gmem.at[:, cols], allocations=staging)

    plgpu.wait_smem_to_gmem(0, wait_read_only=True)  # every store landed before the exit


def _interpreter() -> Any:
    """Mosaic GPU's CPU interpreter (jax keeps its parameters class private)."""
    from jax._src.pallas.mosaic_gpu.interpret.params import InterpretGPUParams

    return InterpretGPUParams()


def hopper_matmul(
    a: jax.Array, b: jax.Array, t: HopperTiling, *, interpret: bool = False
) -> jax.Array:
    """a @ b with float32 accumulation on an sm90 GPU (or its interpreter); `hopper_fits`
    must have said yes for these shapes."""
    import jax.experimental.pallas.mosaic_gpu as plgpu

    (m, k), n = a.shape, b.shape[1]
    reason = hopper_fits(m, n, k, a.dtype, t)
    if reason is not None:
        raise ValueError(f"the Hopper matmul cannot take this case: {reason}")
    pm, pn = t.program_tile
    # One program per SM, never more than there are output tiles; the interpreter runs a few.
    sms = 4 if interpret else sm_count()
    programs = min(sms, (m // pm) * (n // pn))
    call = plgpu.kernel(
        functools.partial(_kernel, t=t),
        out_type=jax.ShapeDtypeStruct((m, n), a.dtype),
        grid=(programs,),
        grid_names=("programs",),
        num_threads=3,
        thread_name="wg",
        compiler_params=plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup),
        # Only when asked: a jax whose kernel() predates the interpreter takes no such argument.
        **({"interpret": _interpreter()} if interpret else {}),
    )
    return call(a, b)
