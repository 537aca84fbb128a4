"""A report's bytes taken apart without building the whole document: its envelope as objects,
and each case and each metric as its own slice of the bytes, to be decoded one at a time.

A 10,000-case report.json is about 57 MB; read as text (one non-ASCII character makes every
character two bytes) and parsed whole, then built into models, it took schema-check to
750 MB. Here msgspec finds where each item of `cases` and `metrics` lies (its slices share
the bytes, they copy nothing), the envelope is what is left with those two arrays emptied,
and a reader decodes an item, keeps what it needs of it and lets it go.

This is the fast way only: where anything is unusual (not valid JSON, a key written twice in
the envelope, an array missing), `report_pieces` returns None and the reader decodes the
document whole, which says in its own words what is wrong.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, cast

import msgspec

__all__ = ["ReportPieces", "report_pieces"]


class _Shell(msgspec.Struct):
    """Where the two long arrays of a report lie; every other key is skipped unread."""

    cases: msgspec.Raw = msgspec.Raw()
    metrics: msgspec.Raw = msgspec.Raw()


@dataclass(frozen=True)
class ReportPieces:
    """The envelope (every key but `cases` and `metrics`, which hold `[]`) and the raw text
    of each case and metric, in order."""

    envelope: dict[str, Any]
    cases: list[msgspec.Raw]
    metrics: list[msgspec.Raw]

    @staticmethod
    def texts(items: list[msgspec.Raw]) -> Iterator[str]:
        """Each item as text, one at a time (UnicodeDecodeError where one is not UTF-8)."""
        for item in items:
            yield bytes(item).decode("utf-8")


def _where(data: bytes, part: msgspec.Raw) -> tuple[int, int] | None:
    """The one place of `part` in `data`; None when it is not there exactly once (the same
    bytes elsewhere, e.g. a repeated key, leave the whole-document path to decide)."""
    start = data.find(part)
    if start < 0 or data.rfind(part) != start:
        return None
    return start, start + len(part)


def report_pieces(data: bytes, parse: Callable[[str], object]) -> ReportPieces | None:
    """`data` (a report's bytes) in pieces, or None where the whole-document path must decide.

    `parse` turns the envelope's text into objects (the caller's strict JSON rules: no NaN,
    depth, repeated keys); what it raises, and UnicodeDecodeError, go to the caller."""
    try:
        shell = msgspec.json.decode(data, type=_Shell)
        if len(shell.cases) == 0 or len(shell.metrics) == 0:
            return None
        cases = msgspec.json.decode(shell.cases, type=list[msgspec.Raw])
        metrics = msgspec.json.decode(shell.metrics, type=list[msgspec.Raw])
    except msgspec.DecodeError:
        return None  # not JSON, not an object, or an array that is not one
    # An empty array is left where it is: `[]` is found in many places of a report.
    parts = [part for part, items in ((shell.cases, cases), (shell.metrics, metrics)) if items]
    envelope = _envelope(data, parts, parse)
    return None if envelope is None else ReportPieces(envelope, cases, metrics)


def _envelope(
    data: bytes, parts: list[msgspec.Raw], parse: Callable[[str], object]
) -> dict[str, Any] | None:
    """The report with its two arrays emptied, as objects; None where that is not sure."""
    spans = [_where(data, part) for part in parts]
    if None in spans:
        return None
    text, end = b"", 0
    for start, stop in sorted(cast(list[tuple[int, int]], spans)):
        text += data[end:start] + b"[]"
        end = stop
    # Not UTF-8: the whole-document path names the byte.
    envelope: object = parse((text + data[end:]).decode("utf-8"))
    fields = cast(dict[str, Any], envelope) if isinstance(envelope, dict) else {}
    return fields if fields.get("cases") == [] and fields.get("metrics") == [] else None
