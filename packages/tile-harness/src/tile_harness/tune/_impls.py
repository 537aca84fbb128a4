"""`tile tune`'s choice among an op's implementations: at each point of an op, the
implementation that runs it fastest.

The implementation is the op's tunable. Each implementation's case is first tuned as any case
is (its own configurations, its own winner); the winners of one point are then judged against
each other by the rule that picks a configuration (`pick`): the fastest, unless the others
cannot be told apart from it, in which case the tie goes to the op's baseline implementation
(the "default"), then to the implementation registered first. A point where only one
implementation was tuned has no choice to make and is left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import tile_protocol as tp
from tile_harness.tune._pick import Decision, Measured, margin_text, pick

__all__ = ["ImplDecision", "impl_lines", "impls_markdown", "pick_impls"]


@dataclass(frozen=True)
class ImplDecision:
    """The implementation chosen at one point of an op; each candidate's `Measured.unit_id`
    is its case id and its `values` are `{"impl": label}`."""

    op: str
    point: str
    decision: Decision
    kernels: dict[str, str]
    """The kernel of each implementation label."""

    @property
    def impl(self) -> str:
        return self.decision.winner.values["impl"]

    @property
    def runner_up(self) -> str | None:
        other = self.decision.runner_up
        return other.values["impl"] if other is not None else None


def pick_impls(
    decisions: Mapping[str, Decision],
    results: Mapping[str, tp.BenchResult],
    *,
    noise_floor_pct: float,
    alpha: float,
) -> list[ImplDecision]:
    """The implementation each op runs at each point where two or more were tuned.

    `decisions` are the tune's cases' (in plan order, which is registration order);
    `results` hold each winning unit's result, which says the case's op and point."""
    groups: dict[tuple[str, str], list[Measured]] = {}
    kernels: dict[tuple[str, str], dict[str, str]] = {}
    for order, (case_id, d) in enumerate(decisions.items()):
        result = results.get(d.winner.unit_id)
        if result is None or result.op is None:
            continue
        key = (result.op.name, tp.op_point(result.params))
        groups.setdefault(key, []).append(
            Measured(
                unit_id=case_id,
                values={"impl": result.op.impl},
                samples=d.winner.samples,
                passed=True,  # a case's winner is always a correct configuration
                order=order,
                is_default=result.op.baseline,
            )
        )
        kernels.setdefault(key, {})[result.op.impl] = result.kernel
    out: list[ImplDecision] = []
    for (op, point), found in groups.items():
        if len(found) < 2:
            continue
        decision = pick(found, noise_floor_pct=noise_floor_pct, alpha=alpha)
        if decision is not None:
            out.append(ImplDecision(op, point, decision, kernels[(op, point)]))
    return out


def impl_lines(chosen: list[ImplDecision]) -> list[str]:
    """One line per op and point, as `tile tune` prints them after the cases' winners."""
    lines: list[str] = []
    for c in chosen:
        d = c.decision
        head = f"op {c.op} [{c.point}]: {c.impl} ({c.kernels[c.impl]}) "
        lines.append(head + f"{_median(d.winner)} ({d.decided_by}{margin_text(d)})")
    return lines


def impls_markdown(chosen: list[ImplDecision]) -> str:
    """`tune.md`'s section on the implementations chosen (empty when none was)."""
    if not chosen:
        return ""
    lines = "".join(f"- {line}\n" for line in impl_lines(chosen))
    return f"\n## Implementations chosen\n\n{lines}"


def _median(m: Measured) -> str:
    from tile_protocol.format import format_seconds

    return format_seconds(m.median)
