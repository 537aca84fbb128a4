"""The error tree of tile-artifacts: one root, a family for reading and one for writing."""

from __future__ import annotations

__all__ = ["ArtifactError", "ArtifactReadError", "ArtifactWriteError", "SchemaVersionError"]


class ArtifactError(ValueError):
    """Raised for any artifact problem; `str(e)` is the message, `e.hint` says what to do next."""

    def __init__(self, message: str, *, path: str | None = None, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.hint = hint


class ArtifactReadError(ArtifactError):
    """Raised when a file is missing, unreadable, not JSON or does not match its model."""


class SchemaVersionError(ArtifactReadError):
    """Raised when a document has the wrong `schema_name` or a `schema_version` this tile lacks."""


class ArtifactWriteError(ArtifactError):
    """Raised when the run directory or a file in it cannot be created or written."""
