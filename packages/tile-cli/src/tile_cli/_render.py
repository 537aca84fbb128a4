"""What a finished run shows: result tables on stdout; failures, hints and the headline on
stderr. The live progress while it runs is `_ui.Ui`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tile_cli._outcome import split_failures
from tile_cli._undone import undone_lines

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    import tile_artifacts as ta
    import tile_protocol as tp
    from tile_cli._results import RunResults

__all__ = [
    "display_path",
    "print_failures",
    "render_build",
    "render_suite",
    "render_timing",
    "render_undone",
]


def display_path(path: Path) -> str:
    """`path` relative to the working directory when it is below it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def print_failures(err: Console, failures: Sequence[tp.Failure], *, verbose: int = 0) -> None:
    """One red line per failure on stderr; `-v` adds the runner's traceback."""
    for failure in failures:
        where = failure.case_id or "(run)"
        err.print(
            f"✗ {where} [{failure.phase}, {failure.status}] {failure.error_type}: "
            f"{failure.message}",
            markup=False,
            style="red",
        )
        if verbose and failure.traceback:
            err.print(failure.traceback.rstrip(), markup=False, style="dim")


def render_suite(
    out: Console, err: Console, results: RunResults, *, command: str, verbose: int
) -> None:
    """bench or test: the tables in plan order, then failures, hints and the headline."""
    from tile_cli._ui import bench_tables, test_table

    plain = not out.is_terminal
    if command == "bench":
        bench = results.in_plan_order(results.bench_results)
        for table in bench_tables(bench, verbose=verbose, plain=plain):
            out.print(table)
    elif command == "test" and results.test_results:
        out.print(test_table(results.in_plan_order(results.test_results), plain=plain))
    print_failures(err, results.failures)
    for hint in _failure_hints(results.failures):
        err.print(f"hint: {hint}", markup=False)
    for result in results.failed_checks:
        c = result.check
        assert c is not None
        err.print(
            f"✗ {result.case_id}: check failed: rel L2 error {c.rel_l2_err:.3g} > tol {c.tol:.3g}"
            f" (max abs err {c.max_abs_err:.3g} at {c.worst_index})"
            if c.rel_l2_err is not None and c.tol is not None
            else f"✗ {result.case_id}: check failed: {c.message}",
            markup=False,
            style="red",
        )
    for log in results.diagnostics:
        err.print(f"{log.level}: {log.message}", markup=False, style="yellow")
    err.print(results.headline(), markup=False)


def render_timing(
    out: Console, err: Console, results: RunResults, timing: ta.RunTiming | None
) -> None:
    """`-v`: each case's time accounting, and the run's wall time against what it needed."""
    from tile_cli._ui import accounting_table, timing_line

    timed: list[tp.BenchResult | tp.TestResult] = [*results.bench_results, *results.test_results]
    table = accounting_table(timed, plain=not out.is_terminal)
    if table is not None:
        out.print(table)
    if timing is not None:
        err.print(timing_line(timing), markup=False)


def _failure_hints(failures: Sequence[tp.Failure]) -> list[str]:
    """One hint per kind of failure seen, saying what to do next."""
    phases = {f.phase for f in failures}
    kinds = {f.error_type for f in failures}
    hints: list[str] = []
    if "import" in phases:
        hints.append(
            "a kernel module did not import: check `[project] modules`/`paths` in tile.toml "
            "(modules import with the project root on sys.path; install a packaged project "
            "with `pip install -e .`), or run `tile list` to see what loads"
        )
    if kinds & {"RunnerCrash", "RunnerTimeout"}:
        hints.append(
            "the runner died or hung on the case shown; its stderr is under `logs/` in the run "
            "directory; rerun it alone with `tile bench -k CASE_ID --isolate`"
        )
    if phases & {"inputs", "compile", "run", "reference", "check", "work"}:
        hints.append("a kernel raised; `report.json` failures hold the bounded traceback")
    return hints


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

    from tile_cli._format import fmt_time

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
            Text(r.case_id), fmt_time(p.trace_s), fmt_time(p.lower_s),
            fmt_time(p.compile_s), cache, export, str(counts.get(r.case_id, 0)),
        )  # fmt: skip
    return table


def render_undone(err: Console, results: RunResults) -> None:
    """How many planned cases were left undone and why (stderr, also with `--json`)."""
    for line in undone_lines(len(results.planned), results.failures):
        err.print(line, markup=False, style="red" if line.startswith("error") else None)
