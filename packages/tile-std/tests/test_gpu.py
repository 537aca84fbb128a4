"""On a GPU: every registered test case through the runner's inputs and check (Triton lowering)."""

from __future__ import annotations

import jax
import pytest

import tile_runner as tile
import tile_std

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
