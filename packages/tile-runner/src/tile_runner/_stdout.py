"""Protocol-safe stdout: the wire protocol gets a private fd; fd 1 and sys.stdout go to stderr."""

from __future__ import annotations

import contextlib
import os
import sys
import threading

import msgspec

from tile_protocol import Message, encode

__all__ = ["ProtocolWriter", "protect_stdout"]


class ProtocolWriter:
    """Writes whole protocol messages to one file descriptor, one write per message.

    Every message is stamped with the sending pid, a sequence number and the request's token
    (`bind`), so that the CLI can tell the runner's lines from lines another process wrote
    into the pipe. A child forked from the runner (by a kernel or a library) loses the
    descriptor at the fork: its writer goes quiet instead of speaking for the runner.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._lock = threading.Lock()
        self._seq = 0
        self._token: str | None = None
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._forked)

    @property
    def fd(self) -> int:
        """The descriptor protocol lines go to (-1 in a forked child)."""
        return self._fd

    def bind(self, token: str | None) -> None:
        """Stamp every message from now on with the request's token."""
        self._token = token

    def send(self, message: Message) -> None:
        """Encode and write `message` now (no buffering, so a crash loses nothing sent)."""
        with self._lock:
            if self._fd < 0:
                return
            self._seq += 1
            stamped = msgspec.structs.replace(
                message, pid=os.getpid(), seq=self._seq, token=self._token
            )
            data = memoryview(encode(stamped))
            # os.write may write less than asked (signals, big lines on pipes): finish the line.
            while data:
                written = os.write(self._fd, data)
                data = data[written:]

    def _forked(self) -> None:
        """In a forked child: close the protocol descriptor; this writer sends nothing more."""
        fd, self._fd = self._fd, -1
        # A fork may happen while another thread holds the lock; the child needs a fresh one.
        self._lock = threading.Lock()
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)


def protect_stdout() -> ProtocolWriter:
    """Move the protocol to a duplicate of fd 1, then point fd 1 and sys.stdout at stderr.

    Call before importing jax or user code: afterwards print(), os.write(1, ...) and native
    libraries writing to fd 1 all land on stderr and cannot corrupt the stream.
    """
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass
    protocol_fd = os.dup(1)  # not inheritable: child processes never see the protocol
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return ProtocolWriter(protocol_fd)
