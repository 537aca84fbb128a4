"""Planning: which cases a RunRequest selects (kernels, `-k` filters, case ids, axis overrides)."""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tile_protocol import Failure
from tile_runner._api import Case, KernelDef, Suite, cases, registry
from tile_runner._axes import format_value
from tile_runner._errors import RunnerError
from tile_runner._tuning import split_unit, unit_id

Unit = tuple[KernelDef, Case, dict[str, str] | None, str]
"""What the runner goes through: kernel, case, tunable values to time (`tune`) or None, and
the id its results carry (the case id, or the unit id `case{a=1,b=2}`)."""

__all__ = ["UNKNOWN_AXIS", "Plan", "Unit", "make_plan", "matches"]

_GLOB_CHARS = set("*?[")


def matches(text: str, pattern: str) -> bool:
    """`pattern` is a substring of `text`, or a glob (it has `*?[`) matching part of `text`.

    Globs are unanchored like substrings: `softmax*bfloat16` matches `std/softmax[...bfloat16]`.
    """
    if pattern in text:
        return True
    return bool(_GLOB_CHARS & set(pattern)) and fnmatch.fnmatchcase(text, f"*{pattern}*")


@dataclass
class Plan:
    """The selected cases in run order, plus what went wrong or looked odd while selecting."""

    cases: list[tuple[KernelDef, Case]] = field(default_factory=list[tuple[KernelDef, Case]])
    failures: list[Failure] = field(default_factory=list[Failure])
    warnings: list[str] = field(default_factory=list[str])
    units: list[Unit] = field(default_factory=list[Unit])
    """In run order; without `units=True`, one per case with no tunable values."""


def make_plan(
    suite: Suite,
    backend: str,
    *,
    kernels: Sequence[str] = (),
    filters: Sequence[str] = (),
    case_ids: Sequence[str] | None = None,
    axes: Mapping[str, list[str]] | None = None,
    units: bool = False,
) -> Plan:
    """Expand every registered kernel into cases and keep the selected ones.

    `units` (`tile tune`): every case of a kernel with tunables becomes one unit per
    configuration, `case{name=value,...}` (ruled-out ones too: they are skipped with the
    constraint's reason when reached); `case_ids` may then name units.
    """
    plan = Plan()
    overrides = dict(axes or {})
    seen_axes: set[str] = set()
    kernel_axes: dict[str, tuple[str, ...]] = {}
    seen_ids: set[str] = set()
    for definition in registry().values():
        if kernels and not any(
            definition.name == k or fnmatch.fnmatchcase(definition.name, k) for k in kernels
        ):
            continue
        spec = definition.axes_for(suite, backend)
        if spec is not None:
            seen_axes.update(spec.names)
            kernel_axes[definition.name] = spec.names
        try:
            expanded = cases(definition, suite, backend=backend, overrides=overrides)
        except RunnerError as exc:
            plan.failures.append(
                Failure(
                    phase="plan",
                    error_type=type(exc).__name__,
                    message=f"kernel `{definition.name}`: {exc}",
                )
            )
            continue
        for case in expanded:
            if case.id in seen_ids:
                continue
            if filters and not any(matches(case.id, f) for f in filters):
                continue
            seen_ids.add(case.id)
            plan.cases.append((definition, case))
    if any(f.error_type == "AxisValueError" for f in plan.failures):
        # A value that cannot be parsed is the user's typo, for every kernel alike: run none.
        plan.cases = []
    unused = sorted(set(overrides) - seen_axes)
    if unused:
        # Running the cases without the override would measure something nobody asked for.
        plan.failures.append(_unknown_axes(unused, kernel_axes))
        plan.cases = []
    plan.units = _units(plan.cases) if units else [(d, c, None, c.id) for d, c in plan.cases]
    if case_ids is not None:
        wanted = set(case_ids)
        wanted_cases = {split_unit(i)[0] for i in case_ids}
        plan.cases = [(d, c) for d, c in plan.cases if c.id in wanted_cases]
        plan.units = [u for u in plan.units if u[3] in wanted]
        found = {u[3] for u in plan.units}
        for missing in dict.fromkeys(i for i in case_ids if i not in found):
            plan.failures.append(
                Failure(
                    case_id=missing,
                    phase="plan",
                    error_type="UnknownCase",
                    message=f"no case `{missing}` among the selected kernels on this backend",
                )
            )
    return plan


UNKNOWN_AXIS = "UnknownAxis"
"""`error_type` of the plan failure for `-a AXIS=V` naming an axis no selected kernel has."""
_AXES_LISTED = 8


def _unknown_axes(unused: list[str], kernel_axes: Mapping[str, tuple[str, ...]]) -> Failure:
    """The failure that refuses `-a` overrides of axes the selected kernels do not have."""
    named = ", ".join(f"`{a}`" for a in unused)
    by_kernel = [f"{k} ({', '.join(a) or 'none'})" for k, a in sorted(kernel_axes.items())]
    listed = "; ".join(by_kernel[:_AXES_LISTED])
    if len(by_kernel) > _AXES_LISTED:
        listed += f"; and {len(by_kernel) - _AXES_LISTED} more kernels"
    return Failure(
        phase="plan",
        error_type=UNKNOWN_AXIS,
        message=f"no selected kernel has the axis {named}; the selected kernels' axes: "
        + (listed or "none (no kernel selected)"),
    )


def _units(cases: Sequence[tuple[KernelDef, Case]]) -> list[Unit]:
    """Each case once per configuration of its kernel's tunables (once without tunables)."""
    out: list[Unit] = []
    for definition, case in cases:
        if definition.tunables is None:
            out.append((definition, case, None, case.id))
            continue
        for config, _ in definition.tunables.configs(case):
            values = {k: format_value(v) for k, v in config.items()}
            out.append((definition, case, values, unit_id(case.id, config)))
    return out
