"""The result tables of `tile bench|test` (and `-v`'s time accounting), fit to the console.

Every planned case has a row, also one that raised, crashed or hung (its time cell says so),
so that a failure is seen where the numbers are. A median whose CI stayed wider than the
target precision is flagged `⚠` in its ±CI cell, and `precision_notice` says what to do; a
%peak above a roof by more than the CI is flagged `‼` (`impossible_notice`), and on a CPU
without peaks `roofline_legend` says why %peak and bound are empty.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from rich.console import RenderableType
from rich.text import Text

import tile_protocol as tp
from tile_artifacts.check import IMPOSSIBLE
from tile_cli.terminal._layout import Column, fit_tables
from tile_harness import CPU_NO_PEAKS, CPU_PEAKS_HINT, beyond_roof
from tile_protocol.format import (
    PRECISION_HINT,
    format_ci_pct,
    format_config,
    format_percent,
    format_rate,
    format_ratio,
    format_seconds,
    missed_precision,
)

__all__ = [
    "BenchRows",
    "accounting_tables",
    "bench_tables",
    "config_notes",
    "impossible_notice",
    "precision_notice",
    "roofline_legend",
    "test_tables",
]

FLAG = "⚠"
_FAILED_WORD = {"RunnerCrash": "crashed", "RunnerTimeout": "timed out"}


@dataclass(frozen=True)
class BenchRows:
    """What the bench tables show: results, cases that failed, the plan's order and target."""

    results: Sequence[tp.BenchResult]
    failures: Sequence[tp.Failure]
    planned: Sequence[tp.CaseInfo]
    target_precision: float | None
    backend: str | None = None


def _ok_cell(check: tp.Check | None) -> Text:
    if check is None:
        return Text("-", style="dim")
    return Text("✓", style="green") if check.passed else Text("✗", style="bold red")


def _short_id(case_id: str, kernel: str) -> str:
    return case_id[len(kernel) :] if case_id.startswith(kernel) else case_id


def _pct_peak(roof: tp.Roofline) -> float | None:
    values = [v for v in (roof.pct_peak_bw, roof.pct_peak_flops) if v is not None]
    return max(values) if values else None


def impossible(result: tp.BenchResult) -> bool:
    """Whether the case is above a roof by more than its CI (the rule of the run's finding)."""
    roof, s = result.roofline, result.stats
    measured = roof.peak_source == "calibrated"
    return any(
        beyond_roof(pct, s.median, s.ci_high, measured=measured) is not None
        for pct in (roof.pct_peak_bw, roof.pct_peak_flops)
    )


def _peak_cell(result: tp.BenchResult) -> str | Text:
    pct = format_percent(_pct_peak(result.roofline))
    return Text(f"{pct} {IMPOSSIBLE}", style="bold red") if impossible(result) else pct


def missed(result: tp.BenchResult, target: float | None) -> bool:
    """Whether the case's median is less precise than the target asked for."""
    s = result.stats
    return missed_precision(s.ci_low, s.ci_high, s.median, target, s.stop_reason)


def _bench_columns(verbose: int, *, config: bool = False) -> list[Column]:
    """The bench table's columns; `config`: a column for the tunable values each case ran."""
    names = ["time", "±CI", "GB/s", "TFLOP/s", "ref time", "speedup", "%peak", "bound", "ok"]
    if verbose >= 1:
        names += ["n", "stop", "timer", "compile"]
    if verbose >= 2:
        names += ["p5", "p95", "MAD", "outliers"]
    first = [Column("case", "left"), *([Column("config", "left")] if config else [])]
    return [*first, *(Column(n) for n in names)]


def _result_row(
    r: tp.BenchResult, verbose: int, target: float | None, *, config: bool = False
) -> list[str | Text]:
    s = r.stats
    ci = format_ci_pct(s.ci_low, s.ci_high, s.median)
    ci_cell = Text(f"{ci} {FLAG}", style="yellow") if missed(r, target) else Text(ci)
    ok = r.check is None or r.check.passed
    ref = r.reference
    row: list[str | Text] = [
        Text(_short_id(r.case_id, r.kernel)),
        *([Text(format_config(r.config))] if config else []),
        format_seconds(s.median),
        ci_cell,
        format_rate(r.throughput.gbps),
        format_rate(r.throughput.tflops),
        format_seconds(ref.stats.median) if ref is not None and ref.stats is not None else "-",
        format_ratio(ref.speedup) if ref is not None and ok else "-",
        _peak_cell(r),
        r.roofline.bound if r.roofline.bound != "unknown" else "-",
        _ok_cell(r.check),
    ]
    if verbose >= 1:
        row += [str(s.n), s.stop_reason or "-", r.timer, format_seconds(r.phases.compile_s)]
    if verbose >= 2:
        outl = f"{s.outliers_mild}+{s.outliers_severe}"
        row += [format_seconds(s.p5), format_seconds(s.p95), format_seconds(s.mad), outl]
    return row


def _failed_row(
    info: tp.CaseInfo, failure: tp.Failure, columns: Sequence[Column]
) -> list[str | Text]:
    """A row for a case without a result: its time cell says what happened, its ok cell ✗."""
    word = _FAILED_WORD.get(failure.error_type, "raised")
    if failure.status == "skipped":
        word = "skipped"
    cells: dict[str, str | Text] = {
        "case": Text(_short_id(info.case_id, info.kernel)),
        "time": Text(word, style="dim" if word == "skipped" else "bold red"),
        "ok": Text("-", style="dim") if word == "skipped" else Text("✗", style="bold red"),
    }
    return [cells.get(c.header, "-") for c in columns]


def bench_tables(
    rows: BenchRows,
    *,
    verbose: int,
    plain: bool,
    width: int,
    kernels: Collection[str] | None = None,
) -> list[RenderableType]:
    """One table per kernel (folded to `width`), in the plan's order (the order the live
    screen shows them in as each kernel ends): a row per planned case, failed ones too.
    `kernels`: only those kernels' tables (None: every kernel's)."""
    by_id = {r.case_id: r for r in rows.results}
    failed = {f.case_id: f for f in rows.failures if f.case_id is not None}
    planned = list(rows.planned) or [
        tp.CaseInfo(case_id=r.case_id, kernel=r.kernel) for r in rows.results
    ]
    tables: list[RenderableType] = []
    by_kernel: dict[str, list[tp.CaseInfo]] = {}
    for info in planned:
        by_kernel.setdefault(info.kernel, []).append(info)
    for kernel, infos in by_kernel.items():
        if kernels is not None and kernel not in kernels:
            continue
        # A kernel with tunables shows the values each case ran with, and where they came from.
        config = any((r := by_id.get(i.case_id)) is not None and r.config for i in infos)
        columns = _bench_columns(verbose, config=config)
        cells: list[list[str | Text]] = []
        for info in infos:
            result = by_id.get(info.case_id)
            if result is not None:
                cells.append(_result_row(result, verbose, rows.target_precision, config=config))
            elif (failure := failed.get(info.case_id)) is not None:
                cells.append(_failed_row(info, failure, columns))
        if cells:
            tables += fit_tables(kernel, columns, cells, width=width, plain=plain)
    return tables


def precision_notice(rows: BenchRows) -> str | None:
    """One line for stderr when medians missed the target precision, with what to do."""
    target = rows.target_precision
    late = [r for r in rows.results if missed(r, target)]
    if not late or target is None:
        return None
    stops = sorted({r.stats.stop_reason or "unknown" for r in late})
    return (
        f"{FLAG} {len(late)} of {len(rows.results)} cases missed the ±{target * 100:g}% target "
        f"precision (stopped by {', '.join(stops)}): {PRECISION_HINT}"
    )


def impossible_notice(rows: BenchRows) -> str | None:
    """One line for stderr when a %peak cell is flagged: those rates cannot be."""
    wrong = [r for r in rows.results if impossible(r)]
    if not wrong:
        return None
    return (
        f"{IMPOSSIBLE} {len(wrong)} of {len(rows.results)} cases above 100% of a roof of this "
        "machine: the rates are wrong, not fast (the kernel's `bytes=`/`flops=`, a `[machine]` "
        "peak, or a calibration of another device); the run's findings (summary.md) say which"
    )


def config_notes(results: Iterable[tp.BenchResult | tp.TestResult]) -> list[str]:
    """One line for stderr per case whose config cell has a `*`: which values ran and why (a
    default the constraint ruled out, a tuning entry not used)."""
    return [f"* {r.case_id}: {r.config.note}" for r in results if r.config and r.config.note]


def roofline_legend(rows: BenchRows) -> str | None:
    """The line under the tables of a CPU run whose %peak and bound are empty for want of peaks."""
    if rows.backend != "cpu" or all(r.roofline.peak_source for r in rows.results):
        return None
    return f"%peak and bound are `-`: {CPU_NO_PEAKS}; {CPU_PEAKS_HINT}"


def test_tables(
    results: Iterable[tp.TestResult], *, plain: bool, width: int
) -> list[RenderableType]:
    """One row per checked case: errors against the tolerance (and the tunable values each
    case ran with, when any case has them)."""
    results = list(results)
    config = any(r.config for r in results)
    columns = [Column("case", "left"), *([Column("config", "left")] if config else []),
               *(Column(n) for n in ("max abs err", "rel L2 err", "tol", "ok"))]  # fmt: skip
    cells: list[Sequence[str | Text]] = []
    for r in results:
        c = r.check
        cells.append(
            [
                Text(r.case_id),
                *([Text(format_config(r.config))] if config else []),
                f"{c.max_abs_err:.3g}" if c.max_abs_err is not None else "-",
                f"{c.rel_l2_err:.3g}" if c.rel_l2_err is not None else "-",
                f"{c.tol:.3g}" if c.tol is not None else "-",
                _ok_cell(c),
            ]
        )
    return fit_tables("tests", columns, cells, width=width, plain=plain) if cells else []


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


def accounting_tables(
    results: Iterable[tp.BenchResult | tp.TestResult], *, plain: bool, width: int
) -> list[RenderableType]:
    """Where each case's wall time went in the runner (`-v`); none when no result says."""
    cells: list[Sequence[str | Text]] = []
    for r in results:
        a = r.accounting
        if a is not None:
            parts = (format_seconds(getattr(a, f)) for _, f in _PARTS)
            cells.append([Text(r.case_id), format_seconds(a.total_s), *parts])
    if not cells:
        return []
    columns = [Column("case", "left"), Column("total"), *(Column(n) for n, _ in _PARTS)]
    return fit_tables("time accounting", columns, cells, width=width, plain=plain)
