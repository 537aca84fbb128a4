"""Planning: which cases a RunRequest selects (kernels, `-k` filters, case ids, axis overrides)."""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tile_protocol import CaseSpec, Failure, TuneUnit, UsageErrorType, overrides_for
from tile_runner._api import Case, KernelDef, Suite, cases, registry
from tile_runner._axes import format_value
from tile_runner._errors import RunnerError
from tile_runner._modes import MODES, Mode
from tile_runner._specs import spec_cases, unknown_kernels
from tile_runner._tuning import Config

Unit = tuple[KernelDef, Case, dict[str, str] | None, str]
"""What the runner goes through: kernel, case, tunable values to time (`tune`) or None, and
the id its results carry (the case id, or the unit id `case{a=1,b=2}`)."""

__all__ = [
    "TUNABLE_VALUE",
    "UNKNOWN_AXIS",
    "UNKNOWN_TUNABLE",
    "Plan",
    "Unit",
    "make_plan",
    "matches",
]

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


def make_plan(  # noqa: PLR0913 (one keyword per selection field of the request)
    suite: Suite,
    backend: str,
    *,
    kernels: Sequence[str] = (),
    filters: Sequence[str] = (),
    case_ids: Sequence[str] | None = None,
    axes: Mapping[str, list[str]] | None = None,
    units: bool = False,
    tunables: Mapping[str, str] | None = None,
    modes: Sequence[str] | None = None,
    specs: Sequence[CaseSpec] | None = None,
) -> Plan:
    """Expand every registered kernel into cases and keep the selected ones.

    `units` (`tile tune`): every case of a kernel with tunables becomes one unit per
    configuration with the `tunables` values, `case{name=value,...}` (ruled-out ones too: they
    are skipped with the constraint's reason when reached); `case_ids` may then name units.
    `axes` and `tunables` (the request's overrides) must name what some selected kernel has,
    a tunable's value one of its values in each kernel it reaches. `modes` (`--mode`; default
    `fwd`, `all`: every mode a kernel declares) gives each case one case per mode; a case in a
    mode its kernel does not declare fails when it is reached. `specs` (`--from`, `--cases`):
    these cases instead of each kernel's declared axes.
    """
    plan = Plan(failures=unknown_kernels(specs or []))
    overrides = dict(axes or {})
    selected = [d for d in registry().values() if _selected(d, kernels)]
    kernel_axes: dict[str, tuple[str, ...]] = {}
    seen_ids: set[str] = set()
    for definition in selected:
        spec = definition.axes_for(suite, backend)
        if spec is not None:
            kernel_axes[definition.name] = spec.names
        try:
            expanded = (
                cases(definition, suite, backend=backend, overrides=overrides)
                if specs is None
                else spec_cases(definition, specs, suite, backend)
            )
        except RunnerError as exc:
            said = f"kernel `{definition.name}`: {exc}"
            plan.failures.append(Failure(phase="plan", error_type=type(exc).__name__, message=said))
            continue
        for point in expanded:
            for case in _in_modes(plan, definition, point, _wanted(modes, case_ids)):
                if case.id in seen_ids:
                    continue
                if filters and not any(matches(case.id, f) for f in filters):
                    continue
                seen_ids.add(case.id)
                plan.cases.append((definition, case))
    _refuse_unknown(plan, overrides, kernel_axes, tunables or {}, selected)
    fixed = _fixed(plan, tunables or {}, selected)  # bench's overrides too: a bad value refuses
    plan.units = _units(plan.cases, fixed) if units else [(d, c, None, c.id) for d, c in plan.cases]
    if case_ids is not None:
        _keep_only(plan, case_ids)
    return plan


def _wanted(modes: Sequence[str] | None, case_ids: Sequence[str] | None) -> Sequence[str]:
    """The modes asked for; exact case ids (a campaign's units, a restarted runner) name their
    modes themselves, so every declared one is planned and the ids narrow it."""
    if modes:
        return modes
    return ("all",) if case_ids is not None else ("fwd",)


def _in_modes(plan: Plan, definition: KernelDef, point: Case, modes: Sequence[str]) -> list[Case]:
    """`point` once per wanted mode, in the order of MODES (`all`: the kernel's own)."""
    wanted = set(definition.modes) if "all" in modes else set(modes)
    unknown = sorted(wanted - set(MODES))
    if unknown:
        bad = ", ".join(repr(m) for m in unknown)
        warning = f"unknown mode {bad} ignored; use {', '.join(MODES)} or all"
        if warning not in plan.warnings:
            plan.warnings.append(warning)
    ordered: list[Mode] = [m for m in MODES if m in wanted]
    return [
        point if m == "fwd" else Case(point.kernel, point.params, mode=m, captured=point.captured)
        for m in ordered
    ]


def _selected(definition: KernelDef, kernels: Sequence[str]) -> bool:
    """Whether `--kernel` (names or globs; none: every kernel) selects the kernel."""
    return not kernels or any(
        definition.name == k or fnmatch.fnmatchcase(definition.name, k) for k in kernels
    )


def _refuse_unknown(
    plan: Plan,
    axes: Mapping[str, list[str]],
    kernel_axes: Mapping[str, tuple[str, ...]],
    tunables: Mapping[str, str],
    selected: Sequence[KernelDef],
) -> None:
    """Empty the plan, with the failure that says why, for a typo in the request's overrides.

    Running the cases without an override would measure something nobody asked for.
    """
    if any(f.error_type == "AxisValueError" for f in plan.failures):
        # A value that cannot be parsed is the user's typo, for every kernel alike: run none.
        plan.cases = []
    seen_axes = {a for names in kernel_axes.values() for a in names}
    unused = sorted(set(axes) - seen_axes)
    if unused:
        plan.failures.append(_unknown_axes(unused, kernel_axes))
        plan.cases = []
    kernel_tunables = {d.name: d.tunables.axes.names for d in selected if d.tunables is not None}
    seen_tunables = {t for names in kernel_tunables.values() for t in names}
    seen_tunables |= {f"{k}:{t}" for k, names in kernel_tunables.items() for t in names}
    unknown = sorted(set(tunables) - seen_tunables)
    if unknown:
        plan.failures.append(_unknown_tunables(unknown, kernel_tunables))
        plan.cases = []


def _keep_only(plan: Plan, case_ids: Sequence[str]) -> None:
    """Narrow the plan to exactly `case_ids` (cases or units); a plan failure for each id
    that is not there."""
    wanted = set(case_ids)
    wanted_cases = {unit.case_id if (unit := TuneUnit.parse(i)) else i for i in case_ids}
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


UNKNOWN_AXIS: UsageErrorType = "UnknownAxis"
"""`error_type` of the plan failure for `-a AXIS=V` naming an axis no selected kernel has."""
UNKNOWN_TUNABLE: UsageErrorType = "UnknownTunable"
"""`error_type` of the plan failure for `--tunable NAME=V` naming a tunable no selected
kernel has."""
TUNABLE_VALUE: UsageErrorType = "TunableValue"
"""...and for a value that is not among the tunable's values."""
_LISTED = 8


def _listed(by_kernel: Mapping[str, tuple[str, ...]]) -> str:
    """`k1 (a, b); k2 (c)`: the first kernels with their names, and how many more."""
    named = [f"{k} ({', '.join(a) or 'none'})" for k, a in sorted(by_kernel.items())]
    text = "; ".join(named[:_LISTED])
    if len(named) > _LISTED:
        text += f"; and {len(named) - _LISTED} more kernels"
    return text


def _unknown_axes(unused: list[str], kernel_axes: Mapping[str, tuple[str, ...]]) -> Failure:
    """The failure that refuses `-a` overrides of axes the selected kernels do not have."""
    named = ", ".join(f"`{a}`" for a in unused)
    return Failure(
        phase="plan",
        error_type=UNKNOWN_AXIS,
        message=f"no selected kernel has the axis {named}; the selected kernels' axes: "
        + (_listed(kernel_axes) or "none (no kernel selected)"),
    )


def _unknown_tunables(
    unknown: list[str], kernel_tunables: Mapping[str, tuple[str, ...]]
) -> Failure:
    """The failure that refuses `--tunable` overrides no selected kernel could take."""
    named = ", ".join(f"`{t}`" for t in unknown)
    return Failure(
        phase="plan",
        error_type=UNKNOWN_TUNABLE,
        message=f"no selected kernel has the tunable {named}; the selected kernels' tunables: "
        + (_listed(kernel_tunables) or "none (no selected kernel declares tunables)"),
    )


def _fixed(
    plan: Plan, tunables: Mapping[str, str], selected: Sequence[KernelDef]
) -> dict[str, Config]:
    """The `--tunable` values as each selected kernel reads them; a value one of them does not
    take empties the plan, with the failure that names the kernel and its values (a run of
    the cases without it would measure something nobody asked for)."""
    fixed: dict[str, Config] = {}
    for definition in selected:
        if definition.tunables is None:
            continue
        try:
            fixed[definition.name] = definition.tunables.parse(
                overrides_for(definition.name, tunables), strict=False
            )
        except RunnerError as exc:
            plan.failures.append(
                Failure(
                    phase="plan",
                    error_type=TUNABLE_VALUE,
                    message=f"kernel `{definition.name}`: `--tunable` {exc}",
                )
            )
            plan.cases = []
    return fixed


def _units(cases: Sequence[tuple[KernelDef, Case]], fixed: Mapping[str, Config]) -> list[Unit]:
    """Each case once per configuration of its kernel's tunables that has the `fixed` values
    (once without tunables, or in a mode they do not apply to)."""
    out: list[Unit] = []
    for definition, case in cases:
        if definition.tunables is None or not definition.tunables.apply_to(case):
            out.append((definition, case, None, case.id))
            continue
        held = fixed.get(definition.name, {})
        for config, _ in definition.tunables.configs(case):
            if any(config[name] != value for name, value in held.items()):
                continue
            unit = TuneUnit(case_id=case.id, values={k: format_value(v) for k, v in config.items()})
            out.append((definition, case, unit.values, unit.unit_id))
    return out
