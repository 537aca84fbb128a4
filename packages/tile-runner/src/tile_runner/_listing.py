"""`tile list`'s view of each selected kernel: the modes it declares, its tunables (values and
default) and its test suite's case ids, beside the bench cases the plan already lists."""

from __future__ import annotations

from collections.abc import Sequence

from tile_protocol import KernelInfo, RunRequest, TunableInfo
from tile_runner._api import KernelDef
from tile_runner._axes import format_value
from tile_runner._plan import make_plan

__all__ = ["kernel_infos"]


def _tunables(definition: KernelDef) -> list[TunableInfo]:
    declared = definition.tunables
    if declared is None:
        return []
    return [
        TunableInfo(
            name=name,
            values=[format_value(v) for v in declared.axes.values(name)],
            default=format_value(declared.default[name]),
        )
        for name in declared.axes.names
    ]


def _tuned_modes(definition: KernelDef) -> list[str] | None:
    """The modes the tunables change, where that is not every mode the kernel has."""
    declared = definition.tunables
    if declared is None or declared.modes is None:
        return None
    return [m for m in definition.modes if m in declared.modes]


def kernel_infos(bench: Sequence[KernelDef], backend: str, request: RunRequest) -> list[KernelInfo]:
    """One entry per kernel with a selected bench or test case, in registry order; the test
    cases are planned with the request's selection (their failures are the bench plan's to
    say; exact case ids keep the test cases they name)."""
    test = make_plan("test", backend, kernels=request.kernels, filters=request.filters,
                     axes=request.axes, modes=request.modes)  # fmt: skip
    wanted = set(request.case_ids) if request.case_ids is not None else None
    test.cases = [(d, c) for d, c in test.cases if wanted is None or c.id in wanted]
    test_ids: dict[str, list[str]] = {}
    for definition, case in test.cases:
        test_ids.setdefault(definition.name, []).append(case.id)
    order: dict[str, KernelDef] = {}
    for definition in [*bench, *(d for d, _ in test.cases)]:
        order.setdefault(definition.name, definition)
    return [
        KernelInfo(
            name=name,
            description=definition.description,
            modes=list(definition.modes),
            tunables=_tunables(definition),
            tuned_modes=_tuned_modes(definition),
            test_cases=test_ids.get(name, []),
        )
        for name, definition in order.items()
    ]
