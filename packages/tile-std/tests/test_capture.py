"""A model written with tile-std's public functions gives its calls as `std/...` cases at the
model's shapes when `--from` traces it (`tile.recorded` on each entry point)."""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

import jax
import jax.numpy as jnp
import pytest

import tile_std
from tile_runner._capture import capture


def _block(x: Any, w: Any, b: Any) -> Any:
    scores = tile_std.softmax(tile_std.matmul(tile_std.layernorm(x, w, b), x.T))
    return tile_std.add(tile_std.scale(scores), tile_std.copy(scores))


@pytest.fixture
def model_module(monkeypatch: pytest.MonkeyPatch) -> str:
    module = ModuleType("fx_std_model")
    f32 = jnp.float32

    def example() -> tuple[Any, ...]:
        shapes = ((24, 40), (40,), (40,))
        return _block, tuple(jax.ShapeDtypeStruct(s, f32) for s in shapes)

    module.example = example  # pyright: ignore[reportAttributeAccessIssue]
    monkeypatch.setitem(sys.modules, "fx_std_model", module)
    return "fx_std_model:example"


def test_each_tile_std_call_is_a_case_at_the_models_shapes(model_module: str) -> None:
    cases = capture(model_module, "cpu").cases
    assert [(c.kernel, c.params) for c in cases] == [
        ("std/layernorm", {"shape": "24x40", "dtype": "float32"}),
        ("std/matmul", {"shape": "24x24x40", "dtype": "float32"}),
        ("std/softmax", {"shape": "24x24", "dtype": "float32"}),
        ("std/scale", {"shape": "24x24", "dtype": "float32"}),
        ("std/copy", {"shape": "24x24", "dtype": "float32"}),
        ("std/add", {"shape": "24x24", "dtype": "float32"}),
    ]
    assert {c.captured for c in cases} == {model_module}
