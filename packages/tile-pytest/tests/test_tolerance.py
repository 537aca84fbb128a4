"""`merged_tolerance` resolves every dtype as the runner does, config before kernel."""

from __future__ import annotations

import pytest

from tile_pytest import merged_tolerance
from tile_runner._check import resolve_tolerance

KERNEL_TOLS = [
    None,
    3e-3,
    {"float32": 1e-6},
    {"default": 5e-2},
    {"bfloat16": 4e-2, "default": 7e-4},
]
REQUESTS = [{}, {"float32": 0.1}, {"default": 0.2}, {"bfloat16": 0.3, "default": 0.4}]
DTYPES = ["float32", "bfloat16", "float16", "float64", "int32"]


@pytest.mark.parametrize("kernel", KERNEL_TOLS)
@pytest.mark.parametrize("request_tols", REQUESTS)
def test_same_tolerance_as_the_runner(
    kernel: float | dict[str, float] | None, request_tols: dict[str, float]
) -> None:
    merged = merged_tolerance(kernel, request_tols)
    for dtype in DTYPES:
        runner = resolve_tolerance(dtype, request=request_tols, kernel=kernel)
        assert resolve_tolerance(dtype, kernel=merged) == runner, (dtype, kernel, request_tols)
