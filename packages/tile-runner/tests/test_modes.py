"""Modes on the authoring API: declarations, case ids, plans, and the gradient check."""

from __future__ import annotations

import pickle
from typing import Any, cast

import jax
import jax.numpy as jnp
import pytest

import tile_runner as tile
from tile_runner._check import compare, resolve_tolerance
from tile_runner._jaxapi import jit
from tile_runner._plan import make_plan
from tile_runner._vjp import grad_label, mode_kernel


def _inputs(case: Any, key: Any) -> tuple[Any, ...]:
    kx, kw = jax.random.split(key)
    return tile.normal(kx, case.shape, "float32"), tile.normal(kw, case.shape, "float32")


def _f(x: Any, w: Any) -> Any:
    return jnp.sin(x) * w


def test_fwd_ids_are_unchanged_and_other_modes_end_the_id() -> None:
    fwd = tile.Case("t_modes/k", {"shape": (8,), "dtype": "float32"})
    bwd = tile.Case("t_modes/k", {"shape": (8,), "dtype": "float32"}, mode="bwd")
    assert fwd.id == "t_modes/k[shape=8,dtype=float32]"
    assert bwd.id == "t_modes/k[shape=8,dtype=float32,mode=bwd]"
    assert bwd.base_id == fwd.id  # the same inputs in every mode
    assert bwd.str_params == {"shape": "8", "dtype": "float32", "mode": "bwd"}
    assert "mode" not in bwd.params and bwd != fwd
    assert pickle.loads(pickle.dumps(bwd)).id == bwd.id
    assert tile.Case("t_modes/none", {}, mode="fwd_bwd").id == "t_modes/none[mode=fwd_bwd]"


def test_declarations_are_checked() -> None:
    with pytest.raises(tile.DefinitionError, match="unknown mode 'sideways'"):
        tile.kernel("t_modes/bad1", inputs=_inputs, modes=("bwd", "sideways"))(_f)
    with pytest.raises(tile.DefinitionError, match="list of mode names"):
        tile.kernel("t_modes/bad2", inputs=_inputs, modes="bwd")(_f)
    with pytest.raises(tile.DefinitionError, match="axis named `mode`"):
        tile.kernel("t_modes/bad3", inputs=_inputs, bench=tile.axes(mode=[1]), modes=["bwd"])(_f)
    with pytest.raises(tile.DefinitionError, match="`bytes=`/`flops=` on the kernel"):
        tile.kernel("t_modes/bad4", inputs=_inputs, modes={"fwd": tile.mode(bytes=len)})(_f)
    tile.kernel(
        "t_modes/ok",
        inputs=_inputs,
        bench=tile.axes(shape=[(8,)], mode=[1]),  # an axis `mode` is fine with fwd alone
    )(_f)
    assert list(tile.get_kernel("t_modes/ok").modes) == ["fwd"]


def test_plans_expand_modes_in_order_and_filter_on_the_mode_id() -> None:
    tile.kernel(
        "t_modes/grad",
        inputs=_inputs,
        reference=_f,
        bench=tile.axes(shape=[(8,), (16,)]),
        modes={"bwd": tile.mode(flops=lambda case: 3.0 * case.size), "fwd_bwd": None},
    )(_f)
    tile.kernel("t_modes/plain", inputs=_inputs, bench=tile.axes(shape=[(8,)]))(_f)

    def ids(**kw: Any) -> list[str]:
        return [c.id for _, c in make_plan("bench", "cpu", kernels=["t_modes/[gp]*"], **kw).cases]

    assert ids() == ["t_modes/grad[shape=8]", "t_modes/grad[shape=16]", "t_modes/plain[shape=8]"]
    assert ids(modes=["all"], filters=["shape=8"]) == [
        "t_modes/grad[shape=8]",
        "t_modes/grad[shape=8,mode=bwd]",
        "t_modes/grad[shape=8,mode=fwd_bwd]",
        "t_modes/plain[shape=8]",
    ]
    # An undeclared mode is planned, and fails when its case is reached (see tests/test_modes.py).
    assert ids(modes=["bwd"], filters=["mode=bwd"]) == [
        "t_modes/grad[shape=8,mode=bwd]",
        "t_modes/grad[shape=16,mode=bwd]",
        "t_modes/plain[shape=8,mode=bwd]",
    ]
    # Exact ids (a campaign's units, a restarted runner) plan the modes they name.
    exact = ["t_modes/grad[shape=16,mode=fwd_bwd]", "t_modes/grad[shape=8]"]
    assert ids(case_ids=exact) == ["t_modes/grad[shape=8]", "t_modes/grad[shape=16,mode=fwd_bwd]"]
    plain = tile.get_kernel("t_modes/plain")
    with pytest.raises(tile.DefinitionError, match="does not declare mode `bwd`"):
        mode_kernel(plain, plain.fn, "bwd")
    grad = tile.get_kernel("t_modes/grad")
    assert mode_kernel(grad, grad.fn, "fwd") is grad
    bwd = mode_kernel(grad, grad.fn, "bwd")
    assert bwd.flops is not None and bwd.flops(tile.Case("t_modes/grad", {"shape": (8,)})) == 24
    assert bwd.bytes is None  # XLA's estimate of the backward, not the forward's bytes


def test_bwd_program_runs_on_residuals_and_matches_the_reference_vjp() -> None:
    tile.kernel("t_modes/sin", inputs=_inputs, reference=_f, modes=["bwd"])(_f)
    kernel = tile.get_kernel("t_modes/sin")
    bwd = mode_kernel(kernel, kernel.fn, "bwd")
    case = tile.Case("t_modes/sin", {"shape": (32,)}, mode="bwd")
    args = bwd.inputs(case, jax.random.key(0))
    x, w, ct, mine, theirs = args
    assert mine and theirs  # both sides' residuals were made with the inputs
    assert bwd.check_reference is not None and bwd.reference is not None
    grads = cast("dict[str, Any]", jit(bwd.fn)(*args))
    expected: Any = bwd.check_reference(*args)
    timed_ref = cast("dict[str, Any]", jit(bwd.reference)(*args))
    want_x = ct * jnp.cos(x) * w
    assert set(grads) == {"x", "w"}
    outs: list[Any] = [grads, expected, timed_ref]
    for out in outs:
        assert jnp.allclose(out["x"], want_x, rtol=1e-5)
        assert jnp.allclose(out["w"], ct * jnp.sin(x), rtol=1e-5)


def test_a_gradient_failure_names_its_input_and_worst_index() -> None:
    good = {"x": jnp.zeros(5), "w": jnp.ones(5)}
    bad = {"x": jnp.zeros(5), "w": jnp.ones(5).at[3].set(4.0)}
    check = compare(bad, good, resolve_tolerance, label=grad_label)
    assert not check.passed and check.worst_index == [3]
    assert check.message is not None and check.message.startswith("gradient of input `w`: ")
    nan = {"x": jnp.zeros(5).at[1].set(jnp.nan), "w": jnp.ones(5)}
    check = compare(nan, good, resolve_tolerance, label=grad_label)
    assert check.message is not None and "gradient of input `x`: NaN/Inf" in check.message
    assert grad_label("['grad']['q']") == "gradient of input `q`"
    assert grad_label("['value']") == "output"
