"""How bytes come over the network: pooch's retries around a stream bound by a deadline,
progress, our own sha256 check, and requests' errors in tile's words."""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any, Protocol

from ._errors import ChecksumError, TransferError
from ._http import DeadlineExceeded, stream_to_file
from ._records import sha256_file
from ._registry import DownloadEntry

__all__ = [
    "Downloader",
    "ProgressBar",
    "ProgressCallback",
    "http_error",
    "quiet_pooch",
    "transfer_error",
]


class ProgressCallback(Protocol):
    """Told about a download: `(name, downloaded_bytes, total_bytes_or_None)`.

    Called with 0 bytes when the transfer starts, after every chunk, and a last time with
    `downloaded == total` once the verified file is in the cache. Never called on cache hits.
    """

    def __call__(self, name: str, downloaded_bytes: int, total_bytes: int | None, /) -> None:
        """Report progress of the download of `name`."""
        ...


def http_error(entry: DownloadEntry, exc: Any, tries: str = "") -> TransferError:
    response = exc.response
    code = response.status_code if response is not None else None
    reason = f" {response.reason}" if response is not None and response.reason else ""
    if response is not None:
        response.close()
    return TransferError(
        f"download `{entry.name}` failed: HTTP {code}{reason} from {entry.url}{tries}",
        entry=entry.name,
        url=entry.url,
        hint=(
            "the server failed; try again later or pin a mirror URL"
            if code is None or code >= 500 or code == 429
            else f"check the `url` of `{entry.name}`; the server refused it"
        ),
        status_code=code,
    )


def transfer_error(
    entry: DownloadEntry, exc: BaseException, timeout: float, retries: int
) -> TransferError:
    """A requests error that outlasted pooch's retries, in tile's words."""
    import requests

    tries = f" ({retries + 1} attempts)" if retries else ""
    if isinstance(exc, requests.HTTPError):
        return http_error(entry, exc, tries)
    if isinstance(exc, requests.Timeout):
        what = f"no data for {timeout:g} s"
    elif isinstance(exc, requests.ConnectionError):
        what = "could not connect or the connection dropped"
    else:
        what = "the transfer was cut short"
    return TransferError(
        f"download `{entry.name}` from {entry.url} failed: {what} ({type(exc).__name__}){tries}",
        entry=entry.name,
        url=entry.url,
        hint=f"check the network and retry `tile fetch {entry.name}`",
    )


class Downloader:
    """pooch downloader: HTTP through pooch, then our own sha256 check.

    A failure that may pass (a dropped or timed-out transfer, HTTP 5xx or 429) leaves as the
    requests error, which pooch's `retry_if_failed` retries; a refusal (other 4xx) and a
    complete file with the wrong sha256 leave as tile errors, which it does not.
    """

    def __init__(
        self,
        entry: DownloadEntry,
        progress: ProgressCallback | None,
        timeout: float,
        deadline: float,
    ) -> None:
        self.entry = entry
        self.downloaded = False
        self.bar = ProgressBar(entry.name, progress) if progress is not None else None
        self.timeout = timeout
        self.deadline = deadline
        self._end: float | None = None  # the deadline counts from the first attempt on

    def __call__(
        self,
        fname: str,
        action: str | os.PathLike[Any] | None,
        pooch: Any,
        *,
        check_only: bool | None = None,
    ) -> None:
        # pooch's Downloader protocol names its parameters (url, output_file, pooch) this way.
        import requests

        url, output_file, entry = fname, action, self.entry
        if output_file is None or check_only:
            raise TypeError("tile_downloads only downloads to a file")
        now = time.monotonic()
        if self._end is None:
            self._end = now + self.deadline
        if now >= self._end:  # pooch's retries are inside the deadline, not on top of it
            raise self._too_slow(url, "before another attempt")
        try:
            target = str(os.fspath(output_file))
            stream_to_file(url, target, timeout=self.timeout, deadline_s=self._end - now,
                           bar=self.bar)  # fmt: skip
        except DeadlineExceeded as exc:
            got = f"{exc.received} of {exc.total} bytes" if exc.total else f"{exc.received} bytes"
            raise self._too_slow(url, f"{got} arrived") from exc
        except requests.HTTPError as exc:
            response = exc.response
            code = response.status_code if response is not None else None
            if code is not None and code < 500 and code != 429:
                raise http_error(entry, exc) from exc
            raise
        actual = sha256_file(Path(output_file))
        if actual != entry.sha256:
            raise ChecksumError(
                f"download `{entry.name}` from {url} has sha256 {actual}, "
                f"expected {entry.sha256}; the file was discarded",
                entry=entry.name,
                url=url,
                hint=f"if the file changed upstream on purpose, update `sha256` of `{entry.name}`",
                expected=entry.sha256,
                actual=actual,
            )
        self.downloaded = True

    def _too_slow(self, url: str, where: str) -> TransferError:
        # A tile error, not a requests one: pooch does not retry it.
        return TransferError(
            f"download `{self.entry.name}` from {url} did not finish within its deadline of "
            f"{self.deadline:g} s ({where})",
            entry=self.entry.name,
            url=url,
            hint="the server is too slow; retry later, pin a faster mirror, or allow more "
            "time with `tile fetch --deadline SECONDS`",
        )


class ProgressBar:
    """Feeds a ProgressCallback from the transfer (`_http.ProgressBar`)."""

    def __init__(self, name: str, callback: ProgressCallback) -> None:
        self.name = name
        self.callback = callback
        self._total: int | None = None
        self._done = 0

    def start(self, total: int | None) -> None:
        self._total = total
        self._done = 0
        self.callback(self.name, 0, total)

    def update(self, n: int) -> None:
        # The final exact report comes from `fetch` once the verified file is in place.
        self._done += n
        done = min(self._done, self._total) if self._total else self._done
        self.callback(self.name, done, self._total)


@contextlib.contextmanager
def quiet_pooch() -> Generator[None]:
    """Keep pooch's INFO lines off stderr: the CLI speaks for us."""
    import pooch

    logger = pooch.get_logger()
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)
