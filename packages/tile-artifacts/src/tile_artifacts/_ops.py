"""Implementations of one op side by side: which cases form an op's table, in which order,
and each implementation's speedup against the op's baseline implementation.

A kernel declared with `@tile.kernel(op=..., impl=...)` is one implementation of the op; the
tables of every door (the terminal, `summary.md`, the HTML report) group such cases by op
instead of by kernel, with the same rule, held here once: rows by point (the case's axis
values, its mode included), the baseline implementation first within a point, then the
others in the order they were planned; an implementation's speedup is the baseline's median
at the same point over its own (above 1: faster than the baseline).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from tile_artifacts._models import CaseRecord, Report
from tile_protocol.format import MISSING, format_ci_pct, format_ratio, format_seconds

__all__ = [
    "ImplCase",
    "OpGroup",
    "OpLike",
    "impl_speedups",
    "op_groups",
    "op_problems",
    "ops_markdown",
    "record_median",
    "timed_ops",
]


class OpLike(Protocol):
    """An op as either side holds it: the record, or the runner's `OpInfo`."""

    @property
    def name(self) -> str: ...
    @property
    def impl(self) -> str: ...
    @property
    def baseline(self) -> bool: ...


class ImplCase(Protocol):
    """A case that may be an implementation of an op: a record, a plan entry or a result."""

    @property
    def case_id(self) -> str: ...
    @property
    def params(self) -> Mapping[str, str]: ...
    @property
    def op(self) -> OpLike | None: ...


C = TypeVar("C", bound=ImplCase)


@dataclass(frozen=True)
class OpGroup(Generic[C]):
    """One op's cases in table order, and the label of its baseline implementation (None when
    the baseline is not among these cases, e.g. filtered out)."""

    name: str
    baseline: str | None
    cases: list[C] = field(default_factory=lambda: [])

    @property
    def impls(self) -> list[str]:
        """The implementations present, baseline first."""
        seen = dict.fromkeys(c.op.impl for c in self.cases if c.op is not None)
        return list(seen)


def _point(case: ImplCase) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(case.params.items()))


def op_groups(cases: Sequence[C]) -> list[OpGroup[C]]:
    """The cases that implement an op, one group per op in the order ops first appear; the
    cases of no op are left out (they keep their kernel's table)."""
    by_op: dict[str, list[C]] = {}
    for case in cases:
        if case.op is not None:
            by_op.setdefault(case.op.name, []).append(case)
    groups: list[OpGroup[C]] = []
    for name, members in by_op.items():
        base = next((c.op.impl for c in members if c.op is not None and c.op.baseline), None)
        points = list(dict.fromkeys(_point(c) for c in members))
        ordered = sorted(
            members,
            key=lambda c: (points.index(_point(c)), not (c.op is not None and c.op.baseline)),
        )
        groups.append(OpGroup(name=name, baseline=base, cases=ordered))
    return groups


def impl_speedups(
    cases: Sequence[C], median: Callable[[C], float | None]
) -> dict[str, float | None]:
    """Each op case's speedup against its op's baseline implementation at the same point:
    the baseline's median over the case's. None where either has no median (`median` says
    None for a case that failed or was not measured) or the baseline did not run the point."""
    speedups: dict[str, float | None] = {}
    for group in op_groups(cases):
        base_at = {_point(c): median(c) for c in group.cases if c.op is not None and c.op.baseline}
        for case in group.cases:
            mine, theirs = median(case), base_at.get(_point(case))
            if mine is None or theirs is None or mine <= 0:
                speedups[case.case_id] = None
            else:
                speedups[case.case_id] = theirs / mine

    return speedups


class _OpOwner(Protocol):
    """What `op_problems` reads of a case (a record, or the little a check keeps of one)."""

    @property
    def case_id(self) -> str: ...
    @property
    def kernel(self) -> str: ...
    @property
    def op(self) -> OpLike | None: ...


def op_problems(cases: Sequence[_OpOwner]) -> list[str]:
    """What a report's ops claim against each other (schema-check): each kernel implements one
    op as one label, each label of an op is one kernel's, and an op has one baseline."""
    problems: list[str] = []
    declared: dict[str, tuple[str, str, bool]] = {}
    owner: dict[tuple[str, str], str] = {}
    baselines: dict[str, set[str]] = {}
    for case in cases:
        op = case.op
        if op is None:
            continue
        mine = (op.name, op.impl, op.baseline)
        if declared.setdefault(case.kernel, mine) != mine:
            problems.append(f"kernel `{case.kernel}` declares two ops: {declared[case.kernel]} "
                            f"and {mine} (`{case.case_id}`)")  # fmt: skip
        kernel = owner.setdefault((op.name, op.impl), case.kernel)
        if kernel != case.kernel:
            problems.append(f"op `{op.name}`: implementation `{op.impl}` is both `{kernel}` and "
                            f"`{case.kernel}`")  # fmt: skip
        if op.baseline:
            baselines.setdefault(op.name, set()).add(case.kernel)
    for name, kernels in baselines.items():
        if len(kernels) > 1:
            problems.append(
                f"op `{name}` has {len(kernels)} baselines: {', '.join(sorted(kernels))}"
            )
    return list(dict.fromkeys(problems))


def timed_ops(report: Report) -> list[OpGroup[CaseRecord]]:
    """The op groups a report's tables show: a timed run's (a bench run's, a pytest session's),
    not a tune run's, whose units are one kernel's configurations, timed to pick one."""
    if report.configuration.get("command") == "tune":
        return []
    if not any(c.stats is not None for c in report.cases):
        return []
    return op_groups(report.cases)


def record_median(case: CaseRecord) -> float | None:
    """A recorded case's median, when it succeeded (a wrong output has no speedup)."""
    return case.stats.median if case.status == "success" and case.stats is not None else None


def _short(case: CaseRecord) -> str:
    """The case's axis values as its id writes them (`[shape=8x128,dtype=float32]`)."""
    return case.case_id[len(case.kernel) :] if case.case_id.startswith(case.kernel) else ""


def _ok(case: CaseRecord) -> str:
    if case.check is None:
        return MISSING
    return "✓" if case.check.passed else "✗"


def ops_markdown(report: Report) -> list[str]:
    """`summary.md`'s "Implementations" section: a table per op, rows by point, each
    implementation's time and its speedup against the op's baseline; none without ops."""
    groups = timed_ops(report)
    if not groups:
        return []
    speedups = impl_speedups(report.cases, record_median)
    lines = ["", "## Implementations", ""]
    for group in groups:
        base = group.baseline
        said = f"baseline `{base}`" if base else "no baseline implementation in this run"
        lines += [
            f"**{group.name}** ({len(group.impls)} implementations, {said}):",
            "",
            f"| implementation | case | status | time | ±CI | vs {base or 'baseline'} | ok |",
            "|---|---|---|---:|---:|---:|:---:|",
        ]
        for case in group.cases:
            s = case.stats
            ci = MISSING if s is None else format_ci_pct(s.ci_low, s.ci_high, s.median)
            impl = case.op.impl if case.op is not None else MISSING
            cells = [
                f"`{impl}`",
                f"`{_short(case) or case.case_id}`",
                case.status,
                format_seconds(s.median if s is not None else None),
                ci,
                format_ratio(speedups.get(case.case_id)),
                _ok(case),
            ]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return lines[:-1]
