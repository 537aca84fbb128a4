"""Fetching through pooch: cache layout, offline mode, progress, and error translation."""

from __future__ import annotations

import errno
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from ._archive import extract
from ._errors import ArchiveError, CacheError, ChecksumError, DownloadError, OfflineError
from ._records import sha256_file
from ._registry import DownloadEntry, Registry, lookup
from ._transfer import Downloader, ProgressCallback, quiet_pooch, transfer_error

__all__ = [
    "DEFAULT_DEADLINE",
    "DEFAULT_RETRIES",
    "DEFAULT_TIMEOUT",
    "CacheInfo",
    "cached_info",
    "fetch",
    "resolve_cache_dir",
    "resolve_offline",
]

DEFAULT_TIMEOUT = 30.0
"""Seconds to wait for the server to connect or to send the next bytes."""
DEFAULT_DEADLINE = 3600.0
"""Seconds one file's whole transfer may take: a server that trickles bytes never times out."""

DEFAULT_RETRIES = 2
"""Attempts after the first for a transfer that failed on the way (a dropped connection, a
timeout, an HTTP 5xx or 429), through pooch's `retry_if_failed` (it waits 1 s, then 2 s)."""

_TRUE = ("1", "true", "yes")
_FALSE = ("0", "false", "no", "")


@dataclass(frozen=True, slots=True)
class CacheInfo:
    """What the cache holds for one entry (for `tile fetch --list`); nothing is hashed."""

    name: str
    url: str
    sha256: str
    description: str | None
    path: Path  # what `fetch` returns: the file, or the extracted directory for archives
    cached: bool  # `fetch` would succeed without the network
    size_bytes: int | None  # size of the downloaded file, None when it is not in the cache


def resolve_cache_dir(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The tile cache root: `cache_dir`, else `TILE_CACHE_DIR`, else the user cache dir."""
    if cache_dir is not None and str(cache_dir):
        return Path(cache_dir).expanduser().absolute()
    env = os.environ.get("TILE_CACHE_DIR", "")
    if env:
        return Path(env).expanduser().absolute()
    import pooch  # lazily: `tile --help` should not pay for pooch and its imports

    return Path(pooch.os_cache("tile")).expanduser().absolute()


def resolve_offline(offline: bool | None = None) -> bool:
    """Offline mode: `offline`, else `TILE_OFFLINE` (1/true/yes or 0/false/no), else off."""
    if offline is not None:
        return offline
    raw = os.environ.get("TILE_OFFLINE", "").strip().lower()
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise DownloadError(
        f"TILE_OFFLINE={os.environ['TILE_OFFLINE']!r} is not a boolean",
        hint="set TILE_OFFLINE to 1, true or yes (or 0, false, no, or leave it unset)",
    )


@dataclass(frozen=True, slots=True)
class _Layout:
    """Where one entry lives: `<root>/downloads/<name>/<sha256[:16]>/`.

    Inside: `download/<file>` (the verified download) and, for archives, `extracted/` (or
    `extracted-<key>/` when `members` picks a part of the archive).
    """

    top: Path  # <root>/downloads, never removed
    entry_dir: Path
    file: Path
    extracted: Path

    @classmethod
    def of(cls, entry: DownloadEntry, root: Path) -> _Layout:
        top = root / "downloads"
        entry_dir = top / entry.name / entry.sha256[:16]
        extracted = "extracted"
        if entry.members is not None:
            key = hashlib.sha256("\0".join(entry.members).encode()).hexdigest()[:12]
            extracted = f"extracted-{key}"
        return cls(top, entry_dir, entry_dir / "download" / _filename(entry), entry_dir / extracted)

    def result(self, entry: DownloadEntry) -> Path:
        return self.file if entry.archive is None else self.extracted


def _filename(entry: DownloadEntry) -> str:
    base = unquote(urlsplit(entry.url).path.rsplit("/", 1)[-1])
    safe = "".join(c if c.isascii() and (c.isalnum() or c in "._-") else "_" for c in base)
    safe = safe.lstrip(".")[:200]
    return safe or entry.name


def fetch(
    name: str,
    registry: Registry,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    offline: bool | None = None,
    progress: ProgressCallback | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    deadline: float = DEFAULT_DEADLINE,
    retries: int = DEFAULT_RETRIES,
) -> Path:
    """Return the local path of `name` (file, or extracted directory), downloading if needed.

    `timeout` bounds each silence of the server, `deadline` the whole transfer (seconds, all
    attempts together); a transfer that fails on the way is tried `retries` more times.
    """
    entry = lookup(name, registry)
    layout = _Layout.of(entry, resolve_cache_dir(cache_dir))
    offline = resolve_offline(offline)
    if entry.archive is not None and layout.extracted.is_dir():
        return layout.extracted
    if offline:
        _check_cached(entry, layout)
    else:
        _download(entry, layout, progress, timeout=timeout, deadline=deadline, retries=retries)
    if entry.archive is None:
        return layout.file
    try:
        return extract(layout.file, entry, layout.extracted)
    except ArchiveError:
        # A verified archive that cannot be unpacked safely will never work with this pin.
        layout.file.unlink(missing_ok=True)
        _prune(layout.file.parent, layout.top)
        raise


def cached_info(
    name: str, registry: Registry, *, cache_dir: str | os.PathLike[str] | None = None
) -> CacheInfo:
    """Describe the cache state of `name` without touching the network or hashing files."""
    entry = lookup(name, registry)
    layout = _Layout.of(entry, resolve_cache_dir(cache_dir))
    size = layout.file.stat().st_size if layout.file.is_file() else None
    cached = layout.file.is_file() or (entry.archive is not None and layout.extracted.is_dir())
    return CacheInfo(
        name=entry.name,
        url=entry.url,
        sha256=entry.sha256,
        description=entry.description,
        path=layout.result(entry),
        cached=cached,
        size_bytes=size,
    )


def _check_cached(entry: DownloadEntry, layout: _Layout) -> None:
    if not layout.file.is_file():
        raise OfflineError(
            f"download `{entry.name}` is not in the cache ({layout.file}) and offline mode is on",
            entry=entry.name,
            url=entry.url,
            hint=f"run `tile fetch {entry.name}` with network access first",
        )
    actual = sha256_file(layout.file)
    if actual != entry.sha256:
        raise ChecksumError(
            f"cached copy of `{entry.name}` at {layout.file} has sha256 {actual}, "
            f"expected {entry.sha256}",
            entry=entry.name,
            url=entry.url,
            hint=f"run `tile fetch {entry.name}` while online to replace it",
            expected=entry.sha256,
            actual=actual,
        )


def _download(
    entry: DownloadEntry,
    layout: _Layout,
    progress: ProgressCallback | None,
    *,
    timeout: float,
    deadline: float,
    retries: int,
) -> None:
    import pooch
    import requests

    downloader = Downloader(entry, progress, timeout, deadline)
    try:
        with quiet_pooch():
            # pooch skips the network when the file is there with the right hash, and otherwise
            # streams into a temp file beside it that it renames only after the hash matched;
            # a requests error (what the downloader lets through) is retried, ours are not.
            # A one-file Pooch rather than `pooch.retrieve`, which has no `retry_if_failed`.
            store = pooch.Pooch(
                path=layout.file.parent,
                base_url="",
                registry={layout.file.name: f"sha256:{entry.sha256}"},
                urls={layout.file.name: entry.url},
                retry_if_failed=retries,
            )
            store.fetch(layout.file.name, downloader=downloader)
    except DownloadError:
        _prune(layout.file.parent, layout.top)
        raise
    except requests.RequestException as exc:  # before OSError: it is one
        _prune(layout.file.parent, layout.top)
        raise transfer_error(entry, exc, timeout, retries) from exc
    except ValueError as exc:  # pooch's own hash check, should ours ever be bypassed
        _prune(layout.file.parent, layout.top)
        raise ChecksumError(
            f"download `{entry.name}` from {entry.url} does not match its sha256: {exc}",
            entry=entry.name,
            url=entry.url,
            hint=f"if the file changed upstream on purpose, update `sha256` of `{entry.name}`",
            expected=entry.sha256,
        ) from exc
    except OSError as exc:
        _prune(layout.file.parent, layout.top)
        full = exc.errno in (errno.ENOSPC, errno.EDQUOT)  # the disk, not the path
        raise (DownloadError if full else CacheError)(
            f"download `{entry.name}`: cannot write to the cache {layout.entry_dir}: {exc}",
            entry=entry.name,
            url=entry.url,
            hint="point TILE_CACHE_DIR at a writable directory with free space",
        ) from exc
    if downloader.downloaded and progress is not None:
        size = layout.file.stat().st_size
        progress(entry.name, size, size)


def _prune(start: Path, stop: Path) -> None:
    """Remove empty directories from `start` up to, not including, `stop`."""
    path = start
    while path != stop and stop in path.parents:
        try:
            path.rmdir()
        except OSError:
            return
        path = path.parent
