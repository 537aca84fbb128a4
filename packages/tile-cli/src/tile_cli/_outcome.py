"""What a finished run means for the exit code: whose fault each failure was, and the code.

A case that does not build or whose output is wrong is the kernel's fault (exit 1); a runner
that crashed, hung or could not import the kernels is the infrastructure's (exit 3).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from tile_cli._errors import ExitCode, no_cases, stopped_code, usage_failure

if TYPE_CHECKING:
    import tile_protocol as tp
    from tile_cli._results import RunResults

__all__ = ["BUILD_PHASES", "build_exit_code", "split_failures", "suite_exit_code"]

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


def suite_exit_code(results: RunResults, interrupted: str | None) -> int:
    """bench and test: 0 all passed, 1 a check failed, 2 a refused selection, 3 any failure,
    130/143 stopped."""
    if interrupted is not None:
        return stopped_code(interrupted)
    refused = usage_failure(results.failures)
    if refused is not None:
        raise refused
    if results.failures:
        return int(ExitCode.INFRA)
    if results.failed_checks:
        return int(ExitCode.FAILED)
    if not results.planned:
        raise no_cases(results.filtered)
    return int(ExitCode.OK)


def build_exit_code(results: RunResults, interrupted: str | None) -> int:
    """0 all built, 1 a case failed to build, 3 crash/timeout/import error, 130/143 stopped."""
    if interrupted is not None:
        return stopped_code(interrupted)
    refused = usage_failure(results.failures)
    if refused is not None:
        raise refused
    broken, other = split_failures(results.failures)
    if other:
        return int(ExitCode.INFRA)
    if broken or any(not r.ok for r in results.build_results):
        return int(ExitCode.FAILED)
    if not results.planned:
        raise no_cases(results.filtered)
    return int(ExitCode.OK)
