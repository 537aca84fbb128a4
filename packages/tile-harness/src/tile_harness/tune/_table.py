"""Every configuration a tune tried, per case: its time on the last rung that timed it, its
check, and what became of it (the winner, the runner-up, a tie, a finalist, pruned after a
rung, a wrong output, ruled out by the constraint, failed, not run). `tile tune` prints it
and keeps it in the run directory as `tune.md`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import tile_protocol as tp
from tile_harness.tune._pick import Decision
from tile_protocol.format import format_seconds

__all__ = ["TUNE_MD", "Tried", "progress_line", "tried_markdown", "tried_rows"]

TUNE_MD = "tune.md"


@dataclass(frozen=True)
class Tried:
    """One configuration of one case as the tune left it."""

    case_id: str
    configuration: str
    median_s: float | None
    ci_s: tuple[float, float] | None
    runs: int
    check: str
    """`ok`, `wrong` (its output did not match the reference) or `-` (not checked)."""
    outcome: str
    winner: bool = False

    @property
    def median(self) -> str:
        return format_seconds(self.median_s) if self.median_s is not None else "-"

    @property
    def ci(self) -> str:
        if self.ci_s is None:
            return "-"
        return f"{format_seconds(self.ci_s[0])} – {format_seconds(self.ci_s[1])}"


def _outcome(unit_id: str, decision: Decision | None, dropped: Mapping[str, str],
             finalists: set[str]) -> str:  # fmt: skip
    if decision is not None:
        if unit_id == decision.winner.unit_id:
            return f"winner ({decision.decided_by.replace('_', ' ')})"
        if decision.runner_up is not None and unit_id == decision.runner_up.unit_id:
            return "runner-up"
        if unit_id in decision.tied:
            return "tied with the fastest"
    if unit_id in dropped:
        return dropped[unit_id]
    return "finalist" if unit_id in finalists else "timed"


def tried_rows(
    plan: Sequence[tp.CaseInfo],
    units: Mapping[str, tp.TuneUnit],
    latest: Mapping[str, tp.BenchResult],
    *,
    dropped: Mapping[str, str],
    finalists: set[str],
    decisions: Mapping[str, Decision],
    failures: Sequence[tp.Failure],
) -> list[Tried]:
    """One row per planned configuration, in plan order (cases in plan order too)."""
    failed = {f.case_id: f for f in failures if f.case_id is not None}
    rows: list[Tried] = []
    for info in plan:
        unit = units.get(info.case_id)
        case_id = unit.case_id if unit is not None else info.case_id
        config = unit.configuration if unit is not None else "(no tunables)"
        result = latest.get(info.case_id)
        if info.skip is not None:
            rows.append(Tried(case_id, config, None, None, 0, "-", f"ruled out: {info.skip}"))
            continue
        if result is None:
            failure = failed.get(info.case_id)
            why = f"failed: {failure.message.splitlines()[0]}" if failure else "not run"
            rows.append(Tried(case_id, config, None, None, 0, "-", why))
            continue
        stats, check = result.stats, result.check
        ci = (stats.ci_low, stats.ci_high)
        decision = decisions.get(case_id)
        outcome = _outcome(info.case_id, decision, dropped, finalists)
        rows.append(Tried(
            case_id, config, stats.median,
            (ci[0], ci[1]) if ci[0] is not None and ci[1] is not None else None,
            stats.n, "-" if check is None else ("ok" if check.passed else "wrong"), outcome,
            winner=decision is not None and decision.winner.unit_id == info.case_id,
        ))  # fmt: skip
    return rows


def tried_markdown(rows: Sequence[Tried]) -> str:
    """`tune.md`: one table per case, the winner in bold."""
    lines = ["# Configurations tried", "",
             "Each configuration's time is from the last rung that timed it (the finalists: "
             "the full [bench] settings)."]  # fmt: skip
    current = None
    for row in rows:
        if row.case_id != current:
            current = row.case_id
            lines += ["", f"## `{row.case_id}`", "",
                      "| configuration | median | CI | runs | check | outcome |",
                      "|---|---:|---|---:|---|---|"]  # fmt: skip
        cells = [
            f"`{row.configuration}`",
            row.median,
            row.ci,
            str(row.runs),
            row.check,
            row.outcome,
        ]
        if row.winner:
            cells = [f"**{c}**" for c in cells]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def progress_line(
    latest: Mapping[str, tp.BenchResult],
    finalists: set[str],
    *,
    rung: int,
    final: bool,
    timed: int,
    survivors: Sequence[str],
) -> str:
    """One line per rung (`final`: the finalists' measurement): configurations timed, kept,
    and the fastest correct one so far (in the final line, among the `finalists`); `latest`
    is each unit's latest result."""
    pool = [latest[u] for u in finalists if u in latest] if final else list(latest.values())
    best = min(
        (r for r in pool if r.check is None or r.check.passed),
        key=lambda r: r.stats.median,
        default=None,
    )
    if final:
        text = f"final: {len(survivors)} finalists measured with the [bench] settings"
    else:
        text = f"rung {rung}: {timed} configurations timed, {len(survivors)} kept"
    if best is not None:
        text += f"; fastest so far {best.case_id} {format_seconds(best.stats.median)}"
    return text
