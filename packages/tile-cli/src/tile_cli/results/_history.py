"""`tile history add | show | regressions`, and the record every bench run leaves in it.

Imported only by those commands and at the end of `tile bench` (when `[history] enabled`),
so `tile --help` never loads tile-report or sqlite3.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rich import box
from rich.table import Table
from rich.text import Text

import tile_report as tr
from tile_cli.terminal._layout import emit, refit
from tile_cli.terminal._ui import make_consoles
from tile_harness import CliError, ExitCode, refuse_run_directory, resolve_config
from tile_protocol.format import format_seconds

if TYPE_CHECKING:
    from rich.console import Console

    import tile_artifacts as ta
    from tile_config import ResolvedConfig

__all__ = [
    "HistoryQuery",
    "add_runs",
    "history_path",
    "record_run",
    "show_history",
    "show_regressions",
    "sparkline",
]

_BARS = "▁▂▃▄▅▆▇█"
_NUMERIC = frozenset({"commits", "first", "latest", "change", "noise", "runs", "median",
                      "vs previous", "before", "after"})  # fmt: skip


@dataclass(frozen=True)
class HistoryQuery:
    """Which series to look at: the CLI's case filters plus device, branch and a window."""

    filters: Sequence[str] = ()
    kernels: Sequence[str] = ()
    device: str | None = None
    branch: str | None = None
    last: int | None = None
    include_dirty: bool = False
    min_change: float = tr.MIN_CHANGE


@contextmanager
def _translated() -> Generator[None]:
    """tile-report's errors as the CLI's: exit 3 for a lock held too long, else 2."""
    try:
        yield
    except tr.HistoryBusyError as exc:
        raise CliError(exc.message, hint=exc.hint, code=ExitCode.INFRA) from None
    except tr.ReportError as exc:
        raise CliError(exc.message, hint=exc.hint, code=ExitCode.USAGE) from None


def history_path(resolved: ResolvedConfig, db: Path | None) -> Path:
    """`--db` when given, else `[history] path` (relative to the project root)."""
    return db if db is not None else resolved.resolve_path(resolved.config.history.path)


def _add(history: tr.History, report: ta.Report, run_dir: Path, branch: str | None) -> tr.Added:
    """Record one run, with its commit's time and subject looked up where it was run."""
    cwd = Path(report.context.cwd) if report.context.cwd else Path.cwd()
    producer = report.producer
    git = tr.git_info(
        cwd if cwd.is_dir() else Path.cwd(), producer.git_head, dirty=producer.dirty, branch=branch
    )
    return history.add_run(report, git=git, run_dir=str(run_dir.absolute()))


def record_run(resolved: ResolvedConfig, report: ta.Report, run_dir: Path, err: Console) -> None:
    """End of `tile bench`: add the run to the history; a problem is a warning, not a failure
    (the run directory already holds every number)."""
    path = history_path(resolved, None)
    try:
        with tr.History(path) as history:
            _add(history, report, run_dir, None)
    except tr.ReportError as exc:
        err.print(f"warning: the run was not added to the history: {exc.message}", markup=False)
        if exc.hint:
            err.print(f"hint: {exc.hint}; `[history] enabled = false` turns it off", markup=False)


def _read_run(path: Path) -> tuple[ta.Report, Path]:
    import tile_artifacts as ta

    report_file = path / ta.REPORT_JSON if path.is_dir() else path
    if not report_file.is_file():
        raise CliError(
            f"`{path}` is not a run directory (`{report_file}` is missing)",
            hint="pass run directories written by `tile bench`, e.g. `.tile/runs/*`",
        )
    try:
        return ta.read_report(report_file, metrics=False), report_file.parent
    except ta.ArtifactError as exc:
        raise CliError(exc.message, hint=exc.hint, code=ExitCode.USAGE) from None


def add_runs(
    runs: Sequence[Path], *, db: Path | None, branch: str | None, profile: str | None
) -> int:
    """`tile history add`: read every run first (a bad one stops before any write), then add."""
    _, err = make_consoles()
    resolved = resolve_config(profile, {})
    reports = [_read_run(run) for run in runs]
    path = history_path(resolved, db)
    refuse_run_directory(path, hint="`--db history.sqlite`, or leave `--db` out")
    with _translated(), tr.History(path) as history:
        for report, run_dir in reports:
            added = _add(history, report, run_dir, branch)
            what = report.run.run_id
            if added.already:
                err.print(f"{what}: already in the history", markup=False)
            elif added.cases == 0:
                err.print(f"{what}: skipped, no measured bench case", markup=False)
            else:
                err.print(f"{what}: added {added.cases} case(s)", markup=False)
        total = history.run_count()
    err.print(f"{path}: {total} run(s)", markup=False, style="dim")
    return int(ExitCode.OK)


def _trends(query: HistoryQuery, *, db: Path | None, profile: str | None) -> list[tr.Trend]:
    resolved = resolve_config(profile, {})
    path = history_path(resolved, db)
    with _translated(), tr.History(path, create=False) as history:
        if history.run_count() == 0:
            raise CliError(
                f"the history `{path}` holds no run yet",
                hint="`tile bench` records each run; `tile history add RUN...` adds old ones",
            )
        series = history.series(
            filters=query.filters, kernels=query.kernels, device=query.device, branch=query.branch
        )
    found = tr.trends(
        series, min_change=query.min_change, include_dirty=query.include_dirty, last=query.last
    )
    if not found:
        raise CliError(
            "no case in the history matches the filters",
            hint="run `tile history show` without filters to see every case",
        )
    return found


def sparkline(values: Sequence[float]) -> str:
    """The values as a row of block characters, lowest to highest."""
    lo, hi = min(values), max(values)
    if hi <= lo:
        return _BARS[3] * len(values)
    return "".join(_BARS[round((v - lo) / (hi - lo) * (len(_BARS) - 1))] for v in values)


def _steps_text(trend: tr.Trend) -> Text:
    parts = Text()
    for step in trend.fit.steps:
        point = trend.fit.points[step.index]
        style = "red" if step.kind == "regression" else "green"
        if parts:
            parts.append(", ")
        parts.append(f"{step.change * 100:+.1f}% at {point.label}", style=style)
        if tr.step_config_change(trend.fit, step) is not None:
            parts.append(" (config changed)", style="yellow")
    for spike in trend.fit.spikes:
        if parts:
            parts.append(", ")
        label = trend.fit.points[spike.index].label
        parts.append(f"spike {spike.change * 100:+.1f}% at {label}", style="yellow")
    return parts or Text("-", style="dim")


def _table(columns: Sequence[str], plain: bool, title: str | None = None) -> Table:
    """A table whose numeric columns are right-aligned."""
    table = Table(title=title, title_justify="left", header_style="bold",
                  box=box.SIMPLE if plain else box.ROUNDED)  # fmt: skip
    for col in columns:
        table.add_column(col, justify="right" if col in _NUMERIC else "left")
    return table


def _summary_table(trends: Sequence[tr.Trend], plain: bool, op: tr.OpTrends | None = None) -> Table:
    """One line per series; for an op's series (`op`), a first column names the
    implementation, and the title the op and its baseline."""
    title = None
    columns = ["case", "device", "timer", "commits", "trend", "first", "latest", "change",
               "noise", "steps"]  # fmt: skip
    if op is not None and op.name is not None:
        said = f"baseline {op.baseline}" if op.baseline else "no baseline implementation"
        title = f"op {op.name}: {len(op.impls)} implementations, {said}"
        columns.insert(0, "impl")
    table = _table(columns, plain, title=title)
    for t in trends:
        points = t.fit.points
        first, latest = points[0].value_s, points[-1].value_s
        impl = [_impl(t.series.op)] if title is not None else []
        table.add_row(
            *impl,
            Text(t.series.case_id),
            t.series.device,
            t.series.timer or "-",
            str(len(points)),
            sparkline([p.value_s for p in points]),
            format_seconds(first),
            format_seconds(latest),
            f"{(latest / first - 1) * 100:+.1f}%",
            f"±{t.fit.noise * 100:.1f}%" if len(points) >= tr.MIN_POINTS else "-",
            _steps_text(t),
        )
    return table


def _impl(op: tr.SeriesOp | None) -> Text:
    if op is None:
        return Text("-", style="dim")
    return Text(op.impl + (" (baseline)" if op.baseline else ""))


def _commit_table(trend: tr.Trend, plain: bool) -> Table:
    table = Table(title=trend.series.case_id, box=box.SIMPLE if plain else box.ROUNDED,
                  header_style="bold", title_justify="left")  # fmt: skip
    for col in ("commit", "date", "subject", "runs", "median", "95% CI", "vs previous",
                "configuration"):  # fmt: skip
        table.add_column(
            col, justify="right" if col in ("runs", "median", "vs previous") else "left"
        )
    starts = {s.index: s for s in trend.fit.steps}
    changes = tr.config_changes(trend.fit)
    previous: float | None = None
    for i, p in enumerate(trend.fit.points):
        change = "-" if previous is None else f"{(p.value_s / previous - 1) * 100:+.1f}%"
        step = starts.get(i)
        style = None if step is None else ("red" if step.kind == "regression" else "green")
        table.add_row(p.label, p.time[:10], Text(p.subject or ""), str(len(p.runs)),
                      format_seconds(p.value_s), f"{format_seconds(p.low_s)} – {format_seconds(p.high_s)}",
                      Text(change, style=style or ""), _config_cell(p, changes.get(i)))  # fmt: skip
        previous = p.value_s
    return table


def _config_cell(point: tr.CommitPoint, change: str | None) -> Text:
    """The configuration a commit's runs ran with; where it differs from the commit before,
    what changed (`configuration changed: reps=1 -> reps=8`) after it."""
    cell = Text(tr.config_text(point))
    if change is not None:
        cell.append(f" · {change}", style="yellow")
    return cell


def _config_notes(trends: Sequence[tr.Trend]) -> list[str]:
    """A line for each point whose configuration differs from the point before it: the
    summary table marks only the steps there, while `-v` shows every point's."""
    notes: list[str] = []
    for t in trends:
        for i, change in tr.config_changes(t.fit).items():
            notes.append(
                f"{t.series.case_id} on {t.series.device}: {change} at {t.fit.points[i].label}"
            )
    return notes


def show_history(query: HistoryQuery, *, db: Path | None, profile: str | None, verbose: int) -> int:
    """`tile history show`: one line per case (trend, first, latest, steps); -v adds commits."""
    out, _ = make_consoles()
    trends = _trends(query, db=db, profile=profile)
    plain = not out.is_terminal
    for group in tr.op_trends(trends):  # the cases of no op, then one table per op
        emit(out, *refit(_summary_table(group.trends, plain, group), out))
    for note in _config_notes(trends):
        emit(out, Text(f"note: {note}", style="yellow"))
    if verbose:
        for trend in trends:
            emit(out, *refit(_commit_table(trend, plain), out))
    return int(ExitCode.OK)


def _standing(trends: Sequence[tr.Trend]) -> list[tuple[tr.Trend, tr.Step, str | None]]:
    """Every step up that still stands, with what changed in the configuration at it."""
    return [
        (t, step, tr.step_config_change(t.fit, step))
        for t in trends
        for step in t.fit.steps
        if step.kind == "regression" and step.standing
    ]


def show_regressions(query: HistoryQuery, *, db: Path | None, profile: str | None) -> int:
    """`tile history regressions`: steps up that still stand at the latest commit; exit 1 if
    there is one, like `tile compare`. A step at a configuration change says so in a column
    of its own (shown only then): the new values, not the code, may be what slowed it."""
    out, err = make_consoles()
    trends = _trends(query, db=db, profile=profile)
    found = _standing(trends)
    at_change = sum(1 for _, _, change in found if change is not None)
    columns = ["case", "device", "last fast", "first slow", "subject", "before", "after",
               "change", "noise", "carried by"]  # fmt: skip
    if at_change:
        columns.append("configuration")
    table = _table(columns, not out.is_terminal)
    for t, step, change in found:
        before, after = t.fit.points[step.index - 1], t.fit.points[step.index]
        config = [Text(change or "-", style="yellow" if change else "dim")] if at_change else []
        table.add_row(Text(t.series.case_id), t.series.device, before.label,
                      after.label, Text(after.subject or ""), format_seconds(step.before_s),
                      format_seconds(step.after_s), Text(f"{step.change * 100:+.1f}%", style="red"),
                      f"±{t.fit.noise * 100:.1f}%",
                      Text(tr.step_carrier(t.fit, step) or "-"), *config)  # fmt: skip
    commits = sum(len(t.fit.points) for t in trends)
    if found:
        emit(out, *refit(table, out))
    said = f"; {at_change} at a configuration change" if at_change else ""
    err.print(
        f"{len(found)} regression(s) in {len(trends)} series over {commits} commit points "
        f"(steps of at least {query.min_change * 100:g}% beyond the noise between runs){said}",
        markup=False,
    )
    return int(ExitCode.FAILED if found else ExitCode.OK)
