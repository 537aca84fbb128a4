"""The error tree of tile-report: one root with a hint, and a family for the history database."""

from __future__ import annotations

__all__ = ["HistoryBusyError", "HistoryError", "ReportError"]


class ReportError(ValueError):
    """Raised for any problem of tile-report; `e.message` names the file, `e.hint` what to do."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class HistoryError(ReportError):
    """Raised when the history database is corrupt, of a newer schema, or not a history at all."""


class HistoryBusyError(HistoryError):
    """Raised when another process held the history database locked past the busy timeout."""
