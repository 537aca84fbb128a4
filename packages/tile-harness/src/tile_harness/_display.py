"""What a person watching a run sees while it runs: the `Display` protocol the recorder talks to.

The recorder says what happened (a runner starting, a plan of N cases, a case begun, the step
it is in, a case done, every case of a kernel done, a notice); how it looks is the front end's
business: tile-cli draws a live status line and each kernel's table as it completes, an
embedding program may show nothing (`QuietDisplay`) or its own widget.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import tile_protocol as tp

__all__ = ["Display", "QuietDisplay"]


class Display(Protocol):
    """Live progress of a run: each call only shows, none decides anything."""

    verbose: int
    """How much the user asked to see (`-v` counts); noise warnings show from 1."""

    def starting(self, restart: bool) -> None:
        """A runner process was started (`restart`: one after the first, for the cases left);
        until its hello nothing else is known."""

    def start(self, total: int, label: str) -> None:
        """The plan is known: `total` cases under `label`."""

    def case(self, label: str) -> None:
        """A case (or a round of one) began."""

    def step(self, progress: tp.Progress) -> None:
        """The runner says which step a case is in (protocol 1.15, when the request asks)."""

    def advance(self) -> None:
        """A case ended, with a result or a failure."""

    def kernel_done(self, kernel: str) -> None:
        """Every planned case of `kernel` has its outcome: its results can be shown (may come
        more than once for a kernel, and after `stop` for the cases a run left undone)."""

    def notice(self, text: str, style: str = "yellow") -> None:
        """A one-line warning or error worth seeing now (a style name is a hint only)."""

    def line(self, text: str) -> None:
        """A quiet line of context, such as where a bench runs and how it samples."""

    def stop(self) -> None:
        """The run ended (or failed): take down whatever is live."""


class QuietDisplay:
    """Shows nothing: for runs embedded in a program, whose results are what it reads."""

    verbose = 0

    def starting(self, restart: bool) -> None: ...
    def start(self, total: int, label: str) -> None: ...
    def case(self, label: str) -> None: ...
    def step(self, progress: tp.Progress) -> None: ...
    def advance(self) -> None: ...
    def kernel_done(self, kernel: str) -> None: ...
    def notice(self, text: str, style: str = "yellow") -> None: ...
    def line(self, text: str) -> None: ...
    def stop(self) -> None: ...
