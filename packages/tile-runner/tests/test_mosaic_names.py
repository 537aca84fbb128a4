"""Mosaic GPU module names by content: real MLIR modules, and jax's own Mosaic GPU module.

jax 0.11's naming (`<sym_name>_<process counter>`, kept in `mosaic_gpu.dump_basename`) lives
in jaxlib's C++; the stand-in below does what it does, so that what the runner puts in front
of it is checked on the CPU with the jax this machine has. The real one is checked on an sm90
GPU in tile-std's `test_gpu.py`.
"""

from __future__ import annotations

import importlib
import itertools
import sys
from typing import Any

import pytest
from jax._src.interpreters import mlir

from tile_runner._mosaic_names import BASENAME, name_by_content, stable_mosaic_names

ir: Any = importlib.import_module("jaxlib.mlir.ir")


def _jax_naming() -> Any:
    """What jaxlib's `get_or_set_dump_options` does to a module's name: a counter, once."""
    count = itertools.count()

    def get_or_set(module: Any) -> str:
        attributes = module.operation.attributes
        if BASENAME not in attributes:
            name = ir.StringAttr(attributes["sym_name"]).value
            attributes[BASENAME] = ir.StringAttr.get(f"{name}_{next(count)}", module.context)
        return ir.StringAttr(attributes[BASENAME]).value

    return get_or_set


def _module(body: str) -> Any:
    context = mlir.make_ir_context()
    with context, ir.Location.unknown():
        module = ir.Module.parse(f'module attributes {{sym_name = "anonymous"}} {{ {body} }}')
    return module


_KERNEL = "func.func private @f(%x: i32) -> i32 { return %x : i32 }"
_OTHER = "func.func private @g(%x: i32) -> i32 { return %x : i32 }"


def test_the_same_kernel_gets_the_same_name_however_many_came_before() -> None:
    counted = _jax_naming()
    assert [counted(_module(_KERNEL)) for _ in range(2)] == ["anonymous_0", "anonymous_1"]
    named = name_by_content(_jax_naming())
    first, second, other = (named(_module(b)) for b in (_KERNEL, _KERNEL, _OTHER))
    assert (
        first == second and first.startswith("anonymous_") and len(first) == len("anonymous_") + 16
    )
    assert other != first  # two kernels still dump to two files
    kept = _module(_KERNEL)
    kept.operation.attributes[BASENAME] = ir.StringAttr.get("chosen", kept.context)
    assert named(kept) == "chosen"  # a name already there is jax's to keep


class _Dialect:
    """Where `jax.experimental.mosaic.gpu.core` finds `get_or_set_dump_options`."""

    def __init__(self, naming: Any) -> None:
        self.get_or_set_dump_options = naming


def test_installed_once_where_mosaic_gpu_is_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    core = type(sys)("jax.experimental.mosaic.gpu.core")
    monkeypatch.delitem(sys.modules, "jax.experimental.mosaic.gpu.core", raising=False)
    assert stable_mosaic_names() is False  # not loaded: nothing to name
    monkeypatch.setitem(sys.modules, "jax.experimental.mosaic.gpu.core", core)
    core.dialect = _Dialect(None)
    assert stable_mosaic_names() is False  # a jax before 0.11 names nothing
    core.dialect = _Dialect(_jax_naming())
    assert stable_mosaic_names() is True
    installed = core.dialect.get_or_set_dump_options
    assert stable_mosaic_names() is True
    assert core.dialect.get_or_set_dump_options is installed  # not wrapped twice
    a, b = installed(_module(_KERNEL)), installed(_module(_KERNEL))
    assert a == b != "anonymous_0"
