"""`python -m tile_runner`: the runner process (see `tile_runner._main`)."""

from __future__ import annotations

import contextlib
import os
import sys
import threading

from tile_runner._lifetime import Interrupted, die_with_parent, end_descendants, take_signals
from tile_runner._main import main


def _exit(code: int) -> None:
    """Exit with `code`; do not wait for threads a kernel left running.

    The stream has ended with `done` by now. A non-daemon thread that a kernel started would
    keep the interpreter alive at exit until the CLI kills it; leave at once instead.
    """
    main_thread = threading.main_thread()
    if any(t is not main_thread and t.is_alive() and not t.daemon for t in threading.enumerate()):
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    die_with_parent()
    take_signals()
    try:
        code = main()
    except Interrupted:
        code = 130
    finally:
        # What the kernels started ends with the runner (orphans were handed to it).
        end_descendants()
    _exit(code)
