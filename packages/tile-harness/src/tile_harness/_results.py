"""What the runners of one run said, kept in order and indexed by case.

The recorder fills it as messages arrive; the report, the tables and the exit code read it.
It does no I/O: what goes to disk as it happens is the recorder's business.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

import tile_protocol as tp
from tile_harness._failure_kinds import declined

if TYPE_CHECKING:
    import tile_artifacts as ta
    from tile_harness._process import Launch

__all__ = ["CaseResult", "RunResults"]

CaseResult = tp.BenchResult | tp.TestResult | tp.BuildResult
"""A result message: the runner finished the case (whether its check passed or not)."""
_R = TypeVar("_R", tp.BenchResult, tp.TestResult, tp.BuildResult)


@dataclass
class RunResults:
    """Every message of a run that matters after it, and the runner processes that sent them."""

    command: str
    started: float = field(default_factory=time.monotonic)
    hello: tp.Hello | None = None
    planned: list[tp.CaseInfo] = field(default_factory=list[tp.CaseInfo])
    bench_results: list[tp.BenchResult] = field(default_factory=list[tp.BenchResult])
    test_results: list[tp.TestResult] = field(default_factory=list[tp.TestResult])
    build_results: list[tp.BuildResult] = field(default_factory=list[tp.BuildResult])
    failures: list[tp.Failure] = field(default_factory=list[tp.Failure])
    failure_launch: dict[int, Launch] = field(default_factory=dict[int, "Launch"])
    """The runner each failure (1-based, in order) came from, to tie it to its stderr log."""
    artifacts: list[tp.Artifact] = field(default_factory=list[tp.Artifact])
    input_files: dict[str, str] = field(default_factory=dict[str, str])
    diagnostics: list[tp.Log] = field(default_factory=list[tp.Log])
    cache_events: list[tp.CacheEvent] = field(default_factory=list[tp.CacheEvent])
    """The runners' compile-cache hits and misses (`--cache-report`)."""
    launches: list[Launch] = field(default_factory=list["Launch"])
    findings: list[ta.Finding] = field(default_factory=list["ta.Finding"])
    """Observations a command adds to its report (e.g. `tile tune`'s winners)."""
    runner_start_s: float = 0.0
    """Seconds from spawning each runner to its `hello`, summed over runners."""
    filtered: bool = False
    """The cases were selected by filters, kernels or ids (an empty plan is then no error)."""
    slurm_job_id: str | None = None
    """For the report context: the allocation's job id or the shards' ids, comma-separated."""
    invalid_cases: set[str] = field(default_factory=set[str])
    """Cases the runner sent a message about that broke the protocol's rules (`invalid`)."""
    _outcome: dict[str, CaseResult] = field(default_factory=dict[str, CaseResult], init=False)
    _failure_of: dict[str, tp.Failure] = field(default_factory=dict[str, tp.Failure], init=False)
    _position: dict[str, int] = field(default_factory=dict[str, int], init=False)
    _left: dict[str, int] = field(default_factory=dict[str, int], init=False)
    """Planned cases of each kernel without an outcome yet."""

    # ---------------------------------------------------------------- filling

    def plan(self, plan: tp.Plan) -> None:
        """The run's cases, in order."""
        self.planned = list(plan.cases)
        self._position = {c.case_id: i for i, c in enumerate(self.planned)}
        self._left = {}
        for info in self.planned:
            ended = info.case_id in self._outcome or info.case_id in self._failure_of
            self._left[info.kernel] = self._left.get(info.kernel, 0) + (not ended)

    def _ends(self, case_id: str) -> None:
        """A case's first outcome (result or failure): one fewer left of its kernel."""
        if case_id in self._outcome or case_id in self._failure_of:
            return
        index = self._position.get(case_id)
        if index is not None:
            self._left[self.planned[index].kernel] -= 1

    def add_result(self, result: CaseResult) -> None:
        """A finished case; the first result of a case is the one that counts."""
        if isinstance(result, tp.BenchResult):
            self.bench_results.append(result)
        elif isinstance(result, tp.TestResult):
            self.test_results.append(result)
        else:
            self.build_results.append(result)
        self._ends(result.case_id)
        self._outcome.setdefault(result.case_id, result)

    def add_failure(self, failure: tp.Failure, launch: Launch | None) -> None:
        """A failure, of a case or of the run, and the runner it came from."""
        self.failures.append(failure)
        if launch is not None:
            self.failure_launch[len(self.failures)] = launch
        if failure.case_id is not None:
            self._ends(failure.case_id)
            self._failure_of.setdefault(failure.case_id, failure)
            if failure.status == "invalid":
                self.invalid_cases.add(failure.case_id)

    # ---------------------------------------------------------------- lookups

    def outcome(self, case_id: str) -> CaseResult | None:
        """The result of a case, if the runner finished it."""
        return self._outcome.get(case_id)

    def failure_of(self, case_id: str) -> tp.Failure | None:
        """The first failure blamed on a case, if any."""
        return self._failure_of.get(case_id)

    def position(self, case_id: str) -> int | None:
        """Where a case stands in the plan (0-based); None for a case not planned."""
        return self._position.get(case_id)

    def kernel_finished(self, case_id: str) -> str | None:
        """The kernel of `case_id` when every planned case of it has a result or a failure."""
        index = self._position.get(case_id)
        if index is None:
            return None
        kernel = self.planned[index].kernel
        return kernel if self._left.get(kernel, 0) == 0 else None

    def in_plan_order(self, results: list[_R]) -> list[_R]:
        """`results` in plan order: shards report in whatever order they finish."""
        end = len(self._position)
        return sorted(results, key=lambda r: self._position.get(r.case_id, end))

    # ---------------------------------------------------------------- derived

    @property
    def failed_checks(self) -> list[tp.BenchResult | tp.TestResult]:
        """Results whose output did not match the reference."""
        results: list[tp.BenchResult | tp.TestResult] = [*self.bench_results, *self.test_results]
        return [r for r in results if r.check is not None and not r.check.passed]

    def headline(self) -> str:
        """One sentence: how many cases, how many ok, what went wrong, how long."""
        # A case the runner sent an invalid message about is not ok, even with a valid result.
        invalid = self.invalid_cases
        checked = [r for r in self.failed_checks if r.case_id not in invalid]
        built = [r for r in self.build_results if r.case_id not in invalid]
        done = sum(r.case_id not in invalid for r in (*self.bench_results, *self.test_results))
        done += len(built)
        bad = len(checked) + sum(not r.ok for r in built)
        parts = [f"{len(self.planned)} cases", f"{done - bad} ok"]
        if bad:
            parts.append(f"{bad} failed check{'s' if bad != 1 else ''}")
        # Cases no runner reached are counted as not run, not as failures (_undone.py).
        # A case its kernel declined (skipped, or a backward JAX cannot take) is a row.
        passed_over = [f for f in self.failures if declined(f)]
        failures = [f for f in self.failures if f.error_type != "NotRun" and not declined(f)]
        if failures:
            parts.append(f"{len(failures)} failure{'s' if len(failures) != 1 else ''}")
        for status in ("skipped", "unsupported"):
            if count := sum(f.status == status for f in passed_over):
                parts.append(f"{count} {status}")
        blamed = {f.case_id for f in (*failures, *passed_over) if f.case_id is not None}
        not_run = sum(self.outcome(c.case_id) is None and c.case_id not in blamed
                      for c in self.planned)  # fmt: skip
        if not_run > 0:
            parts.append(f"{not_run} not run")
        elapsed = time.monotonic() - self.started
        return f"tile {self.command}: " + ", ".join(parts) + f" in {elapsed:.1f} s"

    def timing(self) -> ta.RunTiming:
        """The run's wall time against what it had to spend: starting, compiling, sampling."""
        import tile_artifacts as ta
        from tile_harness._convert import accounting_total

        results: list[tp.BenchResult | tp.TestResult] = [*self.bench_results, *self.test_results]
        sums = accounting_total(r.accounting for r in results if r.accounting is not None)
        compile_s = sums.compile_s + sums.reference_compile_s
        for build in self.build_results:
            p = build.phases
            compile_s += sum(v or 0.0 for v in (p.trace_s, p.lower_s, p.compile_s))
        sampled = sum(
            sum(r.samples) + (sum(r.reference.samples) if r.reference is not None else 0.0)
            for r in self.bench_results
        )
        wall = time.monotonic() - self.started
        needed = self.runner_start_s + compile_s + sampled
        return ta.RunTiming(
            wall_s=wall,
            runner_start_s=self.runner_start_s,
            compile_s=compile_s,
            sampled_s=sampled,
            overhead_ratio=wall / needed if needed > 0 else None,
            parts=sums,
        )
