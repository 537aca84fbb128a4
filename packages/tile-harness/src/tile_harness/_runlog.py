"""The run directory's append-only files (events, metrics, commands): batched, never fatal.

Two reasons this sits between the recorder and the ArtifactWriter. Speed: a runner may log
200,000 lines, and one fsynced write per line took a minute; chatter (the runner's `log`
messages) is gathered and written in batches, while every other event goes out at once with
whatever is pending before it, in order. Faults: a full disk or a revoked directory must not
end the run in a traceback with the measured results unprinted; the first failed write is
kept (it is the one that explains the rest), later writes are skipped so that the files keep
whole lines in order, and the command reports the fault after it printed its results.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from tile_harness._errors import CliError, ExitCode

if TYPE_CHECKING:
    import tile_artifacts as ta

__all__ = ["BATCH_LINES", "FLUSH_AFTER_S", "RunLog"]

BATCH_LINES = 2000
"""Chatter written in one go at most this many events at a time."""
FLUSH_AFTER_S = 0.2
"""Pending chatter is written at the latest this long after it arrived (a runner that goes
quiet after a log line still has the line on disk almost at once)."""

_encode = msgspec.json.Encoder().encode


class RunLog:
    """Appends events, metrics and command records to one run directory, in order.

    Thread-safe: the sessions of a sharded run and the flush timer share it.
    """

    def __init__(self, writer: ta.ArtifactWriter, *, on_fault: Callable[[ta.ArtifactError], None]):
        self._writer = writer
        self._on_fault = on_fault
        self._pending: list[str] = []  # serialized events.jsonl lines
        self._tool = writer.producer.tool_name
        self._envelope: dict[str, object] = {"schema_name": "tile.event", "schema_version": 1}
        self._envelope.update(tool_name=self._tool, run_id=writer.run_id)
        self._lock = threading.Lock()
        self._timer: threading.Event | None = None  # set: the armed flush is cancelled
        self.fault: ta.ArtifactError | None = None
        """The first write that failed; nothing is appended after it."""

    def event(
        self,
        level: str,
        phase: str,
        event: str,
        message: str,
        fields: dict[str, Any],
        *,
        chatter: bool = False,
    ) -> None:
        """Queue one event; chatter may wait for its batch, anything else is written now.

        Chatter is serialized here without a model (a model per line cost more than the
        rest of the line's way through the CLI); other events are validated EventRecords.
        """
        if chatter:
            line = self._chatter_line(level, phase, event, message, fields)
        else:
            import tile_artifacts as ta

            line = ta.EventRecord(
                timestamp=ta.utc_now(),
                level=level,  # type: ignore[arg-type]
                tool_name=self._tool,
                run_id=self._writer.run_id,
                phase=phase,
                event=event,
                message=message,
                fields=fields,
            ).model_dump_json()
        with self._lock:
            self._pending.append(line)
            if chatter and len(self._pending) < BATCH_LINES:
                self._arm()
            else:
                self._flush()

    def _chatter_line(
        self, level: str, phase: str, event: str, message: str, fields: dict[str, Any]
    ) -> str:
        stamp = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        record: dict[str, object] = {**self._envelope, "timestamp": stamp, "level": level}
        record.update(phase=phase, event=event, message=message, fields=fields)
        return _encode(record).decode("utf-8")

    def append(self, relpath: str, *records: ta.ArtifactModel) -> None:
        """Append records to a JSONL file now (events pending before them go first)."""
        with self._lock:
            self._flush()
            self._guard(lambda: self._writer.append_jsonl(relpath, *records))

    def command(self, command_id: str, args: list[str], **fields: Any) -> None:
        """A child process's record in commands/commands.jsonl (ArtifactWriter.command)."""
        with self._lock:
            self._flush()
            self._guard(lambda: self._writer.command(command_id, args, **fields))

    def write(self, action: Callable[[], object]) -> bool:
        """Any other write to the run directory, under the same fault rule; False if skipped
        or failed."""
        with self._lock:
            self._flush()
            return self._guard(action)

    def flush(self) -> None:
        """Write whatever chatter is pending."""
        with self._lock:
            self._flush()

    def close(self) -> None:
        """Flush and stop the timer (before the report and manifest are written)."""
        with self._lock:
            if self._timer is not None:
                self._timer.set()
                self._timer = None
            self._flush()

    def fault_error(self, run_dir: Path, *, report_saved: bool) -> CliError | None:
        """The error a command ends with after a failed write (None: there was none).

        `report_saved`: report.json holds every result all the same (it was rewritten once
        the failed batch had been cut off); else the last checkpoint's report is there.
        """
        error = self.fault
        if error is None:
            return None
        kept = (
            "report.json holds every result above, the other files stop at that write"
            if report_saved
            else "the results above were not all saved (the directory keeps what was written "
            "before that)"
        )
        return CliError(
            f"the run directory `{run_dir}` is incomplete: {error.message}",
            hint=(error.hint or "check free space and permissions")
            + f"; {kept}: rerun once it is fixed, or choose another `--output-dir`",
            code=ExitCode.INFRA,
        )

    def fail(self, error: ta.ArtifactError) -> None:
        """Record a write that failed elsewhere (the final documents) as the fault, if first."""
        with self._lock:
            self._fault(error)

    # ---------------------------------------------------------------- internals

    def _arm(self) -> None:
        if self._timer is None:
            from tile_harness.signals import quiet

            self._timer = threading.Event()
            thread = threading.Thread(target=quiet(self._later), args=(self._timer,))
            thread.daemon = True
            thread.start()

    def _later(self, cancelled: threading.Event) -> None:
        """The flush timer: write the pending chatter FLUSH_AFTER_S after it started."""
        if cancelled.wait(FLUSH_AFTER_S):
            return
        with self._lock:
            if self._timer is cancelled:
                self._timer = None
                self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        import tile_artifacts as ta

        batch, self._pending = self._pending, []
        self._guard(lambda: self._writer.append_lines(ta.EVENTS_JSONL, batch))

    def _guard(self, action: Callable[[], object]) -> bool:
        import tile_artifacts as ta

        if self.fault is not None:
            return False
        try:
            action()
        except ta.ArtifactError as exc:
            self._fault(exc)
            return False
        return True

    def _fault(self, error: ta.ArtifactError) -> None:
        if self.fault is None:
            self.fault = error
            self._pending.clear()
            self._on_fault(error)
