"""`tile bench --cold-process`: the same cases in two fresh runners, empty cache then filled.

What a user feels when a run is slow to start is the time from launching a process to its
first result, and how much of that JAX's persistent cache takes away. The first runner
compiles every case into an empty cache directory; the second, started afresh, finds them
all there. Only the second runner's results go into the run (it is an ordinary run with a
warm cache); the first one's timings, cache events and any failures become diagnostics.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import tile_protocol as tp
from tile_harness._process import Launch, LaunchCounter
from tile_harness._requests import derive
from tile_harness._runners import make_session
from tile_harness._sinks import Relay, Sink

if TYPE_CHECKING:
    from tile_harness._record import RunRecorder
    from tile_harness._session import RunnerSession

__all__ = ["ColdWarmRun", "ProcessWatch"]


@dataclass
class ProcessWatch:
    """What one runner process of the pair did, seen from the CLI."""

    role: Literal["cold", "warm"]
    started: float | None = None
    first_result: float | None = None
    ended: float | None = None
    launches: list[Launch] = field(default_factory=list[Launch])
    phases: dict[str, tp.Phases] = field(default_factory=dict[str, tp.Phases])
    cache_events: list[tp.CacheEvent] = field(default_factory=list[tp.CacheEvent])

    @property
    def time_to_first_result_s(self) -> float | None:
        """Seconds from spawning the runner to its first result (import, JAX, compile...)."""
        if self.started is None or self.first_result is None:
            return None
        return self.first_result - self.started

    @property
    def wall_s(self) -> float | None:
        """Seconds from spawning the runner to its exit."""
        if self.started is None or self.ended is None:
            return None
        return self.ended - self.started


class _Timed(Relay):
    """A sink in front of another that notes when results arrive and what they compiled."""

    def __init__(self, watch: ProcessWatch, inner: Sink) -> None:
        super().__init__(inner)
        self.watch = watch

    def on_launch(self, launch: Launch) -> None:
        self.watch.started = self.watch.started or time.monotonic()
        self.watch.launches.append(launch)
        super().on_launch(launch)

    def on_launch_end(self, launch: Launch) -> None:
        self.watch.ended = time.monotonic()
        super().on_launch_end(launch)

    def on_message(self, message: tp.Message) -> None:
        if isinstance(message, tp.BenchResult | tp.TestResult | tp.BuildResult):
            if self.watch.first_result is None:
                self.watch.first_result = time.monotonic()
            if isinstance(message, tp.BenchResult | tp.BuildResult):
                self.watch.phases[message.case_id] = message.phases
        elif isinstance(message, tp.CacheEvent):
            self.watch.cache_events.append(message)
        super().on_message(message)


class _ColdSink(Relay):
    """The cold runner's view of the recorder: its process is recorded, its results are not.

    Its runner goes into commands.jsonl and events like any other; its failures and warnings
    become warnings of the run ("cold process: ..."), since the run's cases are the warm
    runner's, and so are its hello, plan and progress.
    """

    def on_hello(self, hello: tp.Hello) -> None: ...
    def on_plan(self, plan: tp.Plan) -> None: ...
    def on_case_start(self, start: tp.CaseStart) -> None: ...
    def on_noise(self, event: tp.BadLine | tp.UnknownMessage) -> None: ...

    def on_message(self, message: tp.Message) -> None:
        text: str | None = None
        if isinstance(message, tp.Failure):
            where = message.case_id or "(run)"
            text = f"cold process: {where}: {message.error_type}: {message.message}"
        elif isinstance(message, tp.Log) and message.level in ("warning", "error"):
            text = f"cold process: {message.message}"
        if text is not None:
            self.inner.on_message(tp.Log(level="warning", message=text))


class ColdWarmRun:
    """Runs the request twice, one fresh runner each, both on `cache_dir` (empty at first)."""

    def __init__(
        self,
        request: tp.RunRequest,
        recorder: RunRecorder,
        *,
        cache_dir: Path,
        between: Callable[[], None] | None = None,
        sink: Sink | None = None,
    ) -> None:
        self._request = derive(request, jax_cache_dir=str(cache_dir))
        self._resolved = recorder.setup.resolved
        self._sink = sink or recorder
        self._log_dir = recorder.run_dir / "logs"
        self._redactor = recorder.writer.redactor
        self._between = between
        self._numbering = LaunchCounter()
        self._lock = threading.Lock()
        self._session: RunnerSession | None = None
        self._stopping = False
        self.cold = ProcessWatch("cold")
        self.warm = ProcessWatch("warm")

    def run(self) -> bool:
        """Cold runner, then (unless stopped) warm runner; True when neither died or hung."""
        cold_ok = self._start(_Timed(self.cold, _ColdSink(self._sink)))
        if self._between is not None:
            self._between()
        with self._lock:
            if self._stopping:
                return False
        return self._start(_Timed(self.warm, self._sink)) and cold_ok

    def stop(self) -> None:
        """Stop the runner in flight and start no other."""
        with self._lock:
            self._stopping = True
            session = self._session
        if session is not None:
            session.stop()

    def _start(self, sink: Sink) -> bool:
        session = make_session(self._request, self._resolved, sink, log_dir=self._log_dir,
                               numbering=self._numbering, redactor=self._redactor)  # fmt: skip
        with self._lock:
            if self._stopping:
                return False
            self._session = session
        return session.run()
