"""Ctrl-C and SIGTERM: the first one stops tile, however many follow it.

Python's own handler raises KeyboardInterrupt at every Ctrl-C. A user who presses it three
times in a row (or a CI runner that sends SIGTERM then SIGINT) then cut the clean-up short:
the second one landed inside the code that stops the runner or writes the manifest, and the
run ended with nothing printed and an unfinished directory. Here the first signal is raised
(KeyboardInterrupt, or `_Terminated` for SIGTERM) and the others are only counted, so the
clean-up always runs to its end and the exit code says which signal came first. Code that
must not be cut short even by the first one (writing the final documents) holds signals
while it runs and raises the one that came afterwards.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Generator
from types import FrameType
from typing import ParamSpec

P = ParamSpec("P")

__all__ = [
    "Terminated",
    "first_signal",
    "held",
    "install",
    "quiet",
    "raise_pending",
    "raise_unheeded",
    "shielded",
]


class _Terminated(BaseException):
    """Raised in the main thread when SIGTERM arrives, so clean-up code runs.

    The name is what the run loops test for (they do not import this module).
    """


Terminated = _Terminated


class _State:
    """What the handler has seen (a plain class: this module loads before anything else)."""

    def __init__(self) -> None:
        self.first: int | None = None  # the first signal that arrived
        self.raised = False  # whether it was raised already
        self.holding = 0  # depth of `held` blocks
        self.later = 0  # how many came after the first


_state = _State()


def install() -> None:
    """Take over SIGINT and SIGTERM for the rest of the process (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        return
    signal.signal(signal.SIGINT, _handler)
    signal.signal(signal.SIGTERM, _handler)


def quiet(target: Callable[P, None]) -> Callable[P, None]:
    """`target` for a helper thread that never takes SIGINT/SIGTERM (the main thread does).

    Linux hands a signal to any thread that does not block it; one that lands on a helper
    thread leaves the main thread asleep in its wait, and the Ctrl-C goes unanswered until
    that wait times out. Only for threads that start no processes: children inherit the mask.
    """

    def run(*args: P.args, **kwargs: P.kwargs) -> None:
        if hasattr(signal, "pthread_sigmask"):
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        target(*args, **kwargs)

    return run


def first_signal() -> int | None:
    """The signal that stopped tile, if one did."""
    return _state.first


def _handler(signum: int, frame: FrameType | None) -> None:
    if _state.first is not None:
        _state.later += 1  # a burst: the first one is being dealt with
        return
    _state.first = signum
    if _state.holding == 0:
        _raise()


def _raise() -> None:
    _state.raised = True
    if _state.first == signal.SIGTERM:
        raise _Terminated
    raise KeyboardInterrupt


def raise_pending() -> None:
    """Raise the signal that arrived while signals were held, if it was not raised yet."""
    if _state.first is not None and not _state.raised and _state.holding == 0:
        _raise()


def raise_unheeded() -> None:
    """Raise the first signal (again) where a run is about to start work it should stop.

    Once raised, a signal only counts the ones after it, so the clean-up it starts runs to
    its end. But Python drops an exception raised while a finalizer (`__del__`, a weakref
    callback) runs, printing "Exception ignored"; a Ctrl-C that landed there was lost, tile
    went on to measure, and the burst after it was only counted. Call this only before the
    work, never in clean-up code, which runs after the signal was taken.
    """
    if _state.first is not None and _state.holding == 0:
        _raise()


@contextlib.contextmanager
def held() -> Generator[None]:
    """A block the first signal does not interrupt; `raise_pending` raises it afterwards."""
    _state.holding += 1
    try:
        yield
    finally:
        _state.holding -= 1


@contextlib.contextmanager
def shielded() -> Generator[None]:
    """A block the first signal does not interrupt; it is raised when the block ends."""
    with held():
        yield
    raise_pending()
