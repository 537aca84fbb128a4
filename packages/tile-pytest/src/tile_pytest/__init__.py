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
is the `pytest11` entry point `tile`. pytest imports this package in every session, and most
sessions never touch jax: its modules load jax, pydantic and tile's other packages only when a
test first uses them.
"""

from __future__ import annotations

from tile_pytest._bench import BenchFixture
from tile_pytest._errors import TileInconclusiveWarning, TilePytestError
from tile_pytest._kernel import KernelCase, merged_tolerance
from tile_pytest._record import CaseName

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
