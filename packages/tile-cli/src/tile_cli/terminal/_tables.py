"""The result tables of `tile bench|test` (and `-v`'s time accounting), fit to the console.

Every planned case has a row, also one that raised, crashed or hung (its time cell says so),
so that a failure is seen where the numbers are. A median whose CI stayed wider than the
target precision is flagged `⚠` in its ±CI cell, and `precision_notice` says what to do; a
%peak above a roof by more than the CI is flagged `‼` (`impossible_notice`), and on a CPU
without peaks `roofline_legend` says why %peak and bound are empty.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from rich.console import RenderableType
from rich.text import Text

import tile_protocol as tp
from tile_artifacts.check import IMPOSSIBLE
from tile_artifacts.ops import impl_speedups, op_groups
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
    "one_line",
    "precision_notice",
    "roofline_legend",
    "table_groups",
    "test_tables",
]

FLAG = "⚠"
CAPTURED = "captured from"
"""The column of the program each case was captured from, in a table with such a case."""
_FAILED_WORD = {"RunnerCrash": "crashed", "RunnerTimeout": "timed out"}


@dataclass(frozen=True)
class BenchRows:
    """What the bench tables show: results, cases that failed, the plan's order and target."""

    results: Sequence[tp.BenchResult]
    failures: Sequence[tp.Failure]
    planned: Sequence[tp.CaseInfo]
    target_precision: float | None
    """`[bench] target_precision` as configured (0: the backend's, `target`)."""
    backend: str | None = None

    @property
    def target(self) -> float | None:
        """The target precision the runner applied on `backend`."""
        if self.target_precision is None:
            return None
        return tp.precision_on(self.target_precision, self.backend)


def _ok_cell(check: tp.Check | None) -> Text:
    if check is None:
        return Text("-", style="dim")
    return Text("✓", style="green") if check.passed else Text("✗", style="bold red")


def _short_id(case_id: str, kernel: str) -> str:
    return one_line(case_id[len(kernel) :] if case_id.startswith(kernel) else case_id)


def one_line(text: str) -> str:
    """A case id as one line of a row: a newline in it (user code names cases) split the
    row in two, its values on neither line's case."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


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


def _bench_columns(
    verbose: int, *, config: bool = False, versus: str | None = None, captured: bool = False
) -> list[Column]:
    """The bench table's columns; `config`: a column for the tunable values each case ran;
    `versus`: an op's table, with each implementation's speedup against its baseline;
    `captured`: a column for the program each case was captured from (`--from`)."""
    names = ["time", "±CI", "GB/s", "TFLOP/s", "ref time", "speedup",
             *([versus] if versus else []), "%peak", "bound", "ok"]  # fmt: skip
    if verbose >= 1:
        names += ["n", "stop", "timer", "compile"]
    if verbose >= 2:
        names += ["p5", "p95", "MAD", "outliers"]
    first = [Column("case", "left"), *([Column(CAPTURED, "left")] if captured else []),
             *([Column("config", "left")] if config else [])]  # fmt: skip
    return [*first, *(Column(n) for n in names)]


def _result_row(
    r: tp.BenchResult,
    verbose: int,
    target: float | None,
    *,
    config: bool = False,
    op: tuple[str, str] | None = None,
    captured: bool = False,
) -> list[str | Text]:
    """A measured case's row; `op`: in an op's table, its case cell (the implementation and
    the point) and its speedup against the op's baseline; `captured`: with the program the
    case was captured from (`-` for a case of the kernel's declared axes)."""
    s = r.stats
    ci = format_ci_pct(s.ci_low, s.ci_high, s.median)
    ci_cell = Text(f"{ci} {FLAG}", style="yellow") if missed(r, target) else Text(ci)
    ok = r.check is None or r.check.passed
    ref = r.reference
    row: list[str | Text] = [
        Text(op[0] if op is not None else _short_id(r.case_id, r.kernel)),
        *([Text(one_line(r.captured or "-"))] if captured else []),
        *([Text(format_config(r.config))] if config else []),
        format_seconds(s.median),
        ci_cell,
        format_rate(r.throughput.gbps),
        format_rate(r.throughput.tflops),
        format_seconds(ref.stats.median) if ref is not None and ref.stats is not None else "-",
        format_ratio(ref.speedup) if ref is not None and ok else "-",
        *([op[1]] if op is not None else []),
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
    info: tp.CaseInfo, failure: tp.Failure, columns: Sequence[Column], label: str | None = None
) -> list[str | Text]:
    """A row for a case without a result: its time cell says what happened, its ok cell ✗;
    `label`: its case cell in an op's table."""
    word = _FAILED_WORD.get(failure.error_type, "raised")
    if failure.status == "skipped":
        word = "skipped"
    cells: dict[str, str | Text] = {
        "case": Text(label or _short_id(info.case_id, info.kernel)),
        CAPTURED: Text(one_line(info.captured or "-")),
        "time": Text(word, style="dim" if word == "skipped" else "bold red"),
        "ok": Text("-", style="dim") if word == "skipped" else Text("✗", style="bold red"),
    }
    return [cells.get(c.header, "-") for c in columns]


def table_groups(planned: Sequence[tp.CaseInfo]) -> dict[str, list[tp.CaseInfo]]:
    """The bench tables by title, in the order the plan first names them, each with its rows:
    a kernel's cases under its name, or the cases of every implementation of an op under
    `op NAME` (rows by point, the baseline implementation first: `tile_artifacts.ops`)."""
    ops = {f"op {g.name}": g.cases for g in op_groups(planned)}
    tables: dict[str, list[tp.CaseInfo]] = {}
    for info in planned:
        title = f"op {info.op.name}" if info.op is not None else info.kernel
        if title not in tables:
            tables[title] = ops[title] if info.op is not None else []
        if info.op is None:
            tables[title].append(info)
    return tables


@dataclass(frozen=True)
class _OpTable:
    """An op's table: its baseline implementation (None when not in the run), and each case's
    cell (the implementation, then the point) and speedup against the baseline."""

    base: str | None
    cells: dict[str, tuple[str, str]]

    @property
    def header(self) -> str:
        return f"vs {self.base or 'baseline'}"

    def title(self, title: str) -> str:
        return f"{title} (baseline: {self.base})" if self.base else f"{title} (no baseline run)"


def _op_table(infos: Sequence[tp.CaseInfo], by_id: Mapping[str, tp.BenchResult]) -> _OpTable | None:
    """What an op's table adds to a kernel's; None for a kernel's own table."""
    if not infos or infos[0].op is None:
        return None

    def median(info: tp.CaseInfo) -> float | None:
        r = by_id.get(info.case_id)
        if r is None or (r.check is not None and not r.check.passed):
            return None  # a wrong output has no speedup
        return r.stats.median

    base = next((i.op.impl for i in infos if i.op is not None and i.op.baseline), None)
    speedups = impl_speedups(infos, median)
    wide = max(len(i.op.impl) for i in infos if i.op is not None)
    cells = {
        i.case_id: (
            f"{i.op.impl:<{wide}} {_short_id(i.case_id, i.kernel)}",
            format_ratio(speedups.get(i.case_id)),
        )
        for i in infos
        if i.op is not None
    }
    return _OpTable(base=base, cells=cells)


def bench_tables(
    rows: BenchRows,
    *,
    verbose: int,
    plain: bool,
    width: int,
    kernels: Collection[str] | None = None,
) -> list[RenderableType]:
    """One table per kernel, or per op for kernels that implement one (folded to `width`), in
    the plan's order (the order the live screen shows them in as each ends): a row per planned
    case, failed ones too. `kernels`: only the tables all of whose kernels are among these
    (None: every table)."""
    by_id = {r.case_id: r for r in rows.results}
    failed = {f.case_id: f for f in rows.failures if f.case_id is not None}
    planned = list(rows.planned) or [
        tp.CaseInfo(case_id=r.case_id, kernel=r.kernel, params=r.params, op=r.op)
        for r in rows.results
    ]
    tables: list[RenderableType] = []
    for title, infos in table_groups(planned).items():
        if kernels is not None and not {i.kernel for i in infos} <= set(kernels):
            continue
        # A kernel with tunables shows the values each case ran with, and where they came from.
        config = any((r := by_id.get(i.case_id)) is not None and r.config for i in infos)
        # Cases captured from a program (`--from`, a cases file) say which program.
        captured = any(i.captured for i in infos)
        op = _op_table(infos, by_id)
        columns = _bench_columns(verbose, config=config, versus=op.header if op else None,
                                 captured=captured)  # fmt: skip
        cells: list[list[str | Text]] = []
        for info in infos:
            result = by_id.get(info.case_id)
            mine = op.cells.get(info.case_id) if op is not None else None
            if result is not None:
                cells.append(_result_row(result, verbose, rows.target, config=config,
                                         op=mine, captured=captured))  # fmt: skip
            elif (failure := failed.get(info.case_id)) is not None:
                cells.append(_failed_row(info, failure, columns, mine[0] if mine else None))
        if cells:
            name = op.title(title) if op is not None else title
            tables += fit_tables(name, columns, cells, width=width, plain=plain)
    return tables


def precision_notice(rows: BenchRows) -> str | None:
    """One line for stderr when medians missed the target precision, with what to do."""
    target = rows.target
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
        "machine: not rates that roof allows (data a warm cache held, the kernel's "
        "`bytes=`/`flops=`, a `[machine]` peak, or a calibration of another device); the run's "
        "findings (summary.md) say which"
    )


def config_notes(results: Iterable[tp.BenchResult | tp.TestResult]) -> list[str]:
    """One line for stderr per case whose config cell has a `*`: which values ran and why (a
    default the constraint ruled out, a tuning entry not used). Cases with the same note share
    one line naming their kernels: on a device a package ships no tuning for, every tunable
    case of it says the same."""
    by_note: dict[str, list[str]] = {}
    for r in results:
        if r.config and r.config.note:
            by_note.setdefault(r.config.note, []).append(r.case_id)
    lines: list[str] = []
    for note, ids in by_note.items():
        if len(ids) == 1:
            lines.append(f"* {ids[0]}: {note}")
        else:
            kernels = ", ".join(dict.fromkeys(i.partition("[")[0] for i in ids))
            lines.append(f"* {len(ids)} cases of {kernels}: {note}")
    return lines


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
    captured = any(r.captured for r in results)
    columns = [Column("case", "left"), *([Column(CAPTURED, "left")] if captured else []),
               *([Column("config", "left")] if config else []),
               *(Column(n) for n in ("max abs err", "rel L2 err", "tol", "ok"))]  # fmt: skip
    cells: list[Sequence[str | Text]] = []
    for r in results:
        c = r.check
        cells.append(
            [
                Text(one_line(r.case_id)),
                *([Text(one_line(r.captured or "-"))] if captured else []),
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
            cells.append([Text(one_line(r.case_id)), format_seconds(a.total_s), *parts])
    if not cells:
        return []
    columns = [Column("case", "left"), Column("total"), *(Column(n) for n, _ in _PARTS)]
    return fit_tables("time accounting", columns, cells, width=width, plain=plain)
