"""Drive runner processes: spawn, stream, watch for crashes and hangs, restart, go on.

The CLI and the runner meet only through tile-protocol. This module owns the runners'
lifetime; what to do with each message is the `Sink`'s business (recording, rendering).
Sessions are made by `_runners.make_session`, from a request and the configuration.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

import tile_protocol as tp
from tile_harness import signals
from tile_harness._boundary import Boundary, new_token
from tile_harness._errors import CliError, ExitCode
from tile_harness._family import Family
from tile_harness._process import (
    STARTUP_TIMEOUT_S,
    Launch,
    LaunchCounter,
    RunnerSpec,
    death_failure,
    describe_exit,
    hang_reason,
    kill_group,
    reap,
    silence_limit,
    spawn,
    stream_events,
    terminate,
    unspoken,
)
from tile_harness._requests import derive
from tile_harness._run_state import RunState
from tile_harness._sinks import Sink
from tile_harness._undone import not_run

__all__ = ["RunnerSession"]

DRAIN_S = 5.0
"""After `done`, how long to wait for the rest of the stream (anything there breaks the rules)."""


class RunnerSession:
    """Runs a request to completion over as many runner processes as it takes.

    A runner that crashes or hangs is blamed on the case it was on, and a fresh one goes on
    with the cases left. `numbering` shares one sequence of runner numbers (and stderr log
    names) between the sessions of one run.
    """

    def __init__(
        self,
        request: tp.RunRequest,
        spec: RunnerSpec,
        sink: Sink,
        *,
        log_dir: Path,
        numbering: Callable[[], int] | None = None,
    ) -> None:
        self._request = request
        self._spec = spec
        self._sink = sink
        self._log_dir = log_dir
        self._numbering = numbering or LaunchCounter()
        self._state = RunState()
        self._boundary: Boundary | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._family = Family()  # what the current runner started, noted at case ends
        self._proc_lock = threading.Lock()
        self._stopping = False

    # ---------------------------------------------------------------- public

    def run(self) -> bool:
        """Go through every case; return True when no runner died or hung."""
        if self._spec.isolate:
            return self._run_isolated()
        clean = self._launch(self._request)
        all_clean = clean
        # A runner that ended with a believed `done` went through every case, or asked for a
        # fresh runner (a case changed process state it could not restore); a crash or a hang
        # leaves cases behind too. The cases left get a fresh runner.
        while (
            (not clean or self._state.restart is not None)
            and not self._stopping
            and (remaining := self._remaining())
        ):
            before = len(self._state.finished)
            # Each case in its turn from here: in a batch made ready ahead, none was in flight.
            clean = self._launch(derive(self._request, case_ids=remaining, compile_ahead=False))
            all_clean = all_clean and clean
            if len(self._state.finished) == before:
                self._abandon(self._remaining(), self._why("the restarted runner made no progress"))
                break
        if self._request.command != "list" and not self._stopping and (left := self._remaining()):
            self._abandon(left, "no runner reported it")  # never a case silently left out
        return all_clean

    def stop(self) -> None:
        """Stop the current runner's whole process group and start no other (Ctrl-C, SIGTERM).

        Safe to call from another thread than the one in `run`, which then returns soon.
        """
        with self._proc_lock:
            self._stopping = True
            proc = self._proc
        if proc is not None:
            terminate(proc)

    # ---------------------------------------------------------------- internals

    def _run_isolated(self) -> bool:
        """A plan runner, then one fresh runner per case (per configuration in a tune)."""
        clean = self._launch(derive(self._request, command="list"))
        for case_id in list(self._state.plan or []):
            if self._stopping:
                return False
            if case_id not in self._state.finished:
                one = derive(self._request, case_ids=[case_id], compile_ahead=False)  # no batch
                clean = self._launch(one) and clean
            if case_id not in self._state.finished and not self._stopping:
                self._abandon([case_id], self._why("its runner ended before reaching it"))
        return clean and not self._stopping

    def _remaining(self) -> list[str]:
        plan = self._state.plan or []
        return [c for c in plan if c not in self._state.finished]

    def _abandon(self, case_ids: list[str], why: str) -> None:
        for case_id in case_ids:
            self._state.finished.add(case_id)
            self._sink.on_message(not_run(case_id, why))

    def _why(self, what: str) -> str:
        """`what` happened to the cases left, with how the last runner ended when known."""
        return f"{what}: {self._state.ended}" if self._state.ended else what

    def _launch(self, request: tp.RunRequest) -> bool:
        """Run one runner process to its end; return True if it ended with `done`."""
        if self._stopping:
            return False
        token = new_token()
        request = derive(request, token=token)
        self._boundary = Boundary(self._sink, token=token, requested=request.case_ids)
        launch = self._new_launch(request)
        proc = self._start(launch)
        events = stream_events(proc, tp.encode(request))
        self._state.done_seen = self._state.hello_seen = self._state.ahead = False
        self._state.restart = self._state.ended = self._state.noise = None
        try:
            signals.raise_pending()  # one that came while the runner started
            in_flight, timed_out, after_done = self._pump(events)
        except BaseException:
            self.stop()
            launch.status = "interrupted"
            self._close(proc, launch)
            raise
        return self._conclude(proc, launch, in_flight, timed_out=timed_out,
                              events=(after_done, events))  # fmt: skip

    def _new_launch(self, request: tp.RunRequest) -> Launch:
        index = self._numbering()
        return Launch(
            index=index,
            args=self._spec.argv(),
            cwd=str(self._spec.cwd),
            env_overrides=dict(self._spec.env_overrides),
            stderr_log=self._log_dir / f"runner-{index}.stderr.log",
            started_at=datetime.now(UTC),
            case_ids=request.case_ids,
            phase="plan" if request.command == "list" else "runner",
            shard=request.shard,
        )

    def _start(self, launch: Launch) -> subprocess.Popen[bytes]:
        spec = self._spec
        env = {**(os.environ if spec.environ is None else spec.environ), **spec.env_overrides}
        # A signal between the fork and the hand-over would leave a runner that `stop` cannot
        # see, running on in its own process group: it waits until the runner is known and
        # recorded, and `_launch` raises it.
        with signals.held():
            proc = spawn(launch, env, launcher=bool(spec.argv_prefix), redactor=spec.redactor)
            with self._proc_lock:
                self._proc = proc
                stopping = self._stopping
            if stopping:  # stop() came while the process was starting
                terminate(proc)
            self._sink.on_launch(launch)
        return proc

    def _pump(self, events: queue.Queue[object]) -> tuple[str | None, bool, list[object]]:
        """Hand each event to the sink until `done`, EOF or silence; (case in flight, timed
        out, the rest of the batch `done` came in)."""
        in_flight: str | None = None
        while True:
            try:
                batch = events.get(timeout=self._silence_limit(in_flight))
            except queue.Empty:
                return in_flight, True, []
            if not isinstance(batch, list):  # EOF
                return in_flight, False, []
            batch_events = cast("list[object]", batch)
            for i, event in enumerate(batch_events):
                in_flight = self._dispatch(event, in_flight)
                if self._state.done_seen:
                    return in_flight, False, batch_events[i + 1 :]

    def _conclude(
        self,
        proc: subprocess.Popen[bytes],
        launch: Launch,
        in_flight: str | None,
        *,
        timed_out: bool,
        events: tuple[list[object], queue.Queue[object]],
    ) -> bool:
        """Close the runner's process and blame its death, if it died, on the right case.

        `events`: what came after `done` in its batch, and the queue with any later batches.
        """
        if timed_out:
            launch.status = "timed_out"  # before _close records it, and why
            launch.reason = self._hang_reason(in_flight)
            self._note_family()  # what the hung case started goes with it
            if self._spec.argv_prefix:
                terminate(proc)  # srun forwards SIGTERM to the task and ends the job step
            else:
                kill_group(proc, signal.SIGKILL)
        if self._stopping and not self._state.done_seen:
            launch.status = "interrupted"
            launch.reason = "stopped"
            self._close(proc, launch)
            return False
        self._close(proc, launch)
        if self._state.done_seen and not timed_out:
            self._drain(*events)
            return True
        if self._boundary is not None:
            self._boundary.close()
        self._blame(launch, in_flight, timed_out=timed_out)
        return False

    def _drain(self, after_done: list[object], events: queue.Queue[object]) -> None:
        """Check what the runner wrote after `done` (nothing may follow it); then close."""
        batch: object = after_done
        until = time.monotonic() + DRAIN_S
        while isinstance(batch, list):  # until EOF
            for event in cast("list[object]", batch):
                self._dispatch(event, None)
            try:
                batch = events.get(timeout=max(0.0, until - time.monotonic()))
            except queue.Empty:
                break
        if self._boundary is not None:
            self._boundary.close()

    def _silence_limit(self, in_flight: str | None) -> float | None:
        """How long the runner may stay silent now; None waits for ever."""
        # A batch step (`ahead`) is some case's work too: bounded as a case is.
        busy = in_flight is not None or self._state.ahead
        return silence_limit(self._spec, started=self._state.hello_seen, in_case=busy)

    def _dispatch(self, event: object, in_flight: str | None) -> str | None:
        """Hand one event to the sink; return the case in flight after it."""
        sink = self._sink
        if self._boundary is not None and (rejected := self._boundary.admit(event)) is not None:
            return self._rejected(rejected, in_flight)
        if isinstance(event, tp.Log):  # by far the commonest message: straight through
            sink.on_message(tp.upgrade(event, self._state.minor))
        elif isinstance(event, (tp.BadLine, tp.UnknownMessage)):
            self._noise(event)
        elif isinstance(event, tp.Hello):
            self._hello(event)
        elif isinstance(event, tp.Plan):
            if self._state.plan is None:
                self._state.plan = [c.case_id for c in event.cases]
                sink.on_plan(event)
        elif isinstance(event, (tp.CaseStart, tp.Progress)):
            return self._on_the_way(event, in_flight)
        elif isinstance(event, (tp.BenchResult, tp.TestResult, tp.BuildResult)):
            self._state.finished.add(event.case_id)
            self._note_family()
            sink.on_message(event)
            return None
        elif isinstance(event, tp.Inspect):
            self._state.finished.add(event.case_id)  # an inspect case's views are its result
            sink.on_message(event)
        elif isinstance(event, tp.Failure):
            return self._failure(event, in_flight)
        elif isinstance(event, tp.Message):
            if isinstance(event, tp.Done):
                self._state.done_seen = True
                self._state.restart = event.restart
            sink.on_message(tp.upgrade(event, self._state.minor))
        return in_flight

    def _noise(self, event: tp.BadLine | tp.UnknownMessage) -> None:
        """A line that is not a message; the first before `hello` says why one never came."""
        if not self._state.hello_seen and self._state.noise is None:
            self._state.noise = unspoken(event)
        self._sink.on_noise(event)

    def _on_the_way(self, event: tp.CaseStart | tp.Progress, in_flight: str | None) -> str | None:
        """A case starts, or a step is said: before its case starts, a step of a batch."""
        self._state.ahead = isinstance(event, tp.Progress) and in_flight is None
        if isinstance(event, tp.CaseStart):
            self._sink.on_case_start(event)
            return event.case_id
        if self._request.progress:  # a batch's steps come unasked (`compile_ahead`)
            self._sink.on_message(event)
        return in_flight

    def _rejected(self, rejected: tp.Violation, in_flight: str | None) -> str | None:
        """A message the boundary refused (already reported): what it means for the cases."""
        if not rejected.forged and isinstance(rejected.message, tp.Done):
            # Even a `done` that came too early says the runner left the case it was on:
            # the cases it never reached are not run, none of them crashed it.
            self._state.ended = "it sent an invalid `done`"
            return None
        if rejected.case_id is None:
            return in_flight
        self._state.finished.add(rejected.case_id)  # the runner is done with it; never again
        return None if rejected.case_id == in_flight else in_flight

    def _hello(self, hello: tp.Hello) -> None:
        self._state.hello_seen = True
        self._state.minor = hello.protocol_minor
        try:
            tp.check_version(hello)
        except tp.VersionError as exc:
            self.stop()
            raise CliError(str(exc), hint=exc.hint, code=ExitCode.INFRA) from None
        self._sink.on_hello(hello)

    def _failure(self, failure: tp.Failure, in_flight: str | None) -> str | None:
        if failure.case_id is not None:
            self._state.finished.add(failure.case_id)
            self._note_family()
        elif (key := (failure.phase, failure.error_type, failure.message)) in self._state.seen:
            return in_flight  # a restarted runner repeats import errors: report them once
        else:
            self._state.seen.add(key)
        self._sink.on_message(failure)
        return None if failure.case_id == in_flight else in_flight

    def _note_family(self) -> None:
        """At a case end: note what the runner's kernels started, to end it with the runner."""
        proc = self._proc
        if proc is not None:
            self._family.note(proc.pid)

    def _close(self, proc: subprocess.Popen[bytes], launch: Launch) -> None:
        self._family.note(proc.pid)
        rc = reap(proc, self._spec.exit_wait)  # no orphans left in its group
        self._family.end()  # nor outside it
        if launch.log is not None:
            launch.log.wait()  # its stderr's end in the log: the failure quotes the tail
        with self._proc_lock:
            self._proc = None
        launch.finished_at = datetime.now(UTC)
        if rc is not None and rc < 0:
            launch.signal = -rc
        else:
            launch.return_code = rc
            if rc is not None and self._spec.exit_signal is not None:
                launch.signal = self._spec.exit_signal(rc)
        if launch.status == "success" and not self._state.done_seen:
            launch.status = "failed"
        self._sink.on_launch_end(launch)

    def _hang_reason(self, in_flight: str | None) -> str:
        ahead = in_flight is None and self._state.ahead  # a batch made ready before its turn
        limit = self._silence_limit(in_flight) or STARTUP_TIMEOUT_S
        return hang_reason(limit, in_case=in_flight is not None or ahead,
                           configured=self._spec.timeout is not None, ahead=ahead)  # fmt: skip

    def _blame(self, launch: Launch, in_flight: str | None, *, timed_out: bool) -> None:
        """Turn a runner that died or hung into a failure record for the case it was on."""
        if not timed_out:  # a hang's reason was given before its launch was closed
            launch.reason = describe_exit(launch)
            if not self._state.hello_seen and self._state.noise is not None:
                launch.reason += f", without a `hello`: {self._state.noise}"
        self._state.ended = self._state.ended or launch.reason
        if in_flight is None and self._state.plan is not None:
            return  # between cases: the restart goes on with the rest
        if in_flight is not None:
            self._state.finished.add(in_flight)
        else:
            self._state.plan = []  # died before it could say which cases exist: no restart
        self._sink.on_message(death_failure(launch, in_flight, timed_out=timed_out))
