"""Which failures are a kernel's own choice, which are work left undone: one rule for the exit
code, the headline, the hints and the summary (a module of its own, so that the results
and the outcome can import it without a cycle through `_undone`)."""

from __future__ import annotations

import tile_protocol as tp
from tile_harness._boundary import INVALID

__all__ = ["NOT_RUN", "declined", "is_undone"]

NOT_RUN = "NotRun"
"""The error type of a planned case that no runner reported on."""


def is_undone(failure: tp.Failure) -> bool:
    """A failure that means work was left undone (not run, or not believable), not a kernel's."""
    return failure.error_type in (NOT_RUN, INVALID) or failure.status == "invalid"


def declined(failure: tp.Failure) -> bool:
    """A case its kernel declined to run: `skipped` (`tile.skip(...)`, a configuration the
    constraint rules out) or `unsupported` (a mode it cannot take). A row of the report, neither
    a failure nor work undone; a case no runner reached is skipped too, but undone."""
    return failure.status in ("skipped", "unsupported") and not is_undone(failure)
