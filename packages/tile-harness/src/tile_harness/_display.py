"""What a person watching a run sees while it runs: the `Display` protocol the recorder talks to.

The recorder says what happened (a plan of N cases, a case begun, a case done, a notice); how
it looks is the front end's business: tile-cli draws a progress bar, an embedding program
may show nothing (`QuietDisplay`) or its own widget.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["Display", "QuietDisplay"]


class Display(Protocol):
    """Live progress of a run: each call only shows, none decides anything."""

    verbose: int
    """How much the user asked to see (`-v` counts); noise warnings show from 1."""

    def start(self, total: int, label: str) -> None:
        """The plan is known: `total` cases under `label`."""

    def case(self, label: str) -> None:
        """A case (or a round of one) began."""

    def advance(self) -> None:
        """A case ended, with a result or a failure."""

    def notice(self, text: str, style: str = "yellow") -> None:
        """A one-line warning or error worth seeing now (a style name is a hint only)."""

    def line(self, text: str) -> None:
        """A quiet line of context, such as where a bench runs and how it samples."""

    def stop(self) -> None:
        """The run ended (or failed): take down whatever is live."""


class QuietDisplay:
    """Shows nothing: for runs embedded in a program, whose results are what it reads."""

    verbose = 0

    def start(self, total: int, label: str) -> None: ...
    def case(self, label: str) -> None: ...
    def advance(self) -> None: ...
    def notice(self, text: str, style: str = "yellow") -> None: ...
    def line(self, text: str) -> None: ...
    def stop(self) -> None: ...
