"""`tile tune`'s decisions: which configurations a rung keeps, and which one wins.

Pure functions over measured samples, so that the rules can be tested on synthetic timings:
a rung keeps the fastest 1/eta of a case's correct configurations (successive halving: 100
configurations cost about 100 short measurements, then 100/eta longer ones, ...); the winner
is the fastest finalist unless another finalist cannot be told apart from it, in which case
the tie goes to the kernel's default, then to the simplest configuration (the earliest in the
declared order of the tunables' values).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import tile_protocol as tp
from tile_protocol.format import format_values

__all__ = [
    "Decision",
    "Measured",
    "cut_short",
    "keep_fastest",
    "kept_count",
    "margin_text",
    "pick",
    "unfinished_cases",
]

DecidedBy = Literal["faster", "tie_default", "tie_simplest", "only"]


@dataclass(frozen=True)
class Measured:
    """One configuration of one case as the last rung that timed it saw it."""

    unit_id: str
    values: dict[str, str]
    samples: list[float]
    passed: bool
    """Its output matched the reference (a wrong configuration is never kept or chosen)."""
    order: int
    """Its place in the declared product of tunable values: lower is simpler."""
    is_default: bool

    @property
    def configuration(self) -> str:
        """`{block_rows=4,num_warps=8}`: its values, as the winner's line shows them (empty for
        a kernel without tunables)."""
        return tp.TuneUnit(case_id="", values=self.values).configuration if self.values else ""

    @property
    def median(self) -> float:
        xs = sorted(self.samples)
        n = len(xs)
        if n == 0:
            return math.inf
        return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def kept_count(n: int, eta: int) -> int:
    """How many of `n` correct configurations a rung keeps: ceil(n/eta), but at least two where
    two are correct (the final comparison needs a runner-up measured as long as the winner)."""
    return min(n, max(2, math.ceil(n / eta)))


def keep_fastest(measured: Sequence[Measured], eta: int) -> list[Measured]:
    """The fastest `kept_count` correct configurations, fastest first."""
    correct = sorted((m for m in measured if m.passed and m.samples), key=lambda m: m.median)
    return correct[: kept_count(len(correct), eta)]


@dataclass(frozen=True)
class Decision:
    """The winner of one case, the runner-up, and how the winner was chosen."""

    winner: Measured
    runner_up: Measured | None
    decided_by: DecidedBy
    margin: float | None
    """Runner-up median / winner median."""
    tied: list[str]
    """Unit ids that could not be told apart from the fastest (itself included)."""
    reason: str


def pick(finalists: Sequence[Measured], *, noise_floor_pct: float, alpha: float) -> Decision | None:
    """The best correct configuration, judged with tile compare's rule; None if none is correct.

    Each other finalist is compared with the fastest (ratio of medians with a bootstrap CI and a
    Mann-Whitney test, `tile_artifacts.compare.judge`): only one the fastest is an `improvement`
    over counts as beaten; the rest tie with it.
    """
    from tile_artifacts.compare import judge_samples

    correct = sorted((m for m in finalists if m.passed and m.samples), key=lambda m: m.median)
    if not correct:
        return None
    fastest = correct[0]
    tied = [fastest]
    notes: list[str] = []
    for other in correct[1:]:
        verdict, why, _ = judge_samples(
            other.samples, fastest.samples, noise_floor_pct=noise_floor_pct, alpha=alpha
        )
        if verdict != "improvement":
            tied.append(other)
            notes.append(f"{other.unit_id}: {why}")
    decided: DecidedBy
    if len(correct) == 1:
        winner, decided = fastest, "only"
    elif len(tied) == 1:
        winner, decided = fastest, "faster"
    else:
        default = next((m for m in tied if m.is_default), None)
        if default is not None:
            winner, decided = default, "tie_default"
        else:
            winner, decided = min(tied, key=lambda m: m.order), "tie_simplest"
    others = [m for m in correct if m is not winner]
    runner_up = others[0] if others else None
    margin = runner_up.median / winner.median if runner_up and winner.median > 0 else None
    reason = {
        "only": "the only correct configuration",
        "faster": "faster than every other finalist beyond the noise floor",
        "tie_default": f"{len(tied)} finalists tie with the fastest; the default is among them",
        "tie_simplest": f"{len(tied)} finalists tie with the fastest; the simplest of them",
    }[decided]
    if notes and decided.startswith("tie"):
        reason += " (" + "; ".join(notes[:3]) + ")"
    return Decision(
        winner=winner,
        runner_up=runner_up,
        decided_by=decided,
        margin=margin,
        tied=[m.unit_id for m in tied],
        reason=reason,
    )


def margin_text(d: Decision) -> str:
    """How the winner stands against the runner-up, for a winner's line: a factor when it is
    faster; when a tie went to the default or the simplest, how much slower it measured."""
    if d.margin is None or d.runner_up is None:
        return ""
    if d.margin >= 1:
        return f", {d.margin:.3f}x over the runner-up"
    return f", {1 / d.margin - 1:.1%} slower than the runner-up, within the noise"


def cut_short(decision: Decision, rung: int | None) -> Decision:
    """`decision` with its reason saying it stands on rung `rung`'s timings (None: unchanged)."""
    if rung is None:
        return decision
    why = f"--budget ran out after rung {rung}: decided on that rung's shorter timings; "
    return replace(decision, reason=why + decision.reason)


def unfinished_cases(
    allowed: Mapping[str, int],
    decisions: Mapping[str, Decision],
    cut_short: int | None,
    held: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Each case the tune could not finish, with why (in plan order); `held`: the request's
    `--tunable` values, which narrowed what the constraint was asked about."""
    out: dict[str, str] = {}
    having = f" with {format_values(held)}" if held else ""
    for case_id, n in allowed.items():
        if case_id not in decisions:
            out[case_id] = (
                f"no configuration{having} allowed by the constraint"
                if n == 0
                else "no correct configuration was measured"
            )
        elif cut_short is not None:
            out[case_id] = (
                f"decided on rung {cut_short}'s timings: --budget ran out before the "
                "full measurement"
            )
    return out
