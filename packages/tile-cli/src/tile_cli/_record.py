"""Turn the protocol stream into an Artifact Format v1 run directory, as it happens.

Events, metrics and command records are appended the moment they are known, and a
report-in-progress is checkpointed after every case (`_checkpoint.py`), so a run that is
killed, even by SIGKILL, leaves a directory that validates with everything it measured; the
final report, summary and manifest are written by `finalize` (also on Ctrl-C and SIGTERM).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

import tile_protocol as tp
from tile_cli import _signals as signals
from tile_cli._checkpoint import Checkpoints
from tile_cli._errors import CliError, ExitCode
from tile_cli._invalid import invalid_failure, result_problem
from tile_cli._runlog import RunLog
from tile_cli._session import Launch
from tile_cli._telemetry import write_snapshots

if TYPE_CHECKING:
    import tile_artifacts as ta
    from tile_cli._compare import CompareSettings
    from tile_cli._outcome import Outcome
    from tile_cli._ui import Ui
    from tile_config import ResolvedConfig

__all__ = ["RunRecorder", "open_run_directory", "tool_version"]

_FORGED = "lines the runner did not send reached its pipe"

TOOL = "tile"


def tool_version() -> str:
    """Version of the installed tile-cli."""
    try:
        return version("tile-cli")
    except PackageNotFoundError:
        return "0+unknown"


def open_run_directory(
    command: str, resolved: ResolvedConfig, output_dir: Path | None
) -> tuple[Path, ta.ArtifactWriter]:
    """Create the run directory (and `.tile/latest`); refuse an unusable location clearly."""
    import tile_artifacts as ta

    run_id = ta.new_run_id(command)
    redactor = ta.Redactor.for_run(
        environ=os.environ,
        settings=resolved.config.runner.env,
        config_text=resolved.raw_text,
        argv=sys.argv,
    )
    if output_dir is not None:
        run_dir = output_dir.absolute()
    else:
        run_dir = resolved.resolve_path(resolved.config.output.dir).absolute() / run_id
    producer = ta.producer_info(TOOL, tool_version(), Path.cwd())
    try:
        writer = ta.ArtifactWriter(run_dir, run_id=run_id, producer=producer, redactor=redactor)
    except ta.ArtifactError as exc:
        raise CliError(exc.message, hint=exc.hint, code=ExitCode.USAGE) from None
    # `-o DIR` runs too: `tile baseline save` (and --compare's users) take `.tile/latest`
    # for the run just made; pointing it elsewhere saved an unrelated run as the baseline.
    runs = resolved.resolve_path(resolved.config.output.dir).absolute()
    _point_latest(run_dir, runs.parent if runs.name == "runs" else runs)
    if output_dir is None:
        keep = resolved.config.output.keep
        if keep is not None:
            from tile_cli._keep import prune_runs

            prune_runs(run_dir.parent, keep, run_dir)
    return run_dir, writer


def _point_latest(run_dir: Path, tile_dir: Path) -> None:
    """`.tile/latest` -> the newest run, replaced atomically; best effort."""
    link = tile_dir / "latest"
    tmp = tile_dir / f".latest-{os.getpid()}"
    try:
        tile_dir.mkdir(parents=True, exist_ok=True)
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(os.path.relpath(run_dir, tile_dir))
        tmp.replace(link)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)  # no stray `.latest-<pid>` left behind
        what = "is a directory, not a link" if link.is_dir() and not link.is_symlink() else None
        print(
            f"warning: `{link}` was not updated ({what or exc.strerror or exc}): it does not "
            f"show this run; remove it and it will follow the newest run again",
            file=sys.stderr,
        )


class RunRecorder:
    """The session's sink: keeps results, streams events/metrics to disk, writes the report.

    Thread-safe: the sessions of a sharded run feed one recorder from their own threads.
    """

    def __init__(
        self,
        command: str,
        resolved: ResolvedConfig,
        writer: ta.ArtifactWriter,
        run_dir: Path,
        *,
        ui: Ui,
        stream_json: bool,
        argv: list[str],
    ) -> None:
        self.command = command
        self.resolved = resolved
        self.writer = writer
        self.run_dir = run_dir
        self.run_id = writer.run_id
        self.ui = ui
        self.stream_json = stream_json
        self.argv = argv
        self.started = time.monotonic()
        self.hello: tp.Hello | None = None
        self.planned: list[tp.CaseInfo] = []
        self.bench_results: list[tp.BenchResult] = []
        self.test_results: list[tp.TestResult] = []
        self.build_results: list[tp.BuildResult] = []
        self.failures: list[tp.Failure] = []
        self.failure_launch: dict[int, Launch] = {}
        self.artifacts: list[tp.Artifact] = []
        self.input_files: dict[str, str] = {}
        self.diagnostics: list[tp.Log] = []
        self.jax_cache_logs: list[tp.Log] = []
        """The runners' cache events (`log` messages `jax_cache {...}`, `--cache-report`)."""
        self.before_final: list[Callable[[ta.Report], None]] = []
        """Called with the report just before report.json and the manifest are written."""
        self.launches: list[Launch] = []
        self.findings: list[ta.Finding] = []
        """Observations a command adds to its report (e.g. `tile tune`'s winners)."""
        self.runner_start_s = 0.0
        """Seconds from spawning each runner to its `hello`, summed over runners."""
        self.filtered = False
        """Whether filters, `--case` or `-a` chose the cases (not every case of every kernel)."""
        self.outcome: Outcome | None = None
        """The exit code and why, once `finalize(judge=True)` decided it."""
        self.slurm_job_id: str | None = None
        """For the report context: the allocation's job id or the shards' ids, comma-separated."""
        self.invalid: dict[str, str] = {}
        """Cases whose result could not be recorded, and why (they are `invalid`)."""
        self._lock = threading.RLock()
        # The runner each thread's session is on, to tie its failures to its stderr log.
        self._current: dict[int, Launch] = {}
        self.log = RunLog(writer, on_fault=self._on_write_fault)
        self.report_saved = False
        """After a failed write: whether the final report.json was written all the same."""
        from tile_cli._telemetry import ClockWatch

        self.telemetry = resolved.config.telemetry
        self.clocks = ClockWatch(writer, self.telemetry)
        self.checkpoints = Checkpoints(self)
        """The report-in-progress, rewritten after every case (SIGKILL leaves it valid)."""
        self._event("info", "run", "run_started", f"tile {command} started", argv=argv)
        self.log.write(lambda: write_snapshots(writer, resolved))
        self.checkpoints.write()
        self.clocks.start()

    # ---------------------------------------------------------------- derived

    @property
    def failed_checks(self) -> list[tp.BenchResult | tp.TestResult]:
        """Results whose output did not match the reference."""
        results: list[tp.BenchResult | tp.TestResult] = [*self.bench_results, *self.test_results]
        return [r for r in results if r.check is not None and not r.check.passed]

    def headline(self) -> str:
        """One sentence: how many cases, how many ok, what went wrong, how long."""
        # A case the runner sent an invalid message about is not ok, even with a valid result.
        invalid = {f.case_id for f in self.failures if f.status == "invalid"}
        checked = [r for r in self.failed_checks if r.case_id not in invalid]
        built = [r for r in self.build_results if r.case_id not in invalid]
        done = sum(r.case_id not in invalid for r in (*self.bench_results, *self.test_results))
        done += len(built)
        bad = len(checked) + sum(not r.ok for r in built)
        parts = [f"{len(self.planned)} cases", f"{done - bad} ok"]
        if bad:
            parts.append(f"{bad} failed check{'s' if bad != 1 else ''}")
        # Cases no runner reached are counted as not run, not as failures (_undone.py).
        failures = [f for f in self.failures if f.error_type != "NotRun"]
        if failures:
            parts.append(f"{len(failures)} failure{'s' if len(failures) != 1 else ''}")
        blamed = {f.case_id for f in failures if f.case_id is not None}
        ran = {r.case_id for r in (*self.bench_results, *self.test_results, *self.build_results)}
        not_run = sum(c.case_id not in ran and c.case_id not in blamed for c in self.planned)
        if not_run > 0:
            parts.append(f"{not_run} not run")
        elapsed = time.monotonic() - self.started
        return f"tile {self.command}: " + ", ".join(parts) + f" in {elapsed:.1f} s"

    def timing(self) -> ta.RunTiming:
        """The run's wall time against what it had to spend: starting, compiling, sampling."""
        import tile_artifacts as ta

        results: list[tp.BenchResult | tp.TestResult] = [*self.bench_results, *self.test_results]
        fields = list(ta.Accounting.model_fields)
        sums = dict.fromkeys(fields, 0.0)
        for result in results:
            if result.accounting is not None:
                for name in fields:
                    sums[name] += float(getattr(result.accounting, name))
        compile_s = sums["compile_s"] + sums["reference_compile_s"]
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
            parts=ta.Accounting(**sums),
        )

    # ---------------------------------------------------------------- sink

    def on_launch(self, launch: Launch) -> None:
        with self._lock:
            self._current[threading.get_ident()] = launch
            self.launches.append(launch)
            self._event("info", "runner", "runner_started", f"runner {launch.index} started",
                        args=launch.args, case_ids=launch.case_ids)  # fmt: skip
            self._command(launch, started=True)

    def on_launch_end(self, launch: Launch) -> None:
        with self._lock:
            self._launch_end(launch)

    def on_slurm_job(self, launch: Launch, job_id: str) -> None:
        """Note the SLURM job a runner ran in (found by its job name)."""
        with self._lock:
            self._event("info", "runner", "slurm_job", f"runner {launch.index} is SLURM job "
                        f"{job_id}", command_id=launch_id(launch), job_id=job_id)  # fmt: skip

    def _command(self, launch: Launch, *, started: bool = False) -> None:
        """A runner in commands.jsonl: `incomplete` when it starts (a kill then leaves it
        there), its final record when it ends; readers take each command's last line."""
        if not self.telemetry.commands:
            return
        self.log.command(
            launch_id(launch),
            launch.args,
            cwd=launch.cwd,
            status="incomplete" if started else launch.status,  # type: ignore[arg-type]
            phase=launch.phase,
            environment_overrides=launch.env_overrides,
            stderr_log=os.path.relpath(launch.stderr_log, self.run_dir),
            return_code=launch.return_code,
            signal=_signal_name(launch.signal),
            started_at=launch.started_at,
            finished_at=launch.finished_at,
        )

    def _launch_end(self, launch: Launch) -> None:
        # The runner wrote its stderr itself: hide the run's secrets in it now it is closed.
        self.log.write(lambda: self.writer.scrub(os.path.relpath(launch.stderr_log, self.run_dir)))
        self._command(launch)
        self._event(
            "info" if launch.status == "success" else "error",
            "runner",
            "runner_exited",
            f"runner {launch.index} ended: {launch.status}"
            + (f" ({launch.reason})" if launch.reason else ""),
            return_code=launch.return_code,
            signal=launch.signal,
        )

    def on_hello(self, hello: tp.Hello) -> None:
        with self._lock:
            launch = self._current.get(threading.get_ident())
            if launch is not None:
                started = (datetime.now(UTC) - launch.started_at).total_seconds()
                self.runner_start_s += max(0.0, started)
            if self.hello is None:
                self.hello = hello
                self._event("info", "runner", "hello",
                            f"runner {hello.runner_version} on {hello.backend}",
                            **msgspec.to_builtins(hello))  # fmt: skip
                self._header(hello)
            self._echo(hello)

    def _header(self, hello: tp.Hello) -> None:
        """Name the device and the sampling settings before the first number (bench only)."""
        if self.command != "bench" or self.stream_json:
            return
        from tile_cli._header import bench_header

        self.ui.err.print(bench_header(hello, self.resolved.config.bench), markup=False,
                          style="dim")  # fmt: skip

    def on_plan(self, plan: tp.Plan) -> None:
        with self._lock:
            self.planned = list(plan.cases)
            self._event("info", "plan", "plan", f"{len(plan.cases)} cases planned",
                        case_ids=[c.case_id for c in plan.cases])  # fmt: skip
            self.ui.start(len(plan.cases), f"tile {self.command}")
            self._echo(plan)
            self.checkpoints.write()

    def on_case_start(self, start: tp.CaseStart) -> None:
        with self._lock:
            label = (
                start.case_id if start.round is None else f"{start.case_id}, round {start.round}"
            )
            self.ui.case(label)
            fields: dict[str, Any] = {"index": start.index}
            if start.round is not None:
                fields["round"] = start.round
            self._event("debug", "case", "case_start", start.case_id, **fields)
            self._echo(start)

    def on_noise(self, event: tp.BadLine | tp.UnknownMessage) -> None:
        with self._lock:
            self._noise(event)

    def on_message(self, message: tp.Message) -> None:
        with self._lock:
            try:
                self._message(message)
            except Exception as exc:  # a hostile message must not end the run; say so
                self._failure(
                    tp.Failure(
                        phase="protocol",
                        error_type=type(exc).__name__,
                        message=f"a `{message.__struct_config__.tag}` message from the runner "
                        f"could not be recorded: {exc}",
                    )
                )

    # ---------------------------------------------------------------- helpers

    def _noise(self, event: tp.BadLine | tp.UnknownMessage) -> None:
        if isinstance(event, tp.UnknownMessage):
            msg = f"ignored a protocol message of unknown type `{event.type}` (newer runner?)"
        elif isinstance(event, tp.ForgedLine):
            msg = event.error
            self._forged()
        else:
            msg = f"ignored a line that is not a protocol message: {event.error}"
        self._event("warning", "protocol", "protocol_noise", msg, line_no=event.line_no,
                    raw=event.raw[:200].decode("utf-8", "replace"))  # fmt: skip
        if self.ui.verbose:
            self.ui.notice(f"warning: {msg}")

    def _forged(self) -> None:
        """Say once per run, also without `-v`, that another process wrote into the pipe."""
        if any(d.message.startswith(_FORGED) for d in self.diagnostics):
            return
        log = tp.Log(
            level="warning",
            message=f"{_FORGED} (a kernel's forked child?); they were dropped, each is a "
            "`protocol_noise` event in events.jsonl",
        )
        self.diagnostics.append(log)
        self.ui.notice(f"warning: {log.message}")

    def _message(self, message: tp.Message) -> None:
        if isinstance(message, (tp.BenchResult, tp.TestResult, tp.BuildResult)):
            info = next((c for c in self.planned if c.case_id == message.case_id), None)
            problem = result_problem(info, message)
            if problem is not None:
                self.invalid[message.case_id] = problem
                self._message(invalid_failure(message, problem))
                return
        self._echo(message)
        if isinstance(message, tp.Log):  # the commonest message first
            self._log(message)
        elif isinstance(message, tp.BenchResult):
            self.bench_results.append(message)
            self._case_done(message.case_id, message.check)
        elif isinstance(message, tp.TestResult):
            self.test_results.append(message)
            self._case_done(message.case_id, message.check)
        elif isinstance(message, tp.BuildResult):
            self.build_results.append(message)
            self._case_done(message.case_id, None)
        elif isinstance(message, tp.Failure):
            self._failure(message)
        elif isinstance(message, tp.Artifact):
            self.artifacts.append(message)
        elif isinstance(message, tp.StateChange):
            self._state_change(message)
        elif isinstance(message, tp.Done):
            self._event("info", "run", "runner_done", "runner finished",
                        **msgspec.to_builtins(message))  # fmt: skip

    def _state_change(self, change: tp.StateChange) -> None:
        """A case left the runner's process changed: a finding against it (once per change)."""
        from tile_cli._leaks import state_finding, state_warning

        self._event("warning", "case", "state_change", change.case_id,
                    **msgspec.to_builtins(change))  # fmt: skip
        number = 1 + sum(f.category == "isolation" for f in self.findings)
        finding = state_finding(change, number)
        # A case timed in rounds makes the same change in every round: say it once.
        if not any(
            (f.title, f.evidence) == (finding.title, finding.evidence) for f in self.findings
        ):
            self.findings.append(finding)
            self._log(state_warning(change))

    def _failure(self, failure: tp.Failure) -> None:
        self.failures.append(failure)
        current = self._current.get(threading.get_ident())
        if current is not None:
            self.failure_launch[len(self.failures)] = current
        self._event("error", failure.phase, "failure", failure.message, case_id=failure.case_id,
                    error_type=failure.error_type, status=failure.status)  # fmt: skip
        if failure.case_id is not None:
            self.ui.advance()
            self.checkpoints.done(failure.case_id)
        first = failure.message.splitlines()[0] if failure.message else ""
        self.ui.notice(f"✗ {failure.case_id or '(run)'}: {failure.error_type}: {first}", "red")

    def _log(self, log: tp.Log) -> None:
        # The runner reports each data file a kernel used as `input_file NAME PATH`.
        if log.message.startswith("input_file ") and log.message.count(" ") >= 2:
            _, name, path = log.message.split(" ", 2)
            self.input_files[name] = path
        elif log.message.startswith("jax_cache "):
            self.jax_cache_logs.append(log)
        # The runner's log lines go to disk in batches: it may send 200,000 of them.
        self.log.event(log.level, "runner", "log", log.message, {"case_id": log.case_id},
                       chatter=True)  # fmt: skip
        if log.level in ("warning", "error"):
            self.diagnostics.append(log)
            self.ui.notice(f"{log.level}: {log.message}")

    def _echo(self, message: tp.Message) -> None:
        if self.stream_json:
            sys.stdout.buffer.write(tp.encode(message))
            sys.stdout.flush()

    def _case_done(self, case_id: str, check: tp.Check | None) -> None:
        import tile_artifacts as ta

        self.ui.advance()
        index = next((i for i, c in enumerate(self.planned) if c.case_id == case_id), None)
        if index is not None:
            # The checkpoint first: a case whose metrics are on disk is in report.json too.
            record = self.checkpoints.record(self.planned[index])
            self.checkpoints.write()
            metrics = ta.case_metrics(record, run_id=self.run_id, index=index)
            if metrics:
                self.log.append(ta.METRICS_JSONL, *metrics)
        self._event("info", "case", "case_done", case_id,
                    passed=None if check is None else check.passed)  # fmt: skip

    def _event(self, level: str, phase: str, event: str, message: str, **fields: Any) -> None:
        self.log.event(level, phase, event, message, json.loads(json.dumps(fields, default=str)))

    def _on_write_fault(self, error: ta.ArtifactError) -> None:
        """Said once, at once: the run goes on and prints its results, which may not be saved."""
        self.ui.notice(f"error: {error.message}; the run goes on, its results are printed but "
                       "may not be saved", "red")  # fmt: skip

    def write_fault(self) -> CliError | None:
        """The error to end the command with when the run directory could not be written."""
        return self.log.fault_error(self.run_dir, report_saved=self.report_saved)

    def finalize(
        self,
        *,
        interrupted: str | None = None,
        error: str | None = None,
        compare_with: CompareSettings | None = None,
        judge: bool = False,
    ) -> tuple[ta.Report, ta.ComparisonDoc | None]:
        """Write report.json, summary.md, comparisons.json if asked, the manifest last.

        With `judge`, the run's exit code is decided first (`self.outcome`) and stated in
        the report and summary.

        After a failed write (a full disk) the final manifest is left out, so that the
        directory keeps its last checkpoint's `incomplete` one, and only report.json is tried:
        it holds every measurement, and its status reason names the write that failed.
        """
        import tile_artifacts as ta
        from tile_cli._report import build_report, write_final

        self.log.write(self.clocks.stop)
        with signals.shielded(), self._lock:
            report = build_report(self, interrupted=interrupted, error=error)
            if self.log.write(lambda: [hook(report) for hook in self.before_final]):
                self.log.close()
                try:
                    if self.log.fault is None:
                        return write_final(
                            self, report, compare_with, interrupted=interrupted, judge=judge
                        )
                except ta.ArtifactError as exc:
                    self.log.fail(exc)
            report = _with_fault(report, self.log.fault)
            if judge:
                report = self._judge_fault(report)
            with contextlib.suppress(ta.ArtifactError):
                self.writer.write_json(ta.REPORT_JSON, report)
                self.report_saved = True
            return report, None

    def _judge_fault(self, report: ta.Report) -> ta.Report:
        """A run whose directory could not be written ends with exit 3 whatever it measured:
        the report it still tries to save says so."""
        from tile_cli._outcome import Outcome, apply_outcome

        fault = self.log.fault
        reason = f"run directory incomplete: {fault.message}" if fault is not None else None
        self.outcome = Outcome(int(ExitCode.INFRA), reason)
        return apply_outcome(report, self.outcome, None)


def _with_fault(report: ta.Report, fault: ta.ArtifactError | None) -> ta.Report:
    """The report with the failed write in its status reason (the manifest stays a checkpoint)."""
    if fault is None:
        return report
    why = f"run directory incomplete: {fault.message}"
    reason = f"{report.run.status_reason}; {why}" if report.run.status_reason else why
    return report.model_copy(
        update={"run": report.run.model_copy(update={"status_reason": reason})}
    )


def launch_id(launch: Launch) -> str:
    """The command id of a runner process in commands.jsonl."""
    return f"C{launch.index:03d}"


def _signal_name(sig: int | None) -> str | None:
    if sig is None:
        return None
    import signal

    try:
        return signal.Signals(sig).name
    except ValueError:
        return str(sig)
