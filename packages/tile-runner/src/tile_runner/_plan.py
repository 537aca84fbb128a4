"""Planning: which cases a RunRequest selects (kernels, `-k` filters, case ids, axis overrides)."""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tile_protocol import Failure
from tile_runner._api import Case, KernelDef, Suite, cases, registry
from tile_runner._errors import RunnerError

__all__ = ["Plan", "make_plan", "matches"]

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


def make_plan(
    suite: Suite,
    backend: str,
    *,
    kernels: Sequence[str] = (),
    filters: Sequence[str] = (),
    case_ids: Sequence[str] | None = None,
    axes: Mapping[str, list[str]] | None = None,
) -> Plan:
    """Expand every registered kernel into cases and keep the selected ones."""
    plan = Plan()
    overrides = dict(axes or {})
    seen_axes: set[str] = set()
    seen_ids: set[str] = set()
    for definition in registry().values():
        if kernels and not any(
            definition.name == k or fnmatch.fnmatchcase(definition.name, k) for k in kernels
        ):
            continue
        spec = definition.axes_for(suite, backend)
        if spec is not None:
            seen_axes.update(spec.names)
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
    unused = sorted(set(overrides) - seen_axes)
    if unused:
        plan.warnings.append(
            f"no selected kernel has the axis {', '.join(f'`{a}`' for a in unused)}; "
            "the override is ignored"
        )
    if case_ids is not None:
        wanted = set(case_ids)
        plan.cases = [(d, c) for d, c in plan.cases if c.id in wanted]
        found = {c.id for _, c in plan.cases}
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
