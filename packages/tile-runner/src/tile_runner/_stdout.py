"""Protocol-safe stdout: the wire protocol gets a private fd; fd 1 and sys.stdout go to stderr."""

from __future__ import annotations

import os
import sys
import threading

from tile_protocol import Message, encode

__all__ = ["ProtocolWriter", "protect_stdout"]


class ProtocolWriter:
    """Writes whole protocol messages to one file descriptor, one write per message."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._lock = threading.Lock()

    @property
    def fd(self) -> int:
        """The descriptor protocol lines go to."""
        return self._fd

    def send(self, message: Message) -> None:
        """Encode and write `message` now (no buffering, so a crash loses nothing sent)."""
        data = memoryview(encode(message))
        with self._lock:
            # os.write may write less than asked (signals, big lines on pipes): finish the line.
            while data:
                written = os.write(self._fd, data)
                data = data[written:]


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
