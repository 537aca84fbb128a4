"""Errors of tile-downloads: one root, a few families, each naming the entry and what to do."""

from __future__ import annotations

from typing import Any

__all__ = [
    "ArchiveError",
    "ChecksumError",
    "DownloadError",
    "OfflineError",
    "RegistryError",
    "TransferError",
    "UnsafeArchiveError",
]


class DownloadError(OSError):
    """Raised when pinned data cannot be provided; root of every error of this package."""

    def __init__(
        self,
        message: str,
        *,
        entry: str | None = None,
        url: str | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.entry = entry
        self.url = url
        self.hint = hint

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[Any, ...]:
        # OSError pickles only its args; keep entry/url/hint (and subclass fields) too.
        return (self.__class__, (self.message,), self.__dict__)


class RegistryError(DownloadError):
    """Raised when a registry entry is malformed or a name is not in the registry."""


class TransferError(DownloadError):
    """Raised when the server answers with an HTTP error or the transfer fails or is cut short."""

    def __init__(
        self,
        message: str,
        *,
        entry: str | None = None,
        url: str | None = None,
        hint: str | None = None,
        status_code: int | None = None,
    ) -> None:
        super().__init__(message, entry=entry, url=url, hint=hint)
        self.status_code = status_code


class ChecksumError(DownloadError):
    """Raised when downloaded or cached data does not match its pinned sha256."""

    def __init__(
        self,
        message: str,
        *,
        entry: str | None = None,
        url: str | None = None,
        hint: str | None = None,
        expected: str | None = None,
        actual: str | None = None,
    ) -> None:
        super().__init__(message, entry=entry, url=url, hint=hint)
        self.expected = expected
        self.actual = actual


class OfflineError(DownloadError):
    """Raised when offline mode is on and the data is not in the cache."""


class ArchiveError(DownloadError):
    """Raised when an archive cannot be read or lacks a requested member."""


class CacheError(DownloadError):
    """Raised when the cache directory cannot hold the file: not a directory, not writable.

    A full disk stays a plain `DownloadError`: that is the machine's state, not a path given."""


class UnsafeArchiveError(ArchiveError):
    """Raised when an archive member would land outside its directory or is a special file."""
