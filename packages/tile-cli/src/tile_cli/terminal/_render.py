"""What a finished run shows: result tables on stdout; failures, hints and the headline on
stderr. The live progress while it runs is `_ui.Ui`.

Each failure gets the hint for what happened to it: a kernel that raised is not a runner
killed by SIGSEGV (native code), nor one killed by SIGKILL (most often out of memory), nor
one that hung. `-vv` adds each failure's traceback (a crash's: the runner's stderr tail).
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tile_artifacts.kernels import breakdown_lines
from tile_cli.terminal._layout import emit
from tile_cli.terminal._tables import (
    BenchRows,
    accounting_tables,
    bench_tables,
    config_notes,
    impossible_notice,
    one_line,
    precision_notice,
    roofline_legend,
    table_groups,
)
from tile_cli.terminal._tables import test_tables as make_test_tables
from tile_cli.terminal._ui import diagnostic_lines, timing_line
from tile_harness import (
    Outcome,
    declined,
    failure_hints,
    outcome_hint,
    split_failures,
    undone_lines,
)
from tile_protocol.format import check_failure_reason, format_seconds

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    import tile_artifacts as ta
    import tile_protocol as tp
    from tile_config import ResolvedConfig
    from tile_harness import RunResults

__all__ = [
    "KernelTables",
    "display_path",
    "outside_project_note",
    "print_failures",
    "render_build",
    "render_suite",
    "render_timing",
    "render_undone",
    "say_outcome",
]


def display_path(path: Path) -> str:
    """`path` relative to the working directory when it is below it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def outside_project_note(resolved: ResolvedConfig, kept: str = "runs and history") -> str | None:
    """What a command that keeps files says when no tile.toml was found: where they went.

    A decision (issue 40): outside a project tile still keeps its runs, history and tuning
    where it ran, as a fresh clone's `tile bench` needs, but says so rather than leave them
    behind unannounced. `kept`: what the command keeps there."""
    if resolved.project_root is not None:
        return None
    return (
        f"no tile.toml here or above: {kept} are kept in "
        f"{display_path(resolved.cwd / '.tile')}/ (`tile init` makes a project)"
    )


def _failure_line(err: Console, failure: tp.Failure) -> None:
    where = one_line(failure.case_id) if failure.case_id else "(run)"
    if declined(failure):  # the kernel's own choice: a row, not a failure
        err.print(f"- {where} {failure.status}: {failure.message}", markup=False, style="dim",
                  soft_wrap=True)  # fmt: skip
        return
    err.print(f"✗ {where} [{failure.phase}, {failure.status}] {failure.error_type}: "
              f"{failure.message}", markup=False, style="red", soft_wrap=True)  # fmt: skip


def print_failures(err: Console, failures: Sequence[tp.Failure], *, verbose: int = 0) -> None:
    """One red line per failure on stderr; `-v` adds the runner's traceback."""
    for failure in failures:
        _failure_line(err, failure)
        if verbose and failure.traceback:
            err.print(failure.traceback.rstrip(), markup=False, style="dim")


def _print_run_failures(err: Console, results: RunResults, verbose: int) -> None:
    for index, failure in enumerate(results.failures, start=1):
        _failure_line(err, failure)
        if verbose >= 2 and failure.traceback:
            launch = results.failure_launch.get(index)
            log = os.path.relpath(launch.stderr_log) if launch is not None else None
            cut = failure.traceback.startswith("...")
            err.print(failure.traceback.rstrip(), markup=False, highlight=False, soft_wrap=True)
            if cut and log is not None:
                err.print(f"  (its start is cut here; the whole traceback is in {log})",
                          markup=False, style="dim")  # fmt: skip


def _print_breakdowns(out: Console, results: Sequence[tp.BenchResult]) -> None:
    """`-v`: where each multi-kernel case's time went, kernel by kernel (cupti only)."""
    for result in results:
        lines = breakdown_lines(result.kernels)
        if not lines:
            continue
        out.print(f"{result.case_id}: {len(lines)} kernels a call", markup=False, style="bold")
        for line in lines:
            out.print(f"  {line}", markup=False, soft_wrap=True)


def render_suite(
    out: Console,
    err: Console,
    results: RunResults,
    *,
    command: str,
    verbose: int,
    target_precision: float | None,
    shown: Collection[str] = (),
) -> None:
    """The result tables (every planned case a row), then failures, hints and the headline.

    `shown`: kernels whose tables the live screen printed already (`KernelTables`)."""
    plain = not out.is_terminal
    # Shards report in whatever order they finish; tables follow the plan.
    order = {c.case_id: i for i, c in enumerate(results.planned)}
    bench = sorted(results.bench_results, key=lambda r: order.get(r.case_id, len(order)))
    tests = sorted(results.test_results, key=lambda r: order.get(r.case_id, len(order)))
    rows = BenchRows(
        results=bench,
        failures=results.failures,
        planned=results.planned,
        target_precision=target_precision,
        backend=results.hello.backend if results.hello is not None else None,
    )
    if command == "bench":
        left = None if not shown else {c.kernel for c in results.planned} - set(shown)
        emit(out, *bench_tables(rows, verbose=verbose, plain=plain, width=out.width,
                                kernels=left))  # fmt: skip
        if bench and (legend := roofline_legend(rows)) is not None:
            # Wrapped here (stdout fits the width; rich's own wrapping pads the lines).
            out.print(textwrap.fill(legend, out.width), markup=False, style="dim", soft_wrap=True)
        if verbose >= 1:
            _print_breakdowns(out, bench)
    elif command == "test" and tests:
        emit(out, *make_test_tables(tests, plain=plain, width=out.width))
    _print_run_failures(err, results, verbose)
    for hint in failure_hints(results.failures):
        err.print(f"hint: {hint}", markup=False, soft_wrap=True)
    for result in results.failed_checks:
        assert result.check is not None
        err.print(f"✗ {one_line(result.case_id)}: wrong output: {check_failure_reason(result.check)}",
                  markup=False, style="red", soft_wrap=True)  # fmt: skip
    if command == "bench" and (notice := precision_notice(rows)) is not None:
        err.print(notice, markup=False, style="yellow", soft_wrap=True)
    if command == "bench" and (notice := impossible_notice(rows)) is not None:
        err.print(notice, markup=False, style="bold red", soft_wrap=True)
    for line in config_notes([*bench, *tests]):
        err.print(line, markup=False, style="yellow", soft_wrap=True)
    for line in diagnostic_lines(results.diagnostics):
        err.print(line, markup=False, style="yellow", soft_wrap=True)
    err.print(results.headline(), markup=False, soft_wrap=True)


class KernelTables:
    """Each kernel's bench table printed as soon as its cases all ended, in the plan's order
    (a kernel that ends before an earlier one waits for it); `shown` is what the end of the
    run leaves out."""

    def __init__(self, out: Console, results: RunResults, *, verbose: int,
                 target_precision: float | None) -> None:  # fmt: skip
        self.out = out
        self.results = results
        self.verbose = verbose
        self.target_precision = target_precision
        self.shown: list[str] = []
        self._ended: set[str] = set()

    def __call__(self, kernel: str) -> None:
        """`kernel`'s cases all ended: print its table (its op's, once every implementation
        ended) and any that waited for it."""
        self._ended.add(kernel)
        ready: list[str] = []
        for infos in table_groups(self.results.planned).values():
            names = list(dict.fromkeys(i.kernel for i in infos))
            if all(name in self.shown for name in names):
                continue
            if not all(name in self._ended for name in names):
                break
            ready += names
        if not ready:
            return
        results = self.results
        rows = BenchRows(
            results=results.in_plan_order(results.bench_results),
            failures=results.failures,
            planned=results.planned,
            target_precision=self.target_precision,
            backend=results.hello.backend if results.hello is not None else None,
        )
        out = self.out
        emit(out, *bench_tables(rows, verbose=self.verbose, plain=not out.is_terminal,
                                width=out.width, kernels=set(ready)))  # fmt: skip
        self.shown += ready


def render_timing(
    out: Console, err: Console, results: RunResults, timing: ta.RunTiming | None
) -> None:
    """`-v`: each case's time accounting, and the run's wall time against what it needed."""
    timed: list[tp.BenchResult | tp.TestResult] = [*results.bench_results, *results.test_results]
    emit(out, *accounting_tables(timed, plain=not out.is_terminal, width=out.width))
    if timing is not None:
        err.print(timing_line(timing), markup=False, soft_wrap=True)


def render_build(
    out: Console, err: Console, results: RunResults, problems: list[str], *, verbose: int
) -> None:
    """The build table on stdout; failures, export notes and the headline on stderr."""
    if results.build_results:
        out.print(_build_table(results, plain=not out.is_terminal))
    broken, other = split_failures(results.failures)
    print_failures(err, [*broken, *other], verbose=verbose)
    # One line per distinct reason: every Pallas case on a GPU can lack an export the same way.
    reasons: dict[str, list[str]] = {}
    for r in results.build_results:
        if r.error:
            reasons.setdefault(r.error, []).append(r.case_id)
    for reason, cases in reasons.items():
        which = cases[0] if len(cases) == 1 else f"{len(cases)} cases"
        err.print(f"note: {which}: {reason}", markup=False, style="yellow")
    for log in results.diagnostics:
        if log.message not in reasons:
            err.print(f"{log.level}: {log.message}", markup=False, style="yellow")
    for problem in problems:
        err.print(f"warning: {problem}", markup=False, style="yellow")
    err.print(results.headline(), markup=False)


def _build_table(results: RunResults, *, plain: bool) -> Table:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    exported = {a.case_id for a in results.artifacts if a.kind == "export"}
    counts: dict[str | None, int] = {}
    for artifact in results.artifacts:
        counts[artifact.case_id] = counts.get(artifact.case_id, 0) + 1
    table = Table(title="build", title_justify="left", header_style="bold",
                  box=box.SIMPLE if plain else box.ROUNDED)  # fmt: skip
    for i, col in enumerate(("case", "trace", "lower", "compile", "cache", "export", "files")):
        table.add_column(col, justify="left" if i == 0 else "right", no_wrap=i == 0)
    for r in results.build_results:
        p = r.phases
        cache = "-" if p.cache_hit is None else "hit" if p.cache_hit else "miss"
        export = Text("✓", style="green") if r.case_id in exported else Text("-", style="dim")
        table.add_row(
            Text(r.case_id), format_seconds(p.trace_s), format_seconds(p.lower_s),
            format_seconds(p.compile_s), cache, export, str(counts.get(r.case_id, 0)),
        )  # fmt: skip
    return table


def render_undone(err: Console, results: RunResults) -> None:
    """How many planned cases were left undone and why (stderr, also with `--json`)."""
    for line in undone_lines(len(results.planned), results.failures):
        err.print(line, markup=False, style="red" if line.startswith("error") else None)


def say_outcome(err: Console, outcome: Outcome) -> None:
    """On stderr, the last words of a run that did not pass: the code, why, what to do."""
    if outcome.code == 0 or outcome.reason is None:
        return
    err.print(f"exit {outcome.code}: {outcome.reason}", markup=False, soft_wrap=True)
    hint = outcome_hint(outcome)
    if hint is not None:
        err.print(f"hint: {hint}", markup=False, soft_wrap=True)
