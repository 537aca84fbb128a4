"""What a finished run means for its exit code: whose fault each failure was, the code, and
the sentence that says why.

A case that does not build or whose output is wrong is the kernel's fault (exit 1); a runner
that crashed, hung or could not import the kernels is the infrastructure's (exit 3). The
outcome of a `tile bench|test|build` run is decided once, before report.json and summary.md
are written, so that the terminal, the report (`summary.exit_code`, `exit_reason`, a run
status that is not `success` when the code is not 0) and the summary pasted into a pull
request all say the same thing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from tile_harness._errors import ExitCode, stopped_code, usage_failure
from tile_harness._failure_kinds import declined

if TYPE_CHECKING:
    from pathlib import Path

    import tile_artifacts as ta
    import tile_protocol as tp
    from tile_config import CompareConfig
    from tile_harness._compare import CompareSettings
    from tile_harness._errors import CliError
    from tile_harness._results import RunResults

__all__ = [
    "BUILD_PHASES",
    "Finished",
    "Outcome",
    "apply_outcome",
    "comparison_outcome",
    "decide",
    "judge_paths",
    "run_outcome",
    "outcome_hint",
    "split_failures",
]

BUILD_PHASES: Final[frozenset[tp.Phase]] = frozenset({"inputs", "compile"})
"""Runner phases whose failure means the case itself did not build (exit 1, not 3)."""


def split_failures(failures: Sequence[tp.Failure]) -> tuple[list[tp.Failure], list[tp.Failure]]:
    """(cases that failed to build, everything else that went wrong); skipped cases are neither.

    A kernel that raises while its inputs are made, while tracing, lowering or compiling is a
    build failure of that case. A crash, a timeout, an import error or a bad plan is not.
    """
    broken: list[tp.Failure] = []
    other: list[tp.Failure] = []
    for failure in failures:
        if failure.case_id is not None and failure.phase in BUILD_PHASES:
            if failure.status != "skipped":
                broken.append(failure)
        else:
            other.append(failure)
    return broken, other


_NAMED = 3
_WORD = {"RunnerCrash": "crashed the runner", "RunnerTimeout": "hung", "NotRun": "was not run"}


@dataclass(frozen=True)
class Outcome:
    """An exit code and, unless it is 0, one sentence saying what decided it."""

    code: int
    reason: str | None = None


def _names(case_ids: Sequence[str]) -> str:
    named = ", ".join(f"`{c}`" for c in case_ids[:_NAMED])
    return named + (f" and {len(case_ids) - _NAMED} more" if len(case_ids) > _NAMED else "")


def _failure_reason(failures: Sequence[tp.Failure]) -> str:
    first = failures[0]
    where = f"`{first.case_id}`" if first.case_id else f"the {first.phase} phase"
    what = _WORD.get(first.error_type, f"raised {first.error_type}")
    more = f" (and {len(failures) - 1} more failure{'s' * (len(failures) > 2)})"
    return f"{where} {what}" + (more if len(failures) > 1 else "")


def comparison_outcome(
    doc: ta.compare.ComparisonDoc, *, fail_on_inconclusive: bool, allow_missing: bool
) -> Outcome:
    """The gate of a comparison as an exit code: 1 on a regression, 4 when not all was judged."""
    import tile_artifacts as ta

    gate = ta.compare.gate_comparison(
        doc, fail_on_inconclusive=fail_on_inconclusive, allow_missing=allow_missing
    )
    if gate.verdict == "regression":
        return Outcome(int(ExitCode.FAILED), gate.reason)
    if gate.verdict == "unjudged":
        return Outcome(int(ExitCode.INCONCLUSIVE), gate.reason)
    return Outcome(int(ExitCode.OK))


def judge_paths(
    base: Path, cur: Path, cfg: CompareConfig
) -> tuple[ta.compare.ComparisonDoc, Outcome]:
    """`tile compare BASE CUR` under `[compare]` (flags already laid over it): the comparison
    and the exit code it decides."""
    from tile_harness._compare import compare_paths

    doc = compare_paths(
        base, cur, noise_floor_pct=cfg.noise_floor, alpha=cfg.alpha, basis=cfg.basis
    )
    outcome = comparison_outcome(
        doc, fail_on_inconclusive=cfg.fail_on_inconclusive, allow_missing=cfg.allow_missing
    )
    return doc, outcome


def run_outcome(
    rec: RunResults,
    *,
    interrupted: str | None,
    comparison: ta.compare.ComparisonDoc | None,
    settings: CompareSettings | None,
) -> Outcome:
    """Stopped (130/143), infrastructure (3), wrong output (1), no case (2), then the gate."""
    if interrupted is not None:
        return Outcome(stopped_code(interrupted), interrupted)
    if (usage := usage_failure(rec.failures)) is not None:
        return Outcome(int(ExitCode.USAGE), usage.message)
    if rec.command in ("build", "profile"):
        return _build_outcome(rec)
    outcome = _cases_outcome(rec)
    if outcome.code == 0 and comparison is not None and settings is not None:
        return comparison_outcome(
            comparison,
            fail_on_inconclusive=settings.fail_on_inconclusive,
            allow_missing=settings.allow_missing,
        )
    return outcome


def _cases_outcome(rec: RunResults) -> Outcome:
    """A bench or test run's cases, before any gate: infrastructure, wrong output, no case.

    A case its kernel cannot run (`unsupported`: a `bwd` mode of a function JAX cannot
    differentiate) or chose not to (`tile.skip(...)`, a configuration the constraint rules
    out) is a row of the report, neither a failure nor ok. A case no runner reached is
    skipped too, but that is work undone (`NotRun`): it fails the run.
    """
    failures = [f for f in rec.failures if not declined(f)]
    if failures:
        return Outcome(int(ExitCode.INFRA), _failure_reason(failures))
    if wrong := rec.failed_checks:
        what = f"{len(wrong)} case{'s' * (len(wrong) > 1)} gave wrong output"
        return Outcome(int(ExitCode.FAILED), f"{what}: {_names([r.case_id for r in wrong])}")
    if not rec.planned:
        return Outcome(int(ExitCode.USAGE), "no case was selected")
    return Outcome(int(ExitCode.OK))


def _build_outcome(rec: RunResults) -> Outcome:
    """A build run's cases: infrastructure, cases that did not build, no case."""
    broken, other = split_failures(rec.failures)
    if other:
        return Outcome(int(ExitCode.INFRA), _failure_reason(other))
    unbuilt = [f.case_id for f in broken if f.case_id] + [
        r.case_id for r in rec.build_results if not r.ok
    ]
    if unbuilt:
        return Outcome(int(ExitCode.FAILED), f"did not build: {_names(unbuilt)}")
    if not rec.planned:
        return Outcome(int(ExitCode.USAGE), "no case was selected")
    return Outcome(int(ExitCode.OK))


def apply_outcome(
    report: ta.Report, outcome: Outcome, comparison: ta.compare.ComparisonDoc | None
) -> ta.Report:
    """The report with the outcome in its summary, and a run status that does not say
    `success` for a run that exits non-zero (a regression: `failed`; not all judged:
    `partial`)."""
    run, summary = report.run, report.summary
    if outcome.code == ExitCode.USAGE and run.status != "interrupted":
        run = run.model_copy(update={"status": "invalid", "status_reason": outcome.reason})
    elif outcome.code != 0 and run.status == "success":
        status = "failed" if outcome.code == ExitCode.FAILED else "partial"
        run = run.model_copy(update={"status": status, "status_reason": outcome.reason})
    summary = summary.model_copy(
        update={"status": run.status, "exit_code": outcome.code, "exit_reason": outcome.reason}
    )
    update: dict[str, object] = {"run": run, "summary": summary}
    if comparison is not None:
        update["comparisons"] = list(comparison.rows)
    return report.model_copy(update=update)


_GATE_HINT = {
    int(ExitCode.FAILED): "if the change is intended, record a new baseline with "
    "`tile baseline save` and commit it",
    int(ExitCode.INCONCLUSIVE): "a case in one run only passes with `--allow-missing`; "
    "a stale baseline is refreshed with `tile baseline save`; a noisy case needs more "
    "samples (`--rounds 5`)",
}


def outcome_hint(outcome: Outcome) -> str | None:
    """What to do next after a gate that did not pass, if there is a general answer."""
    return _GATE_HINT.get(outcome.code) if outcome.reason is not None else None


@dataclass(frozen=True)
class Finished:
    """A finalized run: the report as written, its comparison, and the outcome decided."""

    report: ta.Report
    comparison: ta.compare.ComparisonDoc | None
    outcome: Outcome


def decide(
    results: RunResults,
    interrupted: str | None,
    comparison: ta.compare.ComparisonDoc | None,
    settings: CompareSettings | None,
    problem: CliError | None,
) -> Outcome:
    """The run's outcome; a baseline that could not be used fails a run that passed."""
    outcome = run_outcome(results, interrupted=interrupted, comparison=comparison,
                          settings=settings)  # fmt: skip
    if problem is not None and outcome.code == 0:
        return Outcome(int(problem.code), problem.message)
    return outcome
