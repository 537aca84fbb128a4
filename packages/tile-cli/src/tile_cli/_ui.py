"""What the user sees: live progress on stderr, result tables on stdout."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence
from itertools import groupby
from typing import Any

from rich import box
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

import tile_protocol as tp
from tile_cli._escape import escape_controls, install_escaping
from tile_cli._format import fmt_pct, fmt_rate, fmt_ratio, fmt_time

__all__ = [
    "Ui",
    "accounting_table",
    "bench_tables",
    "diagnostic_lines",
    "make_consoles",
    "test_table",
    "timing_line",
]


def make_consoles() -> tuple[Console, Console]:
    """(stdout for data, stderr for diagnostics); NO_COLOR and non-TTYs give plain text."""
    no_color = bool(os.environ.get("NO_COLOR"))
    # Piped output is read by scripts and logs: never wrap it at 80 columns.
    width = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 240
    out = Console(file=sys.stdout, no_color=no_color, highlight=False, width=width)
    err_width = None if sys.stderr.isatty() or os.environ.get("COLUMNS") else 240
    err = Console(file=sys.stderr, no_color=no_color, highlight=False, width=err_width)
    install_escaping((out, err))
    return out, err


class Ui:
    """Progress bar while a suite runs (only on a terminal), and one-line notices."""

    def __init__(self, err: Console, *, verbose: int = 0, quiet: bool = False) -> None:
        self.err = err
        self.verbose = verbose
        self.quiet = quiet
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    def start(self, total: int, label: str) -> None:
        if self.quiet or not self.err.is_terminal:
            return
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[case]}"),
            console=self.err,
            transient=True,
        )
        self._progress.start()
        self._task = self._progress.add_task(label, total=total, case="")

    def case(self, case_id: str) -> None:
        if self._progress is not None and self._task is not None:
            # The live bar is drawn past the consoles' escaping hook: escape the id here.
            self._progress.update(self._task, case=escape_controls(case_id))

    def advance(self) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.advance(self._task)

    def stop(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def notice(self, text: str, style: str = "yellow") -> None:
        """A line above the progress bar; without one, the end-of-run summary says it."""
        if self._progress is not None:
            self._progress.console.print(Text(text, style=style))


def _table(title: str, columns: Sequence[str], plain: bool) -> Table:
    table = Table(
        title=title,
        title_justify="left",
        box=box.SIMPLE if plain else box.ROUNDED,
        header_style="bold",
    )
    for i, col in enumerate(columns):
        table.add_column(col, justify="left" if i == 0 else "right", no_wrap=i == 0)
    return table


def _ok_cell(check: tp.Check | None) -> Text:
    if check is None:
        return Text("-", style="dim")
    return Text("✓", style="green") if check.passed else Text("✗", style="bold red")


def _short_id(case_id: str, kernel: str) -> str:
    return case_id[len(kernel) :] if case_id.startswith(kernel) else case_id


def bench_tables(results: Iterable[tp.BenchResult], *, verbose: int, plain: bool) -> list[Table]:
    """One table per kernel: time, CI, throughput, reference, speedup, roofline, check."""
    tables: list[Table] = []
    ordered = sorted(results, key=lambda r: r.kernel)
    for kernel, group in groupby(ordered, key=lambda r: r.kernel):
        cols = ["case", "time", "±CI", "GB/s", "TFLOP/s", "ref time", "speedup", "%peak"]
        cols += ["bound", "ok"]
        if verbose >= 1:
            cols += ["n", "stop", "timer", "compile"]
        if verbose >= 2:
            cols += ["p5", "p95", "MAD", "outliers"]
        table = _table(kernel, cols, plain)
        for r in group:
            s = r.stats
            ci = (
                f"±{(s.ci_high - s.ci_low) / 2 / s.median * 100:.1f}%"
                if s.ci_low is not None and s.ci_high is not None and s.median > 0
                else "-"
            )
            ok = r.check is None or r.check.passed
            ref = r.reference
            pct = _pct_peak(r.roofline)
            row: list[str | Text] = [
                Text(_short_id(r.case_id, r.kernel)),
                fmt_time(s.median),
                ci,
                fmt_rate(r.throughput.gbps),
                fmt_rate(r.throughput.tflops),
                fmt_time(ref.stats.median) if ref is not None and ref.stats is not None else "-",
                fmt_ratio(ref.speedup) if ref is not None and ok else "-",
                fmt_pct(pct),
                r.roofline.bound if r.roofline.bound != "unknown" else "-",
                _ok_cell(r.check),
            ]
            if verbose >= 1:
                row += [str(s.n), s.stop_reason or "-", r.timer, fmt_time(r.phases.compile_s)]
            if verbose >= 2:
                outl = f"{s.outliers_mild}+{s.outliers_severe}"
                row += [fmt_time(s.p5), fmt_time(s.p95), fmt_time(s.mad), outl]
            table.add_row(*row)
        tables.append(table)
    return tables


def _pct_peak(roof: tp.Roofline) -> float | None:
    values = [v for v in (roof.pct_peak_bw, roof.pct_peak_flops) if v is not None]
    return max(values) if values else None


def test_table(results: Iterable[tp.TestResult], *, plain: bool) -> Table:
    """One row per checked case: errors against the tolerance."""
    table = _table("tests", ["case", "max abs err", "rel L2 err", "tol", "ok"], plain)
    for r in results:
        c = r.check
        table.add_row(
            Text(r.case_id),
            f"{c.max_abs_err:.3g}" if c.max_abs_err is not None else "-",
            f"{c.rel_l2_err:.3g}" if c.rel_l2_err is not None else "-",
            f"{c.tol:.3g}" if c.tol is not None else "-",
            _ok_cell(c),
        )
    return table


_PARTS = (
    ("inputs", "inputs_s"),
    ("compile", "compile_s"),
    ("ref compile", "reference_compile_s"),
    ("check", "check_s"),
    ("warm-up", "warmup_s"),
    ("sample", "sample_s"),
    ("ref sample", "reference_sample_s"),
    ("other", "other_s"),
)


def accounting_table(
    results: Iterable[tp.BenchResult | tp.TestResult], *, plain: bool
) -> Table | None:
    """Where each case's wall time went in the runner (`-v`); None when no result says."""
    rows = [r for r in results if r.accounting is not None]
    if not rows:
        return None
    table = _table("time accounting", ["case", "total", *(name for name, _ in _PARTS)], plain)
    for r in rows:
        a = r.accounting
        assert a is not None
        table.add_row(
            Text(r.case_id), fmt_time(a.total_s), *(fmt_time(getattr(a, f)) for _, f in _PARTS)
        )
    return table


def timing_line(timing: Any) -> str:
    """One line: the run's wall time against starting, compiling and sampling (`-v`)."""
    ratio = timing.overhead_ratio
    return (
        f"wall {fmt_time(timing.wall_s)}: runner start {fmt_time(timing.runner_start_s)}, "
        f"compile {fmt_time(timing.compile_s)}, sampled {fmt_time(timing.sampled_s)}; "
        f"overhead ratio {'-' if ratio is None else f'{ratio:.2f}'} "
        "(wall / (start + compile + sampled))"
    )


def diagnostic_lines(logs: Sequence[tp.Log], *, limit: int = 20) -> list[str]:
    """The runners' warnings and errors for the end of a run: each distinct line once with
    its count, at most `limit` of them (a runner that warns 200,000 times must not bury the
    results, nor take a minute to print)."""
    counts: dict[tuple[str, str], int] = {}
    for log in logs:
        key = (log.level, log.message)
        counts[key] = counts.get(key, 0) + 1
    lines = [
        f"{level}: {message}" + (f" (×{count})" if count > 1 else "")
        for (level, message), count in list(counts.items())[:limit]
    ]
    hidden = sum(list(counts.values())[limit:])
    if hidden:
        lines.append(f"… and {hidden} more warning(s) or error(s): see events.jsonl")
    return lines
