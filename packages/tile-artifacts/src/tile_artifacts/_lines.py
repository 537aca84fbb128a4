"""A JSON Lines file read one line at a time, so that its size never decides the memory used.

A runner's log makes `events.jsonl` as large as the run is long (1.24 GB was seen); reading it
whole to split it held the bytes, the text and every line at once, and `tile schema-check`
ran out of memory. Here only one line is in memory at a time. As everywhere in tile, a last
line without its newline is what a writer killed mid-write left: it is not a record, and
`torn` says it was there.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from tile_artifacts._paths import open_regular

__all__ = ["JsonLines", "NotUtf8Error"]


class NotUtf8Error(ValueError):
    """Raised while reading a line that is not UTF-8; `byte` is its offset in the file."""

    def __init__(self, byte: int) -> None:
        super().__init__(f"not UTF-8 text (byte {byte})")
        self.byte = byte


class JsonLines:
    """The whole lines of a file as `(line number, text)`, newline removed, read lazily.

    Iterating opens the file (a regular file only: `open_regular`) and raises what opening
    raises, or NotUtf8Error at the first line that does not decode.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.torn: int | None = None
        """The number of the last line when it had no newline (set once iterated)."""

    def __iter__(self) -> Iterator[tuple[int, str]]:
        offset = 0
        with open_regular(self.path) as f:
            # Binary lines split at b"\n" only, as the writer joins them.
            for number, raw in enumerate(f, start=1):
                if not raw.endswith(b"\n"):
                    self.torn = number
                    return
                try:
                    text = raw[:-1].decode("utf-8")
                except UnicodeDecodeError as e:
                    raise NotUtf8Error(offset + e.start) from None
                offset += len(raw)
                yield number, text
