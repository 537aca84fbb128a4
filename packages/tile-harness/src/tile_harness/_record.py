"""Turn the protocol stream into an Artifact Format v1 run directory, as it happens.

Events, metrics, command records and each finished case (`cases.jsonl`) are appended the
moment they are known, and the report-in-progress is rewritten rarely (`_checkpoint.py`), so a
run that is killed, even by SIGKILL, leaves a directory that validates and reads with every
case it finished; the final report, summary and manifest are written by `finalize` (also on
Ctrl-C and SIGTERM).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, BinaryIO

import msgspec

import tile_protocol as tp
from tile_harness import signals
from tile_harness._checkpoint import Checkpoints
from tile_harness._errors import CliError, ExitCode
from tile_harness._logcap import LogCap
from tile_harness._outcome import Finished, decide
from tile_harness._process import Launch
from tile_harness._report import RunSetup, build_report, compare_run, write_final
from tile_harness._results import CaseResult, RunResults
from tile_harness._run_dir import open_run, tool_version
from tile_harness._runlog import RunLog
from tile_harness._telemetry import ClockWatch, write_snapshots

if TYPE_CHECKING:
    import tile_artifacts as ta
    from tile_harness._compare import CompareSettings
    from tile_harness._display import Display
    from tile_harness._sinks import Sink

__all__ = ["RunRecorder", "launch_id", "open_run", "recording", "tool_version"]

_FORGED = "lines the runner did not send reached its pipe"


class RunRecorder:
    """The sink of a run with a directory: keeps the results, streams events, metrics and
    command records to disk as they happen, writes the report at the end.

    Thread-safe: the sessions of a sharded run feed one recorder from their own threads.
    """

    def __init__(self, setup: RunSetup, *, ui: Display) -> None:
        self.setup = setup
        self.writer = setup.writer
        self.run_dir = setup.run_dir
        self.run_id = setup.run_id
        self.ui = ui
        self.results = RunResults(setup.command)
        self.before_final: list[Callable[[ta.Report], None]] = []
        """Called with the report just before report.json and the manifest are written."""
        self.on_planned: list[Callable[[], None]] = []
        """Called whenever a plan with at least one case arrives (once per shard)."""
        self._lock = threading.RLock()
        # The runner each thread's session is on, to tie its failures to its stderr log.
        self._current: dict[int, Launch] = {}
        self.log = RunLog(setup.writer, on_fault=self._on_write_fault)
        self.log_cap = LogCap()
        self.report_saved = False
        """After a failed write: whether the final report.json was written all the same."""
        self.telemetry = setup.resolved.config.telemetry
        self.clocks = ClockWatch(setup.writer, self.telemetry)
        self.checkpoints = Checkpoints(setup, self.results, self.log)
        """Each finished case logged at once, the report-in-progress rewritten rarely."""
        self._event("info", "run", "run_started", f"tile {setup.command} started", argv=setup.argv)
        self.log.write(lambda: write_snapshots(setup.writer, setup.resolved))
        self.checkpoints.write()
        self.clocks.start()

    # ---------------------------------------------------------------- sink

    def on_launch(self, launch: Launch) -> None:
        with self._lock:
            self._current[threading.get_ident()] = launch
            self.results.launches.append(launch)
            shard = f"{launch.shard.index}/{launch.shard.count}" if launch.shard else None
            self._event("info", "runner", "runner_started", f"runner {launch.index} started",
                        args=launch.args, case_ids=launch.case_ids, shard=shard)  # fmt: skip
            self._command(launch, started=True)
            self.ui.starting(restart=len(self.results.launches) > 1)

    def on_launch_end(self, launch: Launch) -> None:
        with self._lock:
            self._launch_end(launch)

    def on_slurm_job(self, launch: Launch, job_id: str) -> None:
        """Note the SLURM job a runner ran in (found by its job name)."""
        with self._lock:
            self._event("info", "runner", "slurm_job", f"runner {launch.index} is SLURM job "
                        f"{job_id}", command_id=launch_id(launch), job_id=job_id)  # fmt: skip

    def on_hello(self, hello: tp.Hello) -> None:
        with self._lock:
            launch = self._current.get(threading.get_ident())
            if launch is not None:
                started = (datetime.now(UTC) - launch.started_at).total_seconds()
                self.results.runner_start_s += max(0.0, started)
            if self.results.hello is None:
                self.results.hello = hello
                self._event("info", "runner", "hello",
                            f"runner {hello.runner_version} on {hello.backend}",
                            **msgspec.to_builtins(hello))  # fmt: skip
                self._header(hello)

    def _header(self, hello: tp.Hello) -> None:
        """Name the device and the sampling settings before the first number (bench only)."""
        if self.setup.command != "bench":
            return
        from tile_harness._header import bench_header

        self.ui.line(bench_header(hello, self.setup.resolved.config.bench))

    def on_plan(self, plan: tp.Plan) -> None:
        with self._lock:
            self.results.plan(plan)
            self._event("info", "plan", "plan", f"{len(plan.cases)} cases planned",
                        case_ids=[c.case_id for c in plan.cases])  # fmt: skip
            self.ui.start(len(plan.cases), f"tile {self.setup.command}")
            self.checkpoints.write()
            if plan.cases:
                for hook in self.on_planned:
                    hook()

    def on_case_start(self, start: tp.CaseStart) -> None:
        with self._lock:
            at = start.round
            self.ui.case(start.case_id if at is None else f"{start.case_id}, round {at}")
            fields: dict[str, Any] = {"index": start.index} | ({} if at is None else {"round": at})
            self._event("debug", "case", "case_start", start.case_id, **fields)

    def on_noise(self, event: tp.BadLine | tp.UnknownMessage) -> None:
        with self._lock:
            self._noise(event)

    def on_message(self, message: tp.Message) -> None:
        with self._lock:
            try:
                self._message(message)
            except Exception as exc:  # a hostile message must not end the run; say so
                what = message.__struct_config__.tag
                self._failure(tp.Failure(phase="protocol", error_type=type(exc).__name__,
                                         message=f"a `{what}` message from the runner could "
                                         f"not be recorded: {exc}"))  # fmt: skip

    def finalize(
        self,
        *,
        interrupted: str | None = None,
        error: str | None = None,
        compare_with: CompareSettings | None = None,
        judge: bool = False,
        refused: CliError | None = None,
    ) -> Finished:
        """Decide the run's outcome, then write comparisons.json if asked, report.json,
        summary.md and the manifest last; return what was decided and written.

        With `judge` the outcome (exit code and why) is stated in the report and summary, so
        that they say what the command exits with. A baseline that cannot be used is raised once
        the directory is complete; `refused` (an error the command raises itself afterwards)
        decides the outcome as one does. After a failed write see `_finalize_faulted`.
        """
        import tile_artifacts as ta
        from tile_harness._outcome import apply_outcome

        self.log.write(self.clocks.stop)
        for case_id, dropped, note in self.log_cap.notes():
            self._event("warning", "runner", "log_dropped", note, case_id=case_id, dropped=dropped)
            self.results.diagnostics.append(tp.Log(level="warning", message=note, case_id=case_id))
        with signals.shielded(), self._lock:
            cases = self.checkpoints.final_records(interrupted=interrupted is not None)
            report = build_report(self.setup, self.results, interrupted=interrupted, error=error,
                                  cases=cases)  # fmt: skip
            if self.log.write(lambda: [hook(report) for hook in self.before_final]):
                self._event("info", "run", "run_finished", f"status {report.run.status}")
                self.log.close()
                if self.log.fault is None:
                    comparison, problem = compare_run(self.setup, self.results, report,
                                                      compare_with)  # fmt: skip
                    why = problem or refused
                    outcome = decide(self.results, interrupted, comparison, compare_with, why)
                    if judge:
                        report = apply_outcome(report, outcome, comparison)
                    try:
                        report = write_final(self.setup, self.results, report, comparison,
                                             clocks=self.clocks)  # fmt: skip
                    except ta.ArtifactError as exc:
                        self.log.fail(exc)
                    else:
                        if problem is not None:
                            raise problem
                        return Finished(report, comparison, outcome)
            return self._finalize_faulted(report, judge=judge)

    def _finalize_faulted(self, report: ta.Report, *, judge: bool) -> Finished:
        """After a failed write the final manifest is left out, so that the directory keeps
        its last checkpoint's `incomplete` one, and only report.json is tried: it holds every
        measurement, and its status reason names the write that failed. The run ends with
        exit 3 whatever it measured, and the report says so."""
        import tile_artifacts as ta
        from tile_harness._outcome import Outcome, apply_outcome

        fault = self.log.fault
        why = f"run directory incomplete: {fault.message if fault else 'a write failed'}"
        reason = f"{report.run.status_reason}; {why}" if report.run.status_reason else why
        report = report.model_copy(
            update={"run": report.run.model_copy(update={"status_reason": reason})}
        )
        outcome = Outcome(int(ExitCode.INFRA), why)
        if judge:
            report = apply_outcome(report, outcome, None)
        with contextlib.suppress(ta.ArtifactError):
            self.writer.write_json(ta.REPORT_JSON, report)
            self.report_saved = True
        return Finished(report, None, outcome)

    def write_fault(self) -> CliError | None:
        """The error to end the command with when the run directory could not be written."""
        return self.log.fault_error(self.run_dir, report_saved=self.report_saved)

    def _on_write_fault(self, error: ta.ArtifactError) -> None:
        """Said once, at once: the run goes on and prints its results, which may not be saved."""
        self.ui.notice(f"error: {error.message}; the run goes on, its results are printed but "
                       "may not be saved", "red")  # fmt: skip

    # ---------------------------------------------------------------- helpers

    def _command(self, launch: Launch, *, started: bool = False) -> None:
        """A runner in commands.jsonl: `incomplete` when it starts (a kill then leaves it
        there), its final record when it ends; readers take each command's last line."""
        if not self.telemetry.commands:
            return
        self.log.command(
            launch_id(launch),
            launch.args,
            cwd=launch.cwd,
            status="incomplete" if started else launch.status,
            phase=launch.phase,
            environment_overrides=launch.env_overrides,
            stderr_log=os.path.relpath(launch.stderr_log, self.run_dir),
            return_code=launch.return_code,
            signal=launch.signal_name,
            started_at=launch.started_at,
            finished_at=launch.finished_at,
        )

    def _launch_end(self, launch: Launch) -> None:
        if launch.log is None:  # a runner that wrote its stderr log itself: hide secrets now
            path = os.path.relpath(launch.stderr_log, self.run_dir)
            self.log.write(lambda: self.writer.scrub(path))
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

    def _noise(self, event: tp.BadLine | tp.UnknownMessage) -> None:
        if not self.log_cap.admit_noise():
            return  # counted; said once when the run ends
        if isinstance(event, tp.UnknownMessage):
            msg = f"ignored a protocol message of unknown type `{event.type}` (newer runner?)"
        elif isinstance(event, tp.ForgedLine):
            msg = event.error
            self._forged()
        else:
            msg = f"ignored a line that is not a protocol message: {event.error}"
        raw = event.raw[:200].decode("utf-8", "replace")  # batched as log lines: no fsync each
        self.log.event("warning", "protocol", "protocol_noise", msg,
                       {"line_no": event.line_no, "raw": raw}, chatter=True)  # fmt: skip
        if self.ui.verbose:
            self.ui.notice(f"warning: {msg}")

    def _forged(self) -> None:
        """Say once per run, also without `-v`, that another process wrote into the pipe."""
        if any(d.message.startswith(_FORGED) for d in self.results.diagnostics):
            return
        log = tp.Log(
            level="warning",
            message=f"{_FORGED} (a kernel's forked child?); they were dropped, each is a "
            "`protocol_noise` event in events.jsonl",
        )
        self.results.diagnostics.append(log)
        self.ui.notice(f"warning: {log.message}")

    def _message(self, message: tp.Message) -> None:
        if isinstance(message, tp.Log):  # the commonest message first
            self._log(message)
        elif isinstance(message, (tp.BenchResult, tp.TestResult, tp.BuildResult)):
            self.results.add_result(message)
            self._case_done(message)
        elif isinstance(message, tp.Progress):  # for the screen only: not recorded
            self.ui.step(message)
        elif isinstance(message, tp.Failure):
            self._failure(message)
        elif isinstance(message, tp.Artifact):
            self.results.artifacts.append(message)
        elif isinstance(message, tp.CacheEvent):  # `--cache-report`: as many as compiles
            self.results.cache_events.append(message)
            self.log.event("debug", "runner", "cache_event", f"{message.event} {message.module}",
                           msgspec.to_builtins(message), chatter=True)  # fmt: skip
        elif isinstance(message, tp.InputFile):
            self.results.input_files[message.name] = message.path
            self._event("info", "runner", "input_file", f"{message.name}: {message.path}",
                        case_id=message.case_id)  # fmt: skip
        elif isinstance(message, tp.StateChange):
            self._state_change(message)
        elif isinstance(message, tp.Done):
            self._event("info", "run", "runner_done", "runner finished",
                        **msgspec.to_builtins(message))  # fmt: skip

    def _state_change(self, change: tp.StateChange) -> None:
        """A case left the runner's process changed: a finding against it (once per change)."""
        from tile_harness._leaks import state_finding, state_warning

        self._event("warning", "case", "state_change", change.case_id,
                    **msgspec.to_builtins(change))  # fmt: skip
        findings = self.results.findings
        number = 1 + sum(f.category == "isolation" for f in findings)
        finding = state_finding(change, number)
        # A case timed in rounds makes the same change in every round: say it once.
        if not any((f.title, f.evidence) == (finding.title, finding.evidence) for f in findings):
            findings.append(finding)
            self._log(state_warning(change))

    def _failure(self, failure: tp.Failure) -> None:
        self.results.add_failure(failure, self._current.get(threading.get_ident()))
        self._event("error", failure.phase, "failure", failure.message, case_id=failure.case_id,
                    error_type=failure.error_type, status=failure.status)  # fmt: skip
        first = failure.message.splitlines()[0] if failure.message else ""
        self.ui.notice(f"✗ {failure.case_id or '(run)'}: {failure.error_type}: {first}", "red")
        if failure.case_id is not None:
            self.checkpoints.done(failure.case_id)
            self._ended(failure.case_id)

    def _log(self, log: tp.Log) -> None:
        if not self.log_cap.admit(log.case_id):
            return  # counted; said once per case when the run ends
        # The runner's log lines go to disk in batches: it may send 200,000 of them.
        self.log.event(log.level, "runner", "log", log.message, {"case_id": log.case_id},
                       chatter=True)  # fmt: skip
        if log.level in ("warning", "error"):
            self.results.diagnostics.append(log)
            self.ui.notice(f"{log.level}: {log.message}")

    def _case_done(self, result: CaseResult) -> None:
        import tile_artifacts as ta

        index = self.results.position(result.case_id)
        if index is not None:
            # The checkpoint first: a case whose metrics are on disk is in report.json too.
            record = self.checkpoints.record(self.results.planned[index])
            self.checkpoints.write()
            metrics = ta.case_metrics(record, run_id=self.run_id, index=index)
            if metrics:
                self.log.append(ta.METRICS_JSONL, *metrics)
        check = result.check if not isinstance(result, tp.BuildResult) else None
        self._event("info", "case", "case_done", result.case_id,
                    passed=None if check is None else check.passed)  # fmt: skip
        self._ended(result.case_id)

    def _ended(self, case_id: str) -> None:
        """A case ended: one more done on the screen, its kernel's table if it was the last."""
        self.ui.advance()
        if (kernel := self.results.kernel_finished(case_id)) is not None:
            self.ui.kernel_done(kernel)

    def _event(self, level: str, phase: str, event: str, message: str, **fields: Any) -> None:
        self.log.event(level, phase, event, message, json.loads(json.dumps(fields, default=str)))


def recording(recorder: RunRecorder, *, json_lines: BinaryIO | None = None) -> Sink:
    """The sink a run's sessions feed: each result checked against the plan, recorded, then
    (`--json`) written to `json_lines`, secrets hidden, so a message seen there is on disk."""
    from tile_harness._invalid import CheckedResults
    from tile_harness._sinks import JsonLines, Tee

    if json_lines is None:
        return CheckedResults(recorder)
    return CheckedResults(Tee(recorder, JsonLines(json_lines, recorder.writer.redactor.json_text)))


def launch_id(launch: Launch) -> str:
    """The command id of a runner process in commands.jsonl."""
    return f"C{launch.index:03d}"
