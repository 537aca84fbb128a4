"""One runner process: start it in its own process group, feed it, read it, end it.

What a process is (its argument vector, log and exit) is `Launch`; what to do with the
protocol messages it writes is the session's business (`_session.py`).
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import tile_protocol as tp
from tile_harness import signals
from tile_harness._errors import ExitCode, os_failure
from tile_harness._stderr_log import StderrLog

if TYPE_CHECKING:
    import tile_artifacts as ta

__all__ = [
    "NOT_PROTOCOL",
    "STARTUP_TIMEOUT_S",
    "RunnerSpec",
    "EOF",
    "REAP_WAIT_S",
    "STOP_GRACE_S",
    "Launch",
    "LaunchCounter",
    "death_failure",
    "describe_exit",
    "unspoken",
    "hang_reason",
    "kill_group",
    "last_words",
    "reap",
    "silence_limit",
    "spawn",
    "stream_events",
    "terminate",
]

STDERR_TAIL_BYTES = 4000
STOP_GRACE_S = 3.0
REAP_WAIT_S = 10.0

STARTUP_TIMEOUT_S = 120.0
"""How long a runner may take to say hello (importing JAX on a loaded machine)."""
EOF = object()
"""What `stream_events` puts on its queue after the runner's last batch of messages."""


@dataclass(frozen=True)
class RunnerSpec:
    """How the runners of a session start and how long they may stay silent.

    Each runner is `PYTHON -m tile_runner`, started with this process's environment plus
    `env_overrides`. A launcher changes that: `argv_prefix` goes in front (`srun ... --`),
    `environ` replaces the inherited environment, `startup_timeout=None` waits for `hello`
    however long a queued job takes, and `exit_signal` reads a signal out of the exit status
    (srun: 128+N). `timeout` (`[runner] timeout`) is how long a runner may stay silent outside
    a case: while it starts (until `hello`; a queued job's wait is not counted) and between
    cases; None allows the larger of `case_timeout` and STARTUP_TIMEOUT_S. A step of a batch
    made ready ahead of the cases' turn is a case's work: `case_timeout` (`silence_limit`).
    """

    python: str
    cwd: Path
    env_overrides: Mapping[str, str]
    case_timeout: float
    timeout: float | None = None
    isolate: bool = False
    argv_prefix: tuple[str, ...] = ()
    environ: Mapping[str, str] | None = None
    startup_timeout: float | None = STARTUP_TIMEOUT_S
    exit_signal: Callable[[int], int | None] | None = None
    exit_wait: float = REAP_WAIT_S
    """How long the runner's process may take to exit after its stream ended (a profiler in
    front of it writes its report then) before it is killed."""
    redactor: ta.Redactor | None = None
    """The run's secrets, hidden in each runner's stderr log before it reaches the disk."""

    def argv(self) -> list[str]:
        """The argument vector of one runner."""
        return [*self.argv_prefix, self.python, "-m", "tile_runner"]


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
    shard: tp.Shard | None = None
    """The part of a sharded run it served, for the record."""
    log: StderrLog | None = field(default=None, repr=False)
    """What writes the stderr log, secrets hidden, while the runner runs (`spawn`)."""

    @property
    def wall_time_s(self) -> float | None:
        if self.finished_at is None:
            return None
        return (self.finished_at - self.started_at).total_seconds()

    @property
    def signal_name(self) -> str | None:
        """The signal that ended the process by its name (`SIGKILL`), or None."""
        if self.signal is None:
            return None
        try:
            return signal.Signals(self.signal).name
        except ValueError:
            return str(self.signal)

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


class LaunchCounter:
    """Numbers runner processes 1, 2, 3... across every session of one run, from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last = 0

    def __call__(self) -> int:
        with self._lock:
            self._last += 1
            return self._last


def spawn(
    launch: Launch, env: dict[str, str], *, launcher: bool, redactor: ta.Redactor | None
) -> subprocess.Popen[bytes]:
    """Start the runner of `launch` in a new process group, stderr into its log file.

    With a `redactor` (every runner of a run directory) the CLI reads the runner's stderr
    and writes it, secrets hidden, to the log (`_stderr_log.py`); without one (a question's
    runner, its log in a temporary directory) the runner writes its log itself.
    `launcher`: the argument vector starts with a launcher (srun), whose absence the error
    names instead of the runner's Python.
    """
    launch.stderr_log.parent.mkdir(parents=True, exist_ok=True)
    log = StderrLog(launch.stderr_log, redactor) if redactor is not None else None
    launch.log = log
    try:
        with contextlib.nullcontext() if log is not None else launch.stderr_log.open("wb") as raw:
            proc = subprocess.Popen(
                launch.args,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE if log is not None else raw,
                cwd=launch.cwd,
                env=env,
                start_new_session=True,
            )
    except OSError as exc:
        if log is not None:
            log.abandon()
        hint = (
            "check that the launcher's command exists and can be run"
            if launcher
            else "set `[runner] python` in tile.toml (or TILE_RUNNER_PYTHON) to an "
            "interpreter that has tile-runner installed"
        )
        where = f"start the runner `{launch.args[0]}`"
        raise os_failure(where, exc, hint=hint, code=ExitCode.USAGE) from None
    if log is not None:
        assert proc.stderr is not None
        log.start(proc.stderr)
    return proc


def stream_events(proc: subprocess.Popen[bytes], request: bytes) -> queue.Queue[object]:
    """Write `request` to the runner and decode its stream, each on a thread of its own.

    The queue gets the protocol events in lists, one per chunk read (a chatty runner sends
    thousands of lines a chunk), then `EOF`. Writing on a thread: a launcher may not read its
    stdin before the job starts (srun waiting in the queue), and a large request must not
    block the loop that watches the clock. Neither thread takes Ctrl-C from the main one.
    """
    events: queue.Queue[object] = queue.Queue()
    read, write = signals.quiet(_read_stream), signals.quiet(_write_request)
    threading.Thread(target=read, args=(proc, events), daemon=True).start()
    threading.Thread(target=write, args=(proc, request), daemon=True).start()
    return events


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
        if events := decoder.feed(chunk):
            out.put(events)
    # Closed here, where it was read to its end: a harness embedded in a long-lived program
    # (a notebook, a test session) starts many runners and must not leak their pipes.
    with contextlib.suppress(OSError):
        stream.close()
    out.put(decoder.close())
    out.put(EOF)


def _write_request(proc: subprocess.Popen[bytes], data: bytes) -> None:
    stdin = proc.stdin
    assert stdin is not None
    # A runner (or srun) that dies before reading its request is reported by the session.
    with contextlib.suppress(OSError, ValueError):
        stdin.write(data)
    with contextlib.suppress(OSError, ValueError):
        stdin.close()


def reap(proc: subprocess.Popen[bytes], wait: float = REAP_WAIT_S) -> int | None:
    """Wait `wait` seconds for the runner to exit (killing it if it will not), then kill what
    it left behind.

    A runner that exits leaves no orphans in its process group.
    """
    try:
        proc.wait(timeout=wait)
    except subprocess.TimeoutExpired:
        kill_group(proc, signal.SIGKILL)
        proc.wait()
    kill_group(proc, signal.SIGKILL)
    return proc.returncode


def terminate(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the process group, then SIGKILL if it is still there after a grace period."""
    if proc.poll() is not None:
        return
    kill_group(proc, signal.SIGTERM)
    try:
        proc.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        kill_group(proc, signal.SIGKILL)
        proc.wait()


def kill_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    """Send `sig` to the runner's whole process group; gone already is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def silence_limit(spec: RunnerSpec, *, started: bool, in_case: bool) -> float | None:
    """How long a runner may stay silent; None waits for ever.

    `started`: its `hello` came; `in_case`: it is on a case's work (in flight, or a step of a
    batch made ready ahead of the cases' turn).
    """
    if not started:
        # Until `hello` the runner may be waiting for a SLURM allocation (as long as the
        # queue takes: `startup_timeout=None`) or importing JAX on a loaded machine.
        if spec.startup_timeout is None:
            return None
        return (
            spec.timeout
            if spec.timeout is not None
            else max(spec.case_timeout, spec.startup_timeout)
        )
    if in_case:
        return spec.case_timeout
    # Between cases the runner may be importing kernel modules or compiling: allow at
    # least STARTUP_TIMEOUT_S there unless `[runner] timeout` says otherwise.
    return spec.timeout if spec.timeout is not None else max(spec.case_timeout, STARTUP_TIMEOUT_S)


def describe_exit(launch: Launch) -> str:
    """How a runner ended before `done`, in words: the signal (OOM?) or the exit code."""
    if launch.signal is not None:
        try:
            name = signal.Signals(launch.signal).name
        except ValueError:
            name = f"signal {launch.signal}"
        extra = " (out of memory?)" if launch.signal == signal.SIGKILL else ""
        return f"runner killed by {name} (signal {launch.signal}){extra}"
    return f"runner exited with code {launch.return_code} before finishing"


NOT_PROTOCOL = "line that is not tile's protocol"
"""How `unspoken` names a runner's stdout that is no protocol at all (the hints key on it)."""


def unspoken(noise: tp.BadLine | tp.UnknownMessage) -> str:
    """What a runner that never said `hello` wrote instead, for the reason it ended: a hello
    tile could not read (its field and why), or output that is not tile's protocol at all."""
    text = noise.raw.decode("utf-8", "replace").strip()
    shown = repr(text[:80] + ("..." if len(text) > 80 else ""))
    if isinstance(noise, tp.UnknownMessage):
        return f"its stdout began with a message of unknown type `{noise.type}`: {shown}"
    if '"hello"' in text:
        return f"its `hello` could not be read ({noise.error}): {shown}"
    return f"its stdout began with a {NOT_PROTOCOL}: {shown}"


def hang_reason(limit: float, *, in_case: bool, configured: bool, ahead: bool = False) -> str:
    """Why a silent runner was given up on: which limit its silence reached, and where
    (`ahead`: while it made a batch of cases ready before their turn)."""
    which = " (case_timeout)" if in_case else " (`[runner] timeout`)" if configured else ""
    where = " while making cases ready ahead of their turn" if ahead else ""
    return f"no message from the runner for {limit:g} s{which}{where}"


def death_failure(launch: Launch, case_id: str | None, *, timed_out: bool) -> tp.Failure:
    """The failure that stands for a runner that died or hung (`launch.reason` says how): on
    the case it was on, else at startup, where its last words (`No module named tile_runner`,
    a bad XLA flag) are the cause."""
    tail = launch.stderr_tail().strip() or None
    message = launch.reason or describe_exit(launch)
    if case_id is None and (cause := last_words(tail)):
        message = f"{message}: {cause}"
    return tp.Failure(
        case_id=case_id,
        phase="run" if case_id is not None else "startup",
        status="timed_out" if timed_out else "failed",
        error_type="RunnerTimeout" if timed_out else "RunnerCrash",
        message=message,
        traceback=tail,
    )


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
