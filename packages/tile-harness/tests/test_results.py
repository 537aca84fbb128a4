"""`RunResults.kernel_finished`: a kernel is done when each of its planned cases has an outcome."""

from __future__ import annotations

import tile_protocol as tp
from tile_harness import RunResults


def _plan(*ids: tuple[str, str]) -> tp.Plan:
    return tp.Plan(command="test", cases=[tp.CaseInfo(case_id=c, kernel=k) for k, c in ids])


def _passed(case_id: str, kernel: str) -> tp.TestResult:
    return tp.TestResult(case_id=case_id, kernel=kernel, check=tp.Check(passed=True), seed=0)


def test_a_kernel_is_finished_by_its_last_case_whatever_the_outcome() -> None:
    results = RunResults("test")
    results.plan(_plan(("a", "a[1]"), ("a", "a[2]"), ("b", "b[1]")))
    results.add_result(_passed("a[1]", "a"))
    assert results.kernel_finished("a[1]") is None
    failure = tp.Failure(case_id="a[2]", phase="run", error_type="E", message="m")
    results.add_failure(failure, None)
    assert results.kernel_finished("a[2]") == "a"
    # A second outcome of a case counts once: b's only case is still to come.
    results.add_result(_passed("a[2]", "a"))
    assert results.kernel_finished("b[1]") is None
    results.add_result(_passed("b[1]", "b"))
    assert results.kernel_finished("b[1]") == "b"
    assert results.kernel_finished("not planned") is None
