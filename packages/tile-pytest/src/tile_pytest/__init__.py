"""tile-pytest: check a kernel's cases and benchmark JAX code inside pytest, the tile way.

    import pytest
    import mylib.kernels  # registers the kernels with @tile.kernel

    @pytest.mark.tile_kernel("mylib/softmax")  # one test per case, ids = case ids
    def test_softmax(tile_case):
        tile_case.check()  # kernel vs reference on the case's seeded inputs

    def test_softmax_speed(tile_bench):
        tile_bench(mylib.kernels.softmax, x)  # adaptive sampling; a Measurement

`pytest --tile-save DIR` writes the session as a tile run directory; `pytest --tile-compare
BASELINE` fails a benchmark that regressed against it (tile compare's verdicts). The plugin
is the `pytest11` entry point `tile`. Names load on first use: pytest imports this package in
every session, and most sessions never touch jax.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tile_pytest._bench import BenchFixture
    from tile_pytest._errors import TilePytestError
    from tile_pytest._kernel import KernelCase, merged_tolerance
    from tile_pytest._record import CaseName
    from tile_pytest._verdicts import TileInconclusiveWarning

__all__ = [
    # fixtures' values
    "BenchFixture",
    "CaseName",
    "KernelCase",
    # helpers
    "merged_tolerance",
    # errors and warnings
    "TileInconclusiveWarning",
    "TilePytestError",
]

_WHERE: dict[str, str] = {
    "BenchFixture": "_bench",
    "CaseName": "_record",
    "KernelCase": "_kernel",
    "merged_tolerance": "_kernel",
    "TileInconclusiveWarning": "_verdicts",
    "TilePytestError": "_errors",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'tile_pytest' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"tile_pytest.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
