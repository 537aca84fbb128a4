"""The runner's pipe is a trust boundary: believe only what the runner itself sent, and only
when it follows the protocol.

One `Boundary` per runner process sits between the stream decoder and the session. A message
another process wrote into the pipe (a kernel's forked child) is dropped and logged as noise;
a message that breaks the protocol's rules (`tile_protocol.StreamValidator`) is dropped too,
and becomes a failure with status `invalid` against its case, or against the run, so that the
run exits 3 and says why. What was valid is kept.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import TYPE_CHECKING

import tile_protocol as tp

if TYPE_CHECKING:
    from tile_harness._sinks import Sink

__all__ = ["INVALID", "Boundary", "new_token"]

INVALID = "InvalidMessage"
"""The error type of a failure made from a message that broke the protocol's rules."""

MAX_LISTED = 20
"""Distinct run-level violations listed one by one per runner; the rest are counted in one."""


def new_token() -> str:
    """A fresh token for one runner process's request (its messages repeat it)."""
    return secrets.token_hex(16)


class Boundary:
    """What the session may believe of one runner process's stream.

    `admit` every event in the order read: it returns None for a message to act on, else the
    violation (already reported to the sink as noise or as an `invalid` failure).
    """

    def __init__(self, sink: Sink, *, token: str, requested: Sequence[str] | None) -> None:
        self._sink = sink
        self._validator = tp.StreamValidator(token=token, requested=requested)
        self._line_no = 0
        self._listed: set[str] = set()  # reasons of the run-level violations listed
        self._unlisted = 0

    def admit(self, event: object) -> tp.Violation | None:
        """Check one decoded event; noise passes through (the session reports it)."""
        if isinstance(event, (tp.BadLine, tp.UnknownMessage)):
            self._line_no = event.line_no
            return None
        self._line_no += 1  # the decoder numbers only what it could not decode
        if not isinstance(event, tp.Message):
            return None
        violation = self._validator.check(event)
        if violation is None:
            return None
        if violation.forged:
            raw = tp.encode(violation.message)[:200]
            self._sink.on_noise(tp.ForgedLine(raw, violation.describe(), self._line_no))
        elif violation.case_id is not None:
            self._report(violation.case_id, violation.describe())
        elif violation.reason in self._listed or len(self._listed) >= MAX_LISTED:
            # A stream without `hello` breaks the same rule with every line: say it once.
            self._unlisted += 1
        else:
            self._listed.add(violation.reason)
            self._report(None, violation.describe())
        return violation

    def close(self) -> None:
        """End of this runner's stream: count the violations that were not listed."""
        if self._unlisted:
            self._report(
                None,
                f"runner sent {self._unlisted} more invalid message"
                f"{'s' if self._unlisted != 1 else ''} like those above (not listed one by one)",
            )
            self._unlisted = 0

    def _report(self, case_id: str | None, message: str) -> None:
        self._sink.on_message(
            tp.Failure(
                case_id=case_id,
                phase="protocol",
                status="invalid",
                error_type=INVALID,
                message=message,
            )
        )
