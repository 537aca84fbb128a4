"""Integration with tile_runner: importing tile_std registers every kernel with its declarations."""

from __future__ import annotations

from typing import cast

import jax
import pytest

import tile_runner as tile
import tile_std


def test_every_kernel_is_registered_with_work_and_reference():
    registry = tile.registry()
    for name in tile_std.KERNELS:
        kdef = registry[name]
        assert kdef.reference is not None, name
        assert kdef.bytes is not None and kdef.flops is not None, name
        assert kdef.description, name
        for suite in ("bench", "test"):
            for backend in ("cpu", "gpu"):
                assert tile.cases(name, suite, backend=backend), (name, suite, backend)


def _bytes(name: str, case: tile.Case) -> float:
    formula = tile.get_kernel(name).bytes
    assert formula is not None, name
    return formula(case)


def _flops(name: str, case: tile.Case) -> float:
    formula = tile.get_kernel(name).flops
    assert formula is not None, name
    return formula(case)


def test_gpu_bench_cases_declare_the_expected_work():
    by_id = {c.id: c for name in tile_std.KERNELS for c in tile.cases(name, "bench", backend="gpu")}
    copy = by_id["std/copy[shape=268435456,dtype=float32]"]
    assert _bytes("std/copy", copy) == 2 * 2**30  # 1 GiB read + 1 GiB written
    mm = by_id["std/matmul[shape=8192x8192x8192,dtype=bfloat16]"]
    assert _flops("std/matmul", mm) == 2 * 8192**3
    assert _bytes("std/matmul", mm) == 3 * 8192 * 8192 * 2
    attn = by_id["std/attention[shape=4x32x4096x128,dtype=bfloat16,causal=true]"]
    assert _flops("std/attention", attn) == 2 * 4 * 32 * 4096 * 4096 * 128
    ln = by_id["std/layernorm[shape=16384x8192,dtype=float32]"]
    assert _bytes("std/layernorm", ln) == (2 * 16384 * 8192 + 2 * 8192) * 4


def test_cpu_shapes_are_small():
    # CPU runs interpret Pallas; realistic GPU shapes there would take minutes per case.
    for name in tile_std.KERNELS:
        kdef = tile.get_kernel(name)
        assert kdef.bytes is not None and kdef.flops is not None
        for suite in ("bench", "test"):
            for case in tile.cases(name, suite, backend="cpu"):
                assert kdef.bytes(case) <= 32 * 2**20, case.id
                assert kdef.flops(case) <= 2**30, case.id


@pytest.mark.parametrize("name", ["std/scale", "std/layernorm", "std/attention"])
def test_runner_inputs_and_check_pass_on_cpu(name: str):
    kdef = tile.get_kernel(name)
    assert kdef.reference is not None, name
    case = tile.cases(name, "test", backend="cpu")[-1]
    args = kdef.inputs(case, jax.random.key(0))
    result = tile.check(kdef.fn, kdef.reference, *args, tol=kdef.tol)
    assert result.passed, result.message
    assert result.rel_l2_err is not None and result.rel_l2_err > 0  # bfloat16 rounding is seen


def test_row_backwards_declare_their_bytes():
    # A Pallas call hides its traffic from XLA's cost analysis: the row kernels' gradient modes
    # declare it (read x and the cotangent, write dx; fwd_bwd adds the forward's read and write).
    case = tile.cases("std/layernorm", "bench", backend="gpu")[0]
    for name in ("std/softmax", "std/rmsnorm", "std/layernorm"):
        modes = tile.get_kernel(name).modes
        for mode, elements in (("bwd", 3), ("fwd_bwd", 5)):
            formula = modes[cast("tile.Mode", mode)].bytes
            assert formula is not None, (name, mode)
            assert formula(case) == elements * case.size * case.itemsize, (name, mode)


def test_attention_backwards_declare_their_bytes():
    # The flash backward is two Pallas calls, so XLA cannot count its traffic: reading q, k,
    # v, o and the cotangent and writing dq, dk, dv is 8 tensors, twice the forward's 4.
    case = tile.cases("std/attention", "bench", backend="gpu")[0]
    b, h, s, d = case.shape
    one = b * h * s * d * case.itemsize
    modes = tile.get_kernel("std/attention").modes
    for mode, tensors in (("bwd", 8), ("fwd_bwd", 12)):
        formula = modes[cast("tile.Mode", mode)].bytes
        assert formula is not None, mode
        assert formula(case) == tensors * one, mode


def test_layernorm_reads_its_parameters_late_only_on_the_block_grid():
    """`param_reads="late"` is the block grid's choice: a persistent grid reads the vectors
    once per program, before its loop, so the tune never times that pair."""
    tunables = tile.get_kernel("std/layernorm").tunables
    assert tunables is not None
    case = tile.cases("std/layernorm", "bench", backend="gpu")[-1]
    late = {**tunables.default, "param_reads": "late"}
    assert tunables.ruled_out(case, late) is None
    persistent_late = {**late, "block_rows": 1, "programs_per_sm": 2}
    reason = tunables.ruled_out(case, persistent_late)
    assert reason is not None and "persistent grid" in reason
    assert tunables.ruled_out(case, {**persistent_late, "param_reads": "early"}) is None
