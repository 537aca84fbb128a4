"""tile-downloads: pinned, cached, sha256-verified data for kernels (through pooch)."""

from __future__ import annotations

from ._errors import (
    ArchiveError,
    CacheError,
    ChecksumError,
    DownloadError,
    OfflineError,
    RegistryError,
    TransferError,
    UnsafeArchiveError,
)
from ._fetch import (
    DEFAULT_DEADLINE,
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT,
    CacheInfo,
    cached_info,
    fetch,
    resolve_cache_dir,
    resolve_offline,
)
from ._records import FileRecord, file_records
from ._registry import ArchiveKind, DownloadEntry, Registry, registry_from_mapping
from ._transfer import ProgressCallback

__all__ = [
    # registry
    "ArchiveKind",
    "DownloadEntry",
    "Registry",
    "registry_from_mapping",
    # fetching and the cache
    "DEFAULT_DEADLINE",
    "DEFAULT_RETRIES",
    "DEFAULT_TIMEOUT",
    "CacheInfo",
    "ProgressCallback",
    "cached_info",
    "fetch",
    "resolve_cache_dir",
    "resolve_offline",
    # fingerprints for the artifact manifest
    "FileRecord",
    "file_records",
    # errors
    "ArchiveError",
    "CacheError",
    "ChecksumError",
    "DownloadError",
    "OfflineError",
    "RegistryError",
    "TransferError",
    "UnsafeArchiveError",
]
