"""What a finished `tile bench|test` prints: tables on stdout, failures and hints on stderr.

Each failure gets the hint for what happened to it: a kernel that raised is not a runner
killed by SIGSEGV (native code), nor one killed by SIGKILL (most often out of memory), nor
one that hung. `-vv` adds each failure's traceback (a crash's: the runner's stderr tail).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import tile_protocol as tp
from tile_artifacts._format import check_failure_reason
from tile_cli._layout import emit
from tile_cli._tables import BenchRows, accounting_tables, bench_tables, precision_notice
from tile_cli._tables import test_tables as make_test_tables
from tile_cli._ui import diagnostic_lines, timing_line

if TYPE_CHECKING:
    from rich.console import Console

    import tile_artifacts as ta
    from tile_cli._record import RunRecorder

__all__ = ["failure_hints", "render_results", "render_timing"]

_RAISED_PHASES = frozenset({"inputs", "compile", "run", "reference", "check", "work"})
_NATIVE = frozenset({"SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGABRT"})
_RUNNER = frozenset({"RunnerCrash", "RunnerTimeout", "RunnerError"})
_SIGNAL = re.compile(r"killed by (SIG[A-Z]+)")


def _signal_of(failure: tp.Failure) -> str | None:
    match = _SIGNAL.search(failure.message)
    return match.group(1) if match else None


def failure_hints(failures: Sequence[tp.Failure]) -> list[str]:
    """One hint per kind of failure seen, saying what to do next."""
    phases = {f.phase for f in failures}
    # A runner that died before its first case is a startup failure, not a case's crash.
    crashes = [f for f in failures if f.error_type == "RunnerCrash" and f.case_id]
    signals = {s for f in crashes if (s := _signal_of(f)) is not None}
    rerun = "rerun it alone with `tile bench --case ID --isolate`"
    hints: list[str] = []
    if "import" in phases:
        hints.append(
            "a kernel module did not import: check `[project] modules`/`paths` in tile.toml "
            "(modules import with the project root on sys.path; install a packaged project "
            "with `pip install -e .`), or run `tile list` to see what loads"
        )
    if "startup" in phases:
        hints.append(
            "the runner did not start: check that `[runner] python` (or TILE_RUNNER_PYTHON) "
            "has tile-runner installed and that `[runner] env` / XLA_FLAGS are valid; its "
            "stderr is in `logs/runner-1.stderr.log` of the run directory"
        )
    if native := sorted(signals & _NATIVE):
        hints.append(
            f"the runner crashed with {', '.join(native)} in native code: an out-of-bounds "
            "access in a Pallas kernel, a bad custom call or a jaxlib bug; the native stack "
            f"is in its stderr under `logs/` of the run directory (`-vv` shows its end); {rerun}"
        )
    if "SIGKILL" in signals:
        hints.append(
            "the runner was killed by SIGKILL, most often by the out-of-memory killer "
            f"(`dmesg` says); try a smaller case (`-a shape=...`) or {rerun}"
        )
    if any(_signal_of(f) is None for f in crashes):
        hints.append(
            "the runner exited in the middle of a case (`sys.exit`/`os._exit` in a kernel or "
            f"its inputs?); its stderr is under `logs/` of the run directory; {rerun}"
        )
    if any(f.error_type == "RunnerTimeout" and f.case_id for f in failures):
        hints.append(
            "a case said nothing for `case_timeout` seconds (a hang, or a very long compile): "
            "raise `--case-timeout` if it is only slow; its stderr is under `logs/`"
        )
    if any(f.phase in _RAISED_PHASES and f.error_type not in _RUNNER for f in failures):
        hints.append(
            "a kernel raised: `-vv` shows its traceback (the whole one is in the runner's "
            "stderr log under `logs/`; report.json's failures hold its end)"
        )
    return hints


def _print_failures(err: Console, recorder: RunRecorder, verbose: int) -> None:
    for index, failure in enumerate(recorder.failures, start=1):
        where = failure.case_id or "(run)"
        err.print(
            f"✗ {where} [{failure.phase}, {failure.status}] {failure.error_type}: "
            f"{failure.message}",
            markup=False,
            style="red",
            soft_wrap=True,
        )
        if verbose >= 2 and failure.traceback:
            launch = recorder.failure_launch.get(index)
            log = os.path.relpath(launch.stderr_log) if launch is not None else None
            cut = failure.traceback.startswith("...")
            err.print(failure.traceback.rstrip(), markup=False, highlight=False, soft_wrap=True)
            if cut and log is not None:
                err.print(f"  (its start is cut here; the whole traceback is in {log})",
                          markup=False, style="dim")  # fmt: skip


def render_results(
    out: Console, err: Console, recorder: RunRecorder, command: str, *, verbose: int
) -> None:
    """The result tables (every planned case a row), then failures, hints and the headline."""
    plain = not out.is_terminal
    # Shards report in whatever order they finish; tables follow the plan.
    order = {c.case_id: i for i, c in enumerate(recorder.planned)}
    bench = sorted(recorder.bench_results, key=lambda r: order.get(r.case_id, len(order)))
    tests = sorted(recorder.test_results, key=lambda r: order.get(r.case_id, len(order)))
    rows = BenchRows(
        results=bench,
        failures=recorder.failures,
        planned=recorder.planned,
        target_precision=recorder.resolved.config.bench.target_precision,
    )
    if command == "bench":
        emit(out, *bench_tables(rows, verbose=verbose, plain=plain, width=out.width))
    elif command == "test" and tests:
        emit(out, *make_test_tables(tests, plain=plain, width=out.width))
    _print_failures(err, recorder, verbose)
    for hint in failure_hints(recorder.failures):
        err.print(f"hint: {hint}", markup=False, soft_wrap=True)
    for result in recorder.failed_checks:
        assert result.check is not None
        err.print(f"✗ {result.case_id}: wrong output: {check_failure_reason(result.check)}",
                  markup=False, style="red", soft_wrap=True)  # fmt: skip
    if command == "bench" and (notice := precision_notice(rows)) is not None:
        err.print(notice, markup=False, style="yellow", soft_wrap=True)
    for line in diagnostic_lines(recorder.diagnostics):
        err.print(line, markup=False, style="yellow", soft_wrap=True)
    err.print(recorder.headline(), markup=False, soft_wrap=True)


def render_timing(
    out: Console, err: Console, recorder: RunRecorder, timing: ta.RunTiming | None
) -> None:
    """`-v`: each case's time accounting, and the run's wall time against what it needed."""
    results: list[tp.BenchResult | tp.TestResult] = [
        *recorder.bench_results,
        *recorder.test_results,
    ]
    emit(out, *accounting_tables(results, plain=not out.is_terminal, width=out.width))
    if timing is not None:
        err.print(timing_line(timing), markup=False, soft_wrap=True)
