"""tile-runner: author, discover, check and time JAX kernels; `python -m tile_runner` runs them.

    import tile_runner as tile

    @tile.kernel(
        "mylib/scale",
        inputs=lambda case, key: (tile.normal(key, case.shape, case.dtype),),
        reference=lambda x: x * 2,
        bench=tile.axes(shape=[(1024, 1024)], dtype=["float32", "bfloat16"]),
    )
    def scale(x):
        return x * 2

Names are loaded on first use so that `python -m tile_runner` can protect its protocol stream
before jax (or anything else) is imported.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tile_runner._api import (
        Case,
        KernelDef,
        cases,
        get_kernel,
        kernel,
        op_of,
        registry,
        skip,
    )
    from tile_runner._axes import Axes, AxisValue, axes, format_value, parse_value
    from tile_runner._check import DEFAULT_TOLERANCES, check
    from tile_runner._compile import bind_static
    from tile_runner._configure import Configured, configure
    from tile_runner._cpu import cpu_model
    from tile_runner._device import device_infos
    from tile_runner._discover import PLUGIN_GROUP, discover
    from tile_runner._errors import DefinitionError, RunnerError, Skip, Unsupported
    from tile_runner._impl_choice import ChosenImpl, choose_impl
    from tile_runner._inputs import case_key, data, normal, randint, uniform
    from tile_runner._main import main
    from tile_runner._measure import Measurement, measure
    from tile_runner._modes import MODES, Mode, ModeWork, mode
    from tile_runner._peaks import builtin_peaks
    from tile_runner._plan import matches
    from tile_runner._record import recorded
    from tile_runner._tuning_index import TuningIndex
    from tile_runner._vjp import mode_kernel

__all__ = [
    # authoring
    "Axes",
    "AxisValue",
    "Case",
    "KernelDef",
    "axes",
    "kernel",
    "mode",
    "recorded",
    "skip",
    "MODES",
    "Mode",
    "ModeWork",
    "mode_kernel",
    # inputs
    "case_key",
    "data",
    "normal",
    "randint",
    "uniform",
    # registry and discovery
    "PLUGIN_GROUP",
    "cases",
    "discover",
    "format_value",
    "get_kernel",
    "matches",
    "op_of",
    "parse_value",
    "registry",
    # tunables
    "ChosenImpl",
    "Configured",
    "TuningIndex",
    "choose_impl",
    "configure",
    # measuring and checking
    "DEFAULT_TOLERANCES",
    "Measurement",
    "bind_static",
    "builtin_peaks",
    "check",
    "cpu_model",
    "device_infos",
    "measure",
    # runner
    "main",
    # errors
    "DefinitionError",
    "RunnerError",
    "Skip",
    "Unsupported",
]

_WHERE: dict[str, str] = {
    "Case": "_api",
    "KernelDef": "_api",
    "cases": "_api",
    "get_kernel": "_api",
    "kernel": "_api",
    "op_of": "_api",
    "registry": "_api",
    "skip": "_api",
    "Axes": "_axes",
    "AxisValue": "_axes",
    "axes": "_axes",
    "format_value": "_axes",
    "parse_value": "_axes",
    "DEFAULT_TOLERANCES": "_check",
    "check": "_check",
    "bind_static": "_compile",
    "Configured": "_configure",
    "configure": "_configure",
    "ChosenImpl": "_impl_choice",
    "choose_impl": "_impl_choice",
    "cpu_model": "_cpu",
    "device_infos": "_device",
    "PLUGIN_GROUP": "_discover",
    "discover": "_discover",
    "DefinitionError": "_errors",
    "RunnerError": "_errors",
    "Skip": "_errors",
    "Unsupported": "_errors",
    "case_key": "_inputs",
    "data": "_inputs",
    "normal": "_inputs",
    "randint": "_inputs",
    "uniform": "_inputs",
    "main": "_main",
    "Measurement": "_measure",
    "measure": "_measure",
    "MODES": "_modes",
    "Mode": "_modes",
    "ModeWork": "_modes",
    "mode": "_modes",
    "builtin_peaks": "_peaks",
    "matches": "_plan",
    "recorded": "_record",
    "TuningIndex": "_tuning_index",
    "mode_kernel": "_vjp",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'tile_runner' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"tile_runner.{module}"), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
