"""Drive runner processes: spawn, stream, watch for crashes and hangs, restart, go on.

The CLI and the runner meet only through tile-protocol. This module owns the runner's
lifetime; what to do with each message is the `Sink`'s business (recording, rendering).
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

import tile_protocol as tp
from tile_cli import _signals as signals
from tile_cli._boundary import Boundary, new_token
from tile_cli._errors import CliError, ExitCode
from tile_cli._family import Family
from tile_cli._undone import NOT_RUN

__all__ = ["Launch", "LaunchCounter", "RunnerSession", "Sink", "last_words"]

STDERR_TAIL_BYTES = 4000
STARTUP_TIMEOUT_S = 120.0
STOP_GRACE_S = 3.0
DRAIN_S = 5.0
"""After `done`, how long to wait for the rest of the stream (anything there breaks the rules)."""


@dataclass
class Launch:
    """One runner process: what was run and how it ended."""

    index: int
    args: list[str]
    cwd: str
    env_overrides: dict[str, str]
    stderr_log: Path
    started_at: datetime
    finished_at: datetime | None = None
    return_code: int | None = None
    signal: int | None = None
    status: str = "success"
    reason: str | None = None
    case_ids: list[str] | None = None
    phase: str = "runner"
    """`plan` for a runner that only lists the cases, else `runner`."""

    @property
    def wall_time_s(self) -> float | None:
        if self.finished_at is None:
            return None
        return (self.finished_at - self.started_at).total_seconds()

    def stderr_tail(self) -> str:
        """The last few kilobytes the runner wrote to stderr."""
        try:
            with self.stderr_log.open("rb") as fh:
                fh.seek(0, os.SEEK_END)
                size = fh.tell()
                fh.seek(max(0, size - STDERR_TAIL_BYTES))
                return fh.read().decode("utf-8", "replace")
        except OSError:
            return ""


class Sink(Protocol):
    """Receives everything that happens during a session, in order."""

    def on_launch(self, launch: Launch) -> None: ...
    def on_launch_end(self, launch: Launch) -> None: ...
    def on_hello(self, hello: tp.Hello) -> None: ...
    def on_plan(self, plan: tp.Plan) -> None: ...
    def on_case_start(self, start: tp.CaseStart) -> None: ...
    def on_message(self, message: tp.Message) -> None:
        """Results, artifacts, inspect views, logs and failures (runner-sent or synthesized)."""

    def on_noise(self, event: tp.BadLine | tp.UnknownMessage) -> None: ...


class LaunchCounter:
    """Numbers runner processes 1, 2, 3... across every session of one run, from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last = 0

    def __call__(self) -> int:
        with self._lock:
            self._last += 1
            return self._last


@dataclass
class _State:
    plan: list[str] | None = None
    finished: set[str] = field(default_factory=set[str])
    done_seen: bool = False
    hello_seen: bool = False
    restart: str | None = None
    """Why the current runner ended before its remaining cases (`Done.restart`)."""
    ended: str | None = None
    """How the last runner ended when no case was to blame (said in the not-run failures)."""
    seen: set[tuple[str, str, str]] = field(default_factory=set[tuple[str, str, str]])


_EOF = object()


class RunnerSession:
    """Runs a request to completion over as many runner processes as it takes.

    By default each runner is `PYTHON -m tile_runner` started here with this process's
    environment plus `env_overrides`. A launcher changes that: `argv_prefix` goes in front of
    the runner's argument vector (`srun ... --`), `environ` replaces the inherited environment,
    `startup_timeout=None` waits for `hello` however long a queued job takes, and
    `exit_signal` reads a signal out of the exit status (srun: 128+N). `numbering` shares one
    sequence of runner numbers (and stderr log names) between the sessions of one run.
    `timeout` (`[runner] timeout`) is how long a runner may stay silent outside a case: while
    it starts (until `hello`; a queued SLURM job's wait is not counted) and between cases;
    None allows the larger of `case_timeout` and STARTUP_TIMEOUT_S.
    """

    def __init__(
        self,
        request: tp.RunRequest,
        *,
        python: str,
        cwd: Path,
        env_overrides: Mapping[str, str],
        log_dir: Path,
        sink: Sink,
        case_timeout: float,
        timeout: float | None = None,
        isolate: bool = False,
        extra_args: Sequence[str] = (),
        argv_prefix: Sequence[str] = (),
        environ: Mapping[str, str] | None = None,
        startup_timeout: float | None = STARTUP_TIMEOUT_S,
        exit_signal: Callable[[int], int | None] | None = None,
        numbering: Callable[[], int] | None = None,
    ) -> None:
        self._request = request
        self._python = python
        self._cwd = cwd
        self._env_overrides = dict(env_overrides)
        self._log_dir = log_dir
        self._sink = sink
        self._case_timeout = case_timeout
        self._timeout = timeout
        self._isolate = isolate
        self._extra_args = list(extra_args)
        self._argv_prefix = list(argv_prefix)
        self._environ = dict(os.environ if environ is None else environ)
        self._startup_timeout = startup_timeout
        self._exit_signal = exit_signal
        self._numbering = numbering or LaunchCounter()
        self._state = _State()
        self._boundary: Boundary | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._family = Family()  # what the current runner started, noted at case ends
        self._proc_lock = threading.Lock()
        self._stopping = False

    # ---------------------------------------------------------------- public

    def run(self) -> bool:
        """Go through every case; return True when no runner died or hung."""
        clean = True
        if self._isolate:
            clean = self._launch(self._plan_only()) and clean
            for case_id in list(self._state.plan or []):
                if self._stopping:
                    return False
                if case_id not in self._state.finished:
                    clean = self._launch(self._subset([case_id])) and clean
                if case_id not in self._state.finished and not self._stopping:
                    self._abandon([case_id], self._why("its runner ended before reaching it"))
            return clean and not self._stopping
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
            clean = self._launch(self._subset(remaining))
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
            _terminate(proc)

    # ---------------------------------------------------------------- internals

    def _plan_only(self) -> tp.RunRequest:
        return _replace(self._request, command="list")

    def _subset(self, case_ids: list[str]) -> tp.RunRequest:
        return _replace(self._request, case_ids=case_ids)

    def _remaining(self) -> list[str]:
        plan = self._state.plan or []
        return [c for c in plan if c not in self._state.finished]

    def _abandon(self, case_ids: list[str], why: str) -> None:
        for case_id in case_ids:
            self._finish(case_id)
            self._sink.on_message(
                tp.Failure(
                    case_id=case_id,
                    phase="runner",
                    status="skipped",
                    error_type=NOT_RUN,
                    message=f"not run: {why}",
                )
            )

    def _why(self, what: str) -> str:
        """`what` happened to the cases left, with how the last runner ended when known."""
        return f"{what}: {self._state.ended}" if self._state.ended else what

    def _finish(self, case_id: str) -> None:
        self._state.finished.add(case_id)

    def _launch(self, request: tp.RunRequest) -> bool:
        """Run one runner process to its end; return True if it ended with `done`."""
        if self._stopping:
            return False
        token = new_token()
        request = _replace(request, token=token)
        boundary = self._boundary = Boundary(self._sink, token=token, requested=request.case_ids)
        index = self._numbering()
        args = [*self._argv_prefix, self._python, "-m", "tile_runner", *self._extra_args]
        self._log_dir.mkdir(parents=True, exist_ok=True)
        log_path = self._log_dir / f"runner-{index}.stderr.log"
        launch = Launch(
            index=index,
            args=args,
            cwd=str(self._cwd),
            env_overrides=dict(self._env_overrides),
            stderr_log=log_path,
            started_at=datetime.now(UTC),
            case_ids=request.case_ids,
            phase="plan" if request.command == "list" else "runner",
        )
        env = {**self._environ, **self._env_overrides}
        with log_path.open("wb") as stderr:
            try:
                proc = subprocess.Popen(
                    args,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=stderr,
                    cwd=self._cwd,
                    env=env,
                    start_new_session=True,
                )
            except OSError as exc:
                raise CliError(
                    f"cannot start the runner `{args[0]}`: {exc.strerror or exc}",
                    hint="set `[runner] python` in tile.toml (or TILE_RUNNER_PYTHON) to an "
                    "interpreter that has tile-runner installed"
                    if not self._argv_prefix
                    else "check that the launcher's command exists and can be run",
                    code=ExitCode.USAGE,
                ) from None
        with self._proc_lock:
            self._proc = proc
            stopping = self._stopping
        if stopping:  # stop() came while the process was starting
            _terminate(proc)
        self._sink.on_launch(launch)
        events: queue.Queue[object] = queue.Queue()  # lists of events, one per chunk read
        reader = threading.Thread(
            target=signals.quiet(_read_stream), args=(proc, events), daemon=True
        )
        reader.start()
        # On a thread: a launcher may not read its stdin before the job starts (srun waiting
        # in the queue), and a large request must not block the loop that watches the clock.
        writer = threading.Thread(
            target=signals.quiet(_write_request), args=(proc, tp.encode(request)), daemon=True
        )
        writer.start()

        in_flight: str | None = None
        timed_out = False
        after_done: list[object] = []
        self._state.done_seen = False
        self._state.hello_seen = False
        self._state.restart = None
        self._state.ended = None
        try:
            while True:
                limit = self._silence_limit(in_flight)
                try:
                    batch = events.get(timeout=limit)
                except queue.Empty:
                    timed_out = True
                    break
                if batch is _EOF:
                    break
                assert isinstance(batch, list)
                events_in: list[object] = batch  # pyright: ignore[reportUnknownVariableType]
                for i, event in enumerate(events_in):
                    in_flight = self._dispatch(event, in_flight)
                    if self._state.done_seen:
                        after_done = events_in[i + 1 :]  # for _drain: nothing may follow `done`
                        break
                if self._state.done_seen:
                    break
        except BaseException:
            self.stop()
            launch.status = "interrupted"
            self._close(proc, launch)
            raise

        if timed_out:
            launch.status = "timed_out"  # before _close records it
            self._note_family()  # what the hung case started goes with it
            if self._argv_prefix:
                _terminate(proc)  # srun forwards SIGTERM to the task and ends the job step
            else:
                _kill_group(proc, signal.SIGKILL)
        if self._stopping and not self._state.done_seen:
            launch.status = "interrupted"
            launch.reason = "stopped"
            self._close(proc, launch)
            return False
        self._close(proc, launch)
        if self._state.done_seen and not timed_out:
            self._drain(reader, events, after_done)
            return True
        boundary.close()
        self._blame(launch, in_flight, timed_out=timed_out)
        return False

    def _silence_limit(self, in_flight: str | None) -> float | None:
        """How long the runner may stay silent now; None waits for ever."""
        if not self._state.hello_seen:
            # Until `hello` the runner may be waiting for a SLURM allocation (as long as the
            # queue takes: `startup_timeout=None`) or importing JAX on a loaded machine.
            if self._startup_timeout is None:
                return None
            if self._timeout is not None:
                return self._timeout
            return max(self._case_timeout, self._startup_timeout)
        if in_flight:
            return self._case_timeout
        # Between cases the runner may be importing kernel modules or compiling: allow at
        # least STARTUP_TIMEOUT_S there unless `[runner] timeout` says otherwise.
        return self._timeout or max(self._case_timeout, STARTUP_TIMEOUT_S)

    def _drain(
        self, reader: threading.Thread, events: queue.Queue[object], after_done: list[object]
    ) -> None:
        """Check what the runner wrote after `done` (nothing may follow it); then close.

        `after_done`: the rest of the batch `done` came in; the queue holds further batches.
        """
        reader.join(timeout=DRAIN_S)
        for event in after_done:
            self._dispatch(event, None)
        while True:
            try:
                batch = events.get_nowait()
            except queue.Empty:
                break
            if isinstance(batch, list):
                for event in batch:  # pyright: ignore[reportUnknownVariableType]
                    self._dispatch(event, None)
        if self._boundary is not None:
            self._boundary.close()

    def _dispatch(self, event: object, in_flight: str | None) -> str | None:
        sink = self._sink
        if self._boundary is not None and (rejected := self._boundary.admit(event)) is not None:
            if not rejected.forged and isinstance(rejected.message, tp.Done):
                # Even a `done` that came too early says the runner left the case it was on:
                # the cases it never reached are not run, none of them crashed it.
                self._state.ended = "it sent an invalid `done`"
                return None
            if rejected.case_id is None:
                return in_flight
            self._finish(rejected.case_id)  # the runner is done with it; never run it again
            return None if rejected.case_id == in_flight else in_flight
        if isinstance(event, tp.Log):  # by far the commonest message: straight through
            sink.on_message(event)
        elif isinstance(event, (tp.BadLine, tp.UnknownMessage)):
            sink.on_noise(event)
        elif isinstance(event, tp.Hello):
            self._state.hello_seen = True
            try:
                tp.check_version(event)
            except tp.VersionError as exc:
                self.stop()
                raise CliError(str(exc), hint=exc.hint, code=ExitCode.INFRA) from None
            sink.on_hello(event)
        elif isinstance(event, tp.Plan):
            if self._state.plan is None:
                self._state.plan = [c.case_id for c in event.cases]
                sink.on_plan(event)
        elif isinstance(event, tp.CaseStart):
            sink.on_case_start(event)
            return event.case_id
        elif isinstance(event, tp.Done):
            self._state.done_seen = True
            self._state.restart = event.restart
            sink.on_message(event)
        elif isinstance(event, (tp.BenchResult, tp.TestResult, tp.BuildResult)):
            self._finish(event.case_id)
            self._note_family()
            sink.on_message(event)
            return None
        elif isinstance(event, tp.Inspect):
            self._finish(event.case_id)  # an inspect case's views are its result
            sink.on_message(event)
        elif isinstance(event, tp.Failure):
            if event.case_id is not None:
                self._finish(event.case_id)
                self._note_family()
            elif (key := (event.phase, event.error_type, event.message)) in self._state.seen:
                return in_flight  # a restarted runner repeats import errors: report them once
            else:
                self._state.seen.add(key)
            sink.on_message(event)
            return None if event.case_id == in_flight else in_flight
        elif isinstance(event, tp.Message):
            sink.on_message(event)
        return in_flight

    def _note_family(self) -> None:
        """At a case end: note what the runner's kernels started, to end it with the runner."""
        proc = self._proc
        if proc is not None:
            self._family.note(proc.pid)

    def _close(self, proc: subprocess.Popen[bytes], launch: Launch) -> None:
        self._family.note(proc.pid)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            _kill_group(proc, signal.SIGKILL)
            proc.wait()
        # A runner that exits leaves no orphans behind: not in its group, nor outside it.
        _kill_group(proc, signal.SIGKILL)
        self._family.end()
        with self._proc_lock:
            self._proc = None
        launch.finished_at = datetime.now(UTC)
        rc = proc.returncode
        if rc is not None and rc < 0:
            launch.signal = -rc
        else:
            launch.return_code = rc
            if rc is not None and self._exit_signal is not None:
                launch.signal = self._exit_signal(rc)
        if launch.status == "success" and not self._state.done_seen:
            launch.status = "failed"
        self._sink.on_launch_end(launch)

    def _blame(self, launch: Launch, in_flight: str | None, *, timed_out: bool) -> None:
        """Turn a runner that died or hung into a failure record for the case it was on."""
        if timed_out:
            limit = self._silence_limit(in_flight) or STARTUP_TIMEOUT_S
            what = f"no message from the runner for {limit:g} s" + (
                " (case_timeout)"
                if in_flight
                else " (`[runner] timeout`)"
                if self._timeout is not None
                else ""
            )
            status = "timed_out"
            launch.status = "timed_out"
        else:
            what = _describe_exit(launch)
            status = "failed"
        launch.reason = what
        tail = launch.stderr_tail().strip() or None
        message = what
        self._state.ended = self._state.ended or what
        if in_flight is not None:
            self._finish(in_flight)
            self._sink.on_message(
                tp.Failure(
                    case_id=in_flight,
                    phase="run",
                    status=status,
                    error_type="RunnerTimeout" if timed_out else "RunnerCrash",
                    message=message,
                    traceback=tail,
                )
            )
            return
        if self._state.plan is None:
            # Died before it could say which cases exist: nothing to restart. Its last words
            # (`No module named tile_runner`, a bad XLA flag) are the cause: say them.
            cause = last_words(tail)
            self._sink.on_message(
                tp.Failure(
                    case_id=None,
                    phase="startup",
                    status=status,
                    error_type="RunnerTimeout" if timed_out else "RunnerCrash",
                    message=f"{message}: {cause}" if cause else message,
                    traceback=tail,
                )
            )
            self._state.plan = []


def _replace(request: tp.RunRequest, **changes: object) -> tp.RunRequest:
    import msgspec

    return msgspec.structs.replace(request, **changes)


def last_words(stderr_tail: str | None) -> str | None:
    """The line of a runner's stderr that most likely says why it died: the last one that
    reads like an error, else the last one (bounded)."""
    lines = [line.strip() for line in (stderr_tail or "").splitlines() if line.strip()]
    if not lines:
        return None
    markers = ("Error", "error:", "Exception", "No module named", "FATAL", "Fatal")
    found = next((line for line in reversed(lines) if any(m in line for m in markers)), None)
    line = found or lines[-1]
    return line if len(line) <= 300 else line[:300] + "…"


def _describe_exit(launch: Launch) -> str:
    if launch.signal is not None:
        try:
            name = signal.Signals(launch.signal).name
        except ValueError:
            name = f"signal {launch.signal}"
        extra = " (out of memory?)" if launch.signal == signal.SIGKILL else ""
        return f"runner killed by {name} (signal {launch.signal}){extra}"
    return f"runner exited with code {launch.return_code} before finishing"


def _read_stream(proc: subprocess.Popen[bytes], out: queue.Queue[object]) -> None:
    decoder = tp.StreamDecoder()
    stream = proc.stdout
    assert stream is not None
    fd = stream.fileno()
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:
            break
        if not chunk:
            break
        # One queue item per chunk, not per line: a chatty runner sends thousands a chunk.
        if events := decoder.feed(chunk):
            out.put(events)
    out.put(decoder.close())
    out.put(_EOF)


def _write_request(proc: subprocess.Popen[bytes], data: bytes) -> None:
    stdin = proc.stdin
    assert stdin is not None
    # A runner (or srun) that dies before reading its request is reported by the session.
    with contextlib.suppress(OSError, ValueError):
        stdin.write(data)
    with contextlib.suppress(OSError, ValueError):
        stdin.close()


def _terminate(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the process group, then SIGKILL if it is still there after a grace period."""
    if proc.poll() is not None:
        return
    _kill_group(proc, signal.SIGTERM)
    try:
        proc.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        _kill_group(proc, signal.SIGKILL)
        proc.wait()


def _kill_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)
