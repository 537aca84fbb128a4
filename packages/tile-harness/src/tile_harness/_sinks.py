"""Where a session's events go: the `Sink` protocol, the sinks others build on, and `--json`.

A runner session knows only processes and protocol messages; what to keep, record or show is
a sink's business. Most sinks care about a few events: `NullSink` ignores all of them and
`Relay` passes all of them on, so that a sink says only what it does differently. `Tee` hands
every event to several sinks in order; `JsonLines` writes the protocol messages to a stream.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, BinaryIO, Protocol

import tile_protocol as tp

if TYPE_CHECKING:
    from tile_harness._process import Launch

__all__ = ["JsonLines", "NullSink", "Relay", "Sink", "Tee"]


class Sink(Protocol):
    """Receives everything that happens during a session, in order."""

    def on_launch(self, launch: Launch) -> None:
        """A runner process was started."""

    def on_launch_end(self, launch: Launch) -> None:
        """A runner process ended; `launch` says how."""

    def on_hello(self, hello: tp.Hello) -> None:
        """A runner introduced itself (every runner of a session does)."""

    def on_plan(self, plan: tp.Plan) -> None:
        """The session's plan: the first runner's, once."""

    def on_case_start(self, start: tp.CaseStart) -> None:
        """A runner began a case."""

    def on_message(self, message: tp.Message) -> None:
        """Results, artifacts, inspect views, logs and failures (runner-sent or synthesized)."""

    def on_noise(self, event: tp.BadLine | tp.UnknownMessage) -> None:
        """A line on the stream that is not a message this CLI knows."""


class NullSink:
    """A sink that ignores everything; subclasses keep what they need."""

    def on_launch(self, launch: Launch) -> None: ...
    def on_launch_end(self, launch: Launch) -> None: ...
    def on_hello(self, hello: tp.Hello) -> None: ...
    def on_plan(self, plan: tp.Plan) -> None: ...
    def on_case_start(self, start: tp.CaseStart) -> None: ...
    def on_message(self, message: tp.Message) -> None: ...
    def on_noise(self, event: tp.BadLine | tp.UnknownMessage) -> None: ...


class Relay:
    """A sink in front of another that passes every event on; subclasses change a few."""

    def __init__(self, inner: Sink) -> None:
        self.inner = inner

    def on_launch(self, launch: Launch) -> None:
        self.inner.on_launch(launch)

    def on_launch_end(self, launch: Launch) -> None:
        self.inner.on_launch_end(launch)

    def on_hello(self, hello: tp.Hello) -> None:
        self.inner.on_hello(hello)

    def on_plan(self, plan: tp.Plan) -> None:
        self.inner.on_plan(plan)

    def on_case_start(self, start: tp.CaseStart) -> None:
        self.inner.on_case_start(start)

    def on_message(self, message: tp.Message) -> None:
        self.inner.on_message(message)

    def on_noise(self, event: tp.BadLine | tp.UnknownMessage) -> None:
        self.inner.on_noise(event)


class Tee:
    """Hands every event to each of `sinks`, in order: the first has it before the next."""

    def __init__(self, *sinks: Sink) -> None:
        self.sinks = sinks

    def on_launch(self, launch: Launch) -> None:
        for sink in self.sinks:
            sink.on_launch(launch)

    def on_launch_end(self, launch: Launch) -> None:
        for sink in self.sinks:
            sink.on_launch_end(launch)

    def on_hello(self, hello: tp.Hello) -> None:
        for sink in self.sinks:
            sink.on_hello(hello)

    def on_plan(self, plan: tp.Plan) -> None:
        for sink in self.sinks:
            sink.on_plan(plan)

    def on_case_start(self, start: tp.CaseStart) -> None:
        for sink in self.sinks:
            sink.on_case_start(start)

    def on_message(self, message: tp.Message) -> None:
        for sink in self.sinks:
            sink.on_message(message)

    def on_noise(self, event: tp.BadLine | tp.UnknownMessage) -> None:
        for sink in self.sinks:
            sink.on_noise(event)


class JsonLines(NullSink):
    """`--json`: every protocol message, one JSON line each, flushed as it comes.

    Noise and process events are not protocol messages and are not written; they are in the
    run directory's events.jsonl. `redact` (a run's `Redactor.json_text`) hides the run's
    secrets in each line, as the run directory does: a kernel's exception quoting a token
    reached stdout as is.
    """

    def __init__(self, out: BinaryIO, redact: Callable[[str], str] | None = None) -> None:
        self.out = out
        self._redact = redact
        self._lock = threading.Lock()  # the shards of a run send from their own threads

    def on_hello(self, hello: tp.Hello) -> None:
        self._write(hello)

    def on_plan(self, plan: tp.Plan) -> None:
        self._write(plan)

    def on_case_start(self, start: tp.CaseStart) -> None:
        self._write(start)

    def on_message(self, message: tp.Message) -> None:
        self._write(message)

    def _write(self, message: tp.Message) -> None:
        line = tp.encode(message)
        if self._redact is not None:
            line = self._redact(line[:-1].decode("utf-8")).encode("utf-8") + b"\n"
        with self._lock:
            self.out.write(line)
            self.out.flush()
