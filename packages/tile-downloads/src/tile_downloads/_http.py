"""One HTTP download into a file, bounded twice: by silence and by the whole transfer's time.

pooch's downloader reads fixed-size chunks with a per-read timeout, so a server that trickles
a byte every few seconds resets the timeout forever and `tile fetch` never ends. Here each
read returns whatever has arrived (`read1`), so the deadline for the whole transfer is checked
as bytes come, however slowly; `timeout` still bounds each silence.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Protocol

__all__ = ["DeadlineExceeded", "ProgressBar", "stream_to_file"]

_CHUNK = 64 * 1024


class DeadlineExceeded(Exception):
    """The transfer was still going when its deadline came; `received` bytes had arrived."""

    def __init__(self, deadline_s: float, received: int, total: int | None) -> None:
        super().__init__(f"deadline of {deadline_s:g} s passed")
        self.deadline_s = deadline_s
        self.received = received
        self.total = total


class ProgressBar(Protocol):
    """What the transfer reports to: the expected size once known, then each chunk."""

    def start(self, total: int | None) -> None: ...
    def update(self, n: int) -> None: ...


def stream_to_file(
    url: str,
    path: str | os.PathLike[str],
    *,
    timeout: float,
    deadline_s: float,
    bar: ProgressBar | None,
) -> None:
    """GET `url` into `path`. Raises requests' HTTPError for a bad status, requests' Timeout
    or ConnectionError when the server goes silent or drops, DeadlineExceeded past the
    deadline."""
    import requests

    end = time.monotonic() + deadline_s
    with requests.get(url, stream=True, timeout=timeout) as response:
        response.raise_for_status()
        total = int(response.headers.get("content-length") or 0) or None
        if bar is not None:
            bar.start(total)
        received = 0
        with Path(path).open("wb") as out:
            while chunk := _read_some(response.raw):
                out.write(chunk)
                received += len(chunk)
                if bar is not None:
                    bar.update(len(chunk))
                if time.monotonic() > end:
                    raise DeadlineExceeded(deadline_s, received, total)


def _read_some(raw: Any) -> bytes:
    """The bytes that have arrived (at least one, at most a chunk); b"" at the end.

    urllib3's errors are raised as requests' own, which the caller already translates.
    """
    import requests
    from urllib3.exceptions import ProtocolError, ReadTimeoutError

    read = getattr(raw, "read1", None) or raw.read  # read1: urllib3 2
    try:
        return read(_CHUNK, decode_content=True)
    except ReadTimeoutError as exc:
        raise requests.Timeout(str(exc)) from exc
    except ProtocolError as exc:
        raise requests.ConnectionError(str(exc)) from exc
