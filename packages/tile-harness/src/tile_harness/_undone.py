"""Never exit 0 with work undone: every planned case that was not run, or whose messages were
invalid, is a failure record, makes the exit code 3 and is counted, with why, in the summary.

A run can end "cleanly" with cases left over: a runner that says `done` too early, a restarted
runner that makes no progress, a shard that never reports a case. The session gives each such
case a `NotRun` failure (`_session.py`); `settle` is the last safety net for whatever
reached no session at all.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import tile_protocol as tp
from tile_harness._failure_kinds import NOT_RUN, declined, is_undone

if TYPE_CHECKING:
    from tile_harness._results import RunResults
    from tile_harness._sinks import Sink

__all__ = [
    "NOT_RUN",
    "declined",
    "is_undone",
    "not_run",
    "settle",
    "undone_lines",
    "undone_reason",
]


def not_run(case_id: str, why: str) -> tp.Failure:
    """The failure of a planned case that no runner ran, and why."""
    return tp.Failure(
        case_id=case_id,
        phase="runner",
        status="skipped",
        error_type=NOT_RUN,
        message=f"not run: {why}",
    )


def settle(results: RunResults, sink: Sink) -> None:
    """Give every planned case that nothing was reported for a `NotRun` failure, through `sink`
    (call once the runners are finished, unless the run was interrupted)."""
    for info in results.planned:
        case_id = info.case_id
        if results.outcome(case_id) is None and results.failure_of(case_id) is None:
            sink.on_message(not_run(case_id, "no runner reported it"))


def _reasons(messages: Iterable[str]) -> str:
    counts = Counter(m.removeprefix("not run: ") for m in messages)
    return "; ".join(f"{n}: {why}" if len(counts) > 1 else why for why, n in counts.most_common())


def _counted(planned: int, failures: Sequence[tp.Failure]) -> list[str]:
    """How many planned cases were not run (and why), how many are invalid; one part each."""
    not_run = {f.case_id: f.message for f in failures if f.case_id and f.error_type == NOT_RUN}
    invalid = {f.case_id for f in failures if f.case_id and f.status == "invalid"}
    parts: list[str] = []
    if not_run:
        parts.append(
            f"{len(not_run)} of {planned} planned cases were not run ({_reasons(not_run.values())})"
        )
    if invalid:
        parts.append(
            f"{len(invalid)} of {planned} cases are invalid: the runner sent messages about them "
            "that break the protocol"
        )
    return parts


def undone_reason(planned: int, failures: Sequence[tp.Failure]) -> str | None:
    """The work left undone, for a run's status_reason; None when there is none."""
    return "; ".join(_counted(planned, failures)) or None


def undone_lines(planned: int, failures: Sequence[tp.Failure]) -> list[str]:
    """`error:` lines saying how many planned cases were left undone and why, plus a hint."""
    lines = [f"error: {part}" for part in _counted(planned, failures)]
    invalid = any(f.case_id and f.status == "invalid" for f in failures)
    stream = [f for f in failures if f.case_id is None and f.status == "invalid"]
    if stream:
        more = f" (and {len(stream) - 1} more, above)" if len(stream) > 1 else ""
        lines.append(f"error: the runner's stream broke the protocol: {stream[0].message}{more}")
    if invalid or stream:
        lines.append(
            "hint: the failures above say what the runner sent; its stderr is under `logs/` in "
            "the run directory. A kernel that forks or writes to inherited descriptors, or a "
            "runner of another tile version, can cause this"
        )
    elif lines:
        lines.append(
            "hint: the runners' stderr is under `logs/` in the run directory; run the cases "
            "left with `-k CASE_ID --isolate` to give each a runner of its own"
        )
    return lines
