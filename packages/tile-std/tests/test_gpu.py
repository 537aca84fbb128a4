"""On a GPU: every registered test case through the runner's inputs and check (Triton lowering)."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import pytest

import tile_runner as tile
import tile_std
import tile_std._tunables as tile_std_tunables
from tile_std._matmul_hopper import on_hopper

from .conftest import rel_l2

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(jax.default_backend() != "gpu", reason="needs a GPU (Pallas Triton)"),
    # jax 0.11 warns at every Triton lowering; the kernels target Triton on purpose.
    pytest.mark.filterwarnings("ignore:The Pallas Triton backend is deprecated:DeprecationWarning"),
]


def _gpu_cases() -> list[tuple[str, tile.Case]]:
    return [(n, c) for n in tile_std.KERNELS for c in tile.cases(n, "test", backend="gpu")]


@pytest.mark.parametrize(("name", "case"), _gpu_cases(), ids=lambda v: getattr(v, "id", None))
def test_gpu_case_matches_reference(name: str, case: tile.Case):
    kdef = tile.get_kernel(name)
    assert kdef.reference is not None, name
    args = kdef.inputs(case, jax.random.key(0))
    result = tile.check(kdef.fn, kdef.reference, *args, tol=kdef.tol)
    assert result.passed, f"{case.id}: {result.message}"


def _gradient_cases() -> list[tuple[str, tile.Case]]:
    pallas = ("std/softmax", "std/rmsnorm", "std/layernorm", "std/attention")
    return [
        (n, tile.Case(c.kernel, c.params, mode="bwd"))
        for n in pallas
        for c in tile.cases(n, "test", backend="gpu")
    ]


@pytest.mark.parametrize(("name", "case"), _gradient_cases(), ids=lambda v: getattr(v, "id", None))
def test_gpu_pallas_backward_matches_autodiff_of_the_reference(name: str, case: tile.Case):
    # As `tile test --mode bwd` checks it: the kernel's VJP on its own residuals against the
    # VJP of the reference on the float32-upcast inputs, per input.
    kdef = tile.get_kernel(name)
    run = tile.mode_kernel(kdef, kdef.fn, "bwd")
    assert run.check_reference is not None, name
    args = run.inputs(case, jax.random.key(0))
    result = tile.check(run.fn, run.check_reference, *args, tol=kdef.tol, gradients=True)
    assert result.passed, f"{case.id}: {result.message}"


_HOPPER_ONLY = pytest.mark.skipif(not on_hopper(), reason="needs an sm90 GPU (wgmma)")


@_HOPPER_ONLY
@pytest.mark.parametrize("block", ["wgmma:64x256x64", "wgmma:128x128x64"])
@pytest.mark.parametrize("stages", [3, 4])
def test_hopper_matmul_matches_reference_on_sm90(block: str, stages: int):
    # 512x768 is 4x3 program tiles of 128x256 for 132 programs: most programs idle, some walk
    # one tile; K of 1024 runs the pipeline round several times.
    ka, kb = jax.random.split(jax.random.key(0))
    a = jax.random.normal(ka, (512, 1024), jnp.bfloat16)
    b = jax.random.normal(kb, (1024, 768), jnp.bfloat16)
    out = tile_std_tunables.matmul_tuned(a, b, block=block, num_stages=stages)
    ref = tile_std.matmul_ref(a.astype(jnp.float32), b.astype(jnp.float32))
    err = rel_l2(out, ref)
    assert err < 1e-2, f"{block} s{stages}: relative error {err:.3g}"


def _matmul_hlo(a: jax.Array, b: jax.Array) -> str:
    return jax.jit(tile_std.matmul).lower(a, b).as_text()  # pyright: ignore[reportUnknownMemberType]


@_HOPPER_ONLY
def test_default_matmul_on_sm90_is_the_mosaic_gpu_kernel():
    a = jnp.ones((1024, 512), jnp.bfloat16)
    b = jnp.ones((512, 1024), jnp.bfloat16)
    text = _matmul_hlo(a, b)
    assert "mosaic_gpu" in text, text[:2000]
    ragged = jnp.ones((1000, 512), jnp.bfloat16)  # not in 128-row program tiles: Triton's
    assert "mosaic_gpu" not in _matmul_hlo(ragged, b)


@_HOPPER_ONLY
def test_the_hopper_kernel_lowers_to_one_program_however_many_came_before():
    # jax 0.11 puts a process counter in each Mosaic GPU module it lowers; the runner names
    # them by content instead, so that JAX's persistent cache finds the kernel again.
    from tile_runner._mosaic_names import stable_mosaic_names

    a = jnp.ones((1024, 512), jnp.bfloat16)
    b = jnp.ones((512, 1024), jnp.bfloat16)

    def lowered() -> str:
        def fresh(x: jax.Array, y: jax.Array) -> jax.Array:  # a new function: lowered anew
            return tile_std.matmul(x, y)

        return jax.jit(fresh).lower(a, b).as_text()  # pyright: ignore[reportUnknownMemberType]

    import jax.experimental.mosaic.gpu.core as mosaic_core

    lowered()  # Mosaic GPU is loaded now
    naming = getattr(getattr(mosaic_core, "dialect", None), "get_or_set_dump_options", None)
    if naming is None:
        pytest.skip("this jax keeps no dump name in a Mosaic GPU module")
    if not getattr(naming, "_tile_names_by_content", False):  # not yet put right here
        assert lowered() != lowered()  # the counter moved between two lowerings
    assert stable_mosaic_names()
    named = [lowered(), lowered()]
    assert named[0] == named[1]
    assert re.search(r"anonymous_[0-9a-f]{16}", named[0]), "no name by content in the payload"
