"""The error tree of tile-protocol."""

from __future__ import annotations

__all__ = ["DecodeError", "ProtocolError", "VersionError"]


class ProtocolError(ValueError):
    """Root of every error raised by tile-protocol."""

    hint: str | None = None

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


class DecodeError(ProtocolError):
    """Raised when a line is not a valid protocol message."""


class VersionError(ProtocolError):
    """Raised when the peer speaks a newer major protocol version than this reader."""
