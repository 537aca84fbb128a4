"""Kernels as implementations of one op (`@tile.kernel(op=..., impl=..., baseline=...)`):
what registration accepts and refuses, and which implementation is the op's baseline."""

from __future__ import annotations

from typing import Any

import pytest

import tile_runner as tile


def _inputs(case: Any, key: Any) -> tuple[Any, ...]:
    return (tile.normal(key, (4,), "float32"),)


def _fn(x: Any) -> Any:
    return x


def test_the_first_registered_implementation_is_the_baseline_unless_one_is_marked() -> None:
    tile.kernel("t_ops/a_pallas", inputs=_inputs, op="t_ops.first", impl="pallas")(_fn)
    tile.kernel("t_ops/a_jnp", inputs=_inputs, op="t_ops.first")(_fn)
    first, second = tile.op_of("t_ops/a_pallas"), tile.op_of("t_ops/a_jnp")
    assert first is not None and (first.name, first.impl, first.baseline) == (
        "t_ops.first", "pallas", True,
    )  # fmt: skip
    # `impl` defaults to the kernel's name after its last `/`.
    assert second is not None and (second.impl, second.baseline) == ("a_jnp", False)

    tile.kernel("t_ops/b_pallas", inputs=_inputs, op="t_ops.marked", impl="pallas")(_fn)
    tile.kernel("t_ops/b_jnp", inputs=_inputs, op="t_ops.marked", impl="jnp", baseline=True)(_fn)
    marked = [tile.op_of(k) for k in ("t_ops/b_pallas", "t_ops/b_jnp")]
    assert [o.baseline for o in marked if o is not None] == [False, True]
    assert tile.op_of(tile.get_kernel("t_ops/b_jnp")) == marked[1]


def test_a_kernel_of_no_op_has_none() -> None:
    tile.kernel("t_ops/plain", inputs=_inputs)(_fn)
    assert tile.op_of("t_ops/plain") is None
    assert tile.get_kernel("t_ops/plain").op is None


def test_registration_refuses_what_a_table_could_not_tell_apart() -> None:
    tile.kernel("t_ops/c_one", inputs=_inputs, op="t_ops.clash", impl="x", baseline=True)(_fn)
    with pytest.raises(tile.DefinitionError, match=r"both implement op `t_ops\.clash` as `x`"):
        tile.kernel("t_ops/c_two", inputs=_inputs, op="t_ops.clash", impl="x")(_fn)
    with pytest.raises(
        tile.DefinitionError, match=r"both marked the baseline of op `t_ops\.clash`"
    ):
        tile.kernel("t_ops/c_three", inputs=_inputs, op="t_ops.clash", impl="y", baseline=True)(_fn)
    # Registering the same kernel again (a module imported twice) is no clash with itself.
    tile.kernel("t_ops/c_one", inputs=_inputs, op="t_ops.clash", impl="x", baseline=True)(_fn)


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"impl": "jnp"}, "`impl` and `baseline` need `op`"),
        ({"baseline": True}, "`impl` and `baseline` need `op`"),
        ({"op": ""}, "`op` must be a non-empty string"),
        ({"op": "norm", "impl": "a,b"}, "`impl` must be a non-empty string"),
        ({"op": 3}, "`op` must be a non-empty string"),
        ({"op": "norm", "baseline": "yes"}, "`baseline` must be True or False"),
    ],
)
def test_bad_op_declarations_are_refused_with_what_to_write(
    given: dict[str, Any], message: str
) -> None:
    with pytest.raises(tile.DefinitionError, match=message):
        tile.kernel("t_ops/bad", inputs=_inputs, **given)
