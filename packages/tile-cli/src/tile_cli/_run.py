"""`tile list|bench|test`: resolve config, drive runners, record, render, pick the exit code."""

from __future__ import annotations

import json as _json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import tile_protocol as tp
from tile_cli._errors import CliError, ExitCode
from tile_cli._session import Launch, RunnerSession
from tile_cli._settings import Selection, build_request, load, runner_python
from tile_cli._ui import Ui, bench_tables, make_consoles, test_table

if TYPE_CHECKING:
    from rich.console import Console

    from tile_cli._record import RunRecorder

__all__ = ["ask_runner", "list_cases", "run_suite"]


class _Collect:
    """A sink that only keeps what a plan-only run says (for `tile list`)."""

    def __init__(self) -> None:
        self.plan: tp.Plan | None = None
        self.failures: list[tp.Failure] = []
        self.hello: tp.Hello | None = None
        self.device: tp.DeviceReport | None = None

    def on_launch(self, launch: Launch) -> None: ...
    def on_launch_end(self, launch: Launch) -> None: ...
    def on_case_start(self, start: tp.CaseStart) -> None: ...
    def on_noise(self, event: tp.BadLine | tp.UnknownMessage) -> None: ...

    def on_hello(self, hello: tp.Hello) -> None:
        self.hello = hello

    def on_plan(self, plan: tp.Plan) -> None:
        self.plan = plan

    def on_message(self, message: tp.Message) -> None:
        if isinstance(message, tp.Failure):
            self.failures.append(message)
        elif isinstance(message, tp.DeviceReport):
            self.device = message


def ask_runner(
    command: str, sel: Selection, profile: str | None, **fields: object
) -> tuple[_Collect, bool]:
    """Run a runner for a command that measures nothing (list, device); collect its answer."""
    import tempfile

    import msgspec

    resolved = load(profile, sel.overrides)
    request = msgspec.structs.replace(build_request(command, resolved, sel, None), **fields)
    sink = _Collect()
    with tempfile.TemporaryDirectory(prefix=f"tile-{command}-") as tmp:
        session = RunnerSession(
            request,
            python=runner_python(resolved),
            cwd=Path.cwd(),
            env_overrides=resolved.config.runner.env,
            log_dir=Path(tmp),
            sink=sink,
            case_timeout=resolved.config.runner.case_timeout,
        )
        clean = session.run()
    return sink, clean


def list_cases(sel: Selection, *, profile: str | None, as_json: bool) -> int:
    """Print every case the runner would run, grouped by kernel."""
    out, err = make_consoles()
    sink, clean = ask_runner("list", sel, profile)
    cases = sink.plan.cases if sink.plan else []
    if as_json:
        for case in cases:
            print(
                _json.dumps({"case_id": case.case_id, "kernel": case.kernel, "params": case.params})
            )
    else:
        current = None
        for case in cases:
            if case.kernel != current:
                current = case.kernel
                out.print(case.kernel, style="bold", markup=False)
            out.print(f"  {case.case_id}", markup=False)
        err.print(f"{len(cases)} cases", style="dim")
    for failure in sink.failures:
        err.print(f"error: {failure.phase}: {failure.message}", markup=False)
    if not clean or sink.failures:
        return int(ExitCode.INFRA)
    if not cases and (sel.filters or sel.kernels):
        raise CliError("no case matches the filters", hint="run `tile list` to see every case id")
    return int(ExitCode.OK)


def run_suite(
    command: str,
    sel: Selection,
    *,
    profile: str | None,
    output_dir: Path | None,
    as_json: bool,
    verbose: int,
    compare: Path | None = None,
) -> int:
    """Run bench or test over every selected case; always leave a complete run directory."""
    from tile_cli._record import RunRecorder, open_run_directory

    out, err = make_consoles()
    resolved = load(profile, sel.overrides)
    run_dir, writer = open_run_directory(command, resolved, output_dir)
    request = build_request(command, resolved, sel, run_dir)
    ui = Ui(err, verbose=verbose, quiet=as_json)
    recorder = RunRecorder(
        command, resolved, writer, run_dir, ui=ui, stream_json=as_json, argv=sys.argv
    )
    recorder.filtered = bool(sel.filters or sel.kernels or sel.case_ids)
    session = RunnerSession(
        request,
        python=runner_python(resolved),
        cwd=Path.cwd(),
        env_overrides=resolved.config.runner.env,
        log_dir=run_dir / "logs",
        sink=recorder,
        case_timeout=resolved.config.runner.case_timeout,
        isolate=resolved.config.runner.isolate,
    )
    interrupted: str | None = None
    try:
        session.run()
    except KeyboardInterrupt:
        interrupted = "interrupted by Ctrl-C"
        session.stop()
    except BaseException as exc:
        if type(exc).__name__ == "_Terminated":
            interrupted = "terminated by SIGTERM"
            session.stop()
        else:
            ui.stop()
            recorder.finalize(error=str(exc) if isinstance(exc, CliError) else repr(exc))
            raise
    finally:
        ui.stop()
    _, comparison = recorder.finalize(
        interrupted=interrupted, compare_with=compare if interrupted is None else None
    )
    _render(out, err, recorder, command, verbose=verbose, as_json=as_json)
    code = _exit_code(recorder, interrupted)
    if comparison is not None:
        from tile_cli._compare import comparison_exit_code, render_comparison

        if not as_json:
            render_comparison(comparison, out, plain=not out.is_terminal)
        if code == ExitCode.OK:
            code = comparison_exit_code(comparison, fail_on_inconclusive=False)
    if not as_json:
        err.print(f"run directory: {_display(run_dir)}", markup=False, style="dim")
    return code


def _display(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _render(
    out: Console, err: Console, recorder: RunRecorder, command: str, *, verbose: int, as_json: bool
) -> None:
    if as_json:
        return
    plain = not out.is_terminal
    if command == "bench":
        for table in bench_tables(recorder.bench_results, verbose=verbose, plain=plain):
            out.print(table)
    elif command == "test" and recorder.test_results:
        out.print(test_table(recorder.test_results, plain=plain))
    for failure in recorder.failures:
        where = failure.case_id or "(run)"
        err.print(
            f"✗ {where} [{failure.phase}, {failure.status}] {failure.error_type}: "
            f"{failure.message}",
            markup=False,
            style="red",
        )
    for result in recorder.failed_checks:
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
    for log in recorder.diagnostics:
        err.print(f"{log.level}: {log.message}", markup=False, style="yellow")
    err.print(recorder.headline(), markup=False)


def _exit_code(recorder: RunRecorder, interrupted: str | None) -> int:
    if interrupted is not None:
        return int(ExitCode.TERMINATED if "SIGTERM" in interrupted else ExitCode.INTERRUPTED)
    if recorder.failures:
        return int(ExitCode.INFRA)
    if recorder.failed_checks:
        return int(ExitCode.FAILED)
    if not recorder.planned:
        raise CliError(
            "no case matches the filters" if recorder.filtered else "no kernels found",
            hint="run `tile list` to see every case id"
            if recorder.filtered
            else "add `[project] modules = [...]` or `paths = [...]` to tile.toml, or run "
            "`tile init NAME` to start a project",
        )
    return int(ExitCode.OK)
