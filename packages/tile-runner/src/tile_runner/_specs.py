"""Cases named by kernel and axis values (`RunRequest.cases`: `--from`'s captured calls, a
`--cases` file's entries), made into the kernel's `Case`s as its declared ones would be."""

from __future__ import annotations

from collections.abc import Sequence

from tile_protocol import CaseSpec, Failure
from tile_runner._api import Case, KernelDef, Suite, registry
from tile_runner._axes import AxisValue, parse_value
from tile_runner._errors import RunnerError

__all__ = ["spec_cases", "unknown_kernels"]


def spec_cases(
    definition: KernelDef, specs: Sequence[CaseSpec], suite: Suite, backend: str
) -> list[Case]:
    """The cases `specs` name for `definition`, each value parsed as its axis' values are
    (`8x64` a shape); RunnerError naming the case when its axes are not the kernel's."""
    spec_axes = definition.axes_for(suite, backend)
    names = spec_axes.names if spec_axes is not None else ()
    out: list[Case] = []
    for spec in specs:
        if spec.kernel != definition.name:
            continue
        if set(spec.params) != set(names):
            raise RunnerError(
                f"case {spec.kernel}{_written(spec)} gives the axes "
                f"{', '.join(sorted(spec.params)) or 'none'}; the kernel's are "
                f"{', '.join(names) or 'none'}",
                hint="capture the cases again (`--from ... --save-cases FILE`), or write one "
                "value for each of the kernel's axes",
            )
        params: dict[str, AxisValue] = {}
        for name in names:
            like = spec_axes.values(name) if spec_axes is not None else ()
            params[name] = parse_value(spec.params[name], like)
        out.append(Case(definition.name, params, captured=spec.captured))
    return out


def unknown_kernels(specs: Sequence[CaseSpec]) -> list[Failure]:
    """A plan failure for each kernel the specs name that is not registered."""
    known = registry()
    missing = dict.fromkeys(s.kernel for s in specs if s.kernel not in known)
    return [
        Failure(
            phase="plan",
            error_type="UnknownKernel",
            message=f"the cases name kernel `{name}`, which is not registered here "
            "(import the module that defines it: `[project] modules`)",
        )
        for name in missing
    ]


def _written(spec: CaseSpec) -> str:
    return "[" + ",".join(f"{k}={v}" for k, v in spec.params.items()) + "]"
