"""`python -m tile_runner`: the runner process (see `tile_runner._main`)."""

from __future__ import annotations

import contextlib
import os
import sys

from tile_runner._lifetime import Interrupted, die_with_parent, end_descendants, take_signals
from tile_runner._main import main


def _exit(code: int) -> None:
    """Exit with `code` at once, once Python's own streams are flushed.

    The stream has ended with `done` by now (protocol lines are written unbuffered to their own
    descriptor). What an ordinary exit would still do is tear the interpreter down: JAX's
    exit hook clears its caches and destroys its backends (0.3-0.4 s on a 2-core CPU, for
    every runner of every command), and a non-daemon thread that a kernel started would keep
    the process alive until the CLI kills it. The operating system frees what they hold. A
    kernel module's own `atexit` handlers do not run (docs/writing-kernels.md says so).
    """
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


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
