"""A runner's stderr, read through a pipe and written to its log with the run's secrets hidden.

The runner used to write its log itself, and the recorder hid the secrets in it when the
runner ended: a CLI killed in between (SIGKILL, the OOM killer) left a kernel's printed
`GITHUB_TOKEN` on disk. Here no byte reaches the log unredacted: a thread reads the pipe and
writes each piece as soon as `Redactor.stream` lets it (every complete line at once) with an
unbuffered write, so a kill loses at most a line's unfinished end, and the thread holds a
bounded piece of the stream whatever the kernel prints.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING

from tile_harness import signals

if TYPE_CHECKING:
    import tile_artifacts as ta

__all__ = ["LOG_DRAIN_S", "StderrLog"]

LOG_DRAIN_S = 5.0
"""After the runner's process group is gone, how long its log may take to be written out (a
descendant that left the group may still hold the pipe; its log is then left unfinished)."""
_READ = 1 << 16


class StderrLog:
    """The log file of one runner, fed from the runner's stderr pipe by a thread of its own."""

    def __init__(self, path: Path, redactor: ta.Redactor) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._out = path.open("wb", buffering=0)  # each piece is the OS's at once
        self._redactor = redactor
        self._done = threading.Event()

    def start(self, stream: IO[bytes]) -> None:
        """Copy `stream` (the runner's stderr) into the log until its end."""
        threading.Thread(target=signals.quiet(self._copy), args=(stream,), daemon=True).start()

    def abandon(self) -> None:
        """The runner never started: close the (empty) log."""
        self._out.close()
        self._done.set()

    def wait(self, timeout: float = LOG_DRAIN_S) -> bool:
        """Wait until the pipe's end is in the log (the stderr tail is read from it next)."""
        return self._done.wait(timeout)

    def _copy(self, stream: IO[bytes]) -> None:
        writing = True
        try:
            for piece in self._redactor.stream(_chunks(stream.fileno())):
                if writing:
                    writing = _write_all(self._out, piece)
                # A log that cannot be written (disk full) is still read to its end: a runner
                # blocked on a full pipe would hang its case.
        finally:
            with contextlib.suppress(OSError):
                stream.close()
            with contextlib.suppress(OSError):
                self._out.close()
            self._done.set()


def _chunks(fd: int) -> Iterator[bytes]:
    """What the pipe `fd` gives, read by read, until its end."""
    while True:
        try:
            chunk = os.read(fd, _READ)
        except OSError:
            return
        if not chunk:
            return
        yield chunk


def _write_all(out: IO[bytes], data: bytes) -> bool:
    """Write all of `data`; False when the file cannot be written."""
    view = memoryview(data)
    try:
        while view:
            written = out.write(view)
            if not written:
                return False
            view = view[written:]
    except OSError:
        return False
    return True
