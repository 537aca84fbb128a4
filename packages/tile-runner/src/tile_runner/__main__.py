"""`python -m tile_runner`: the runner process (see `tile_runner._main`)."""

from __future__ import annotations

import sys

from tile_runner._lifetime import Interrupted, die_with_parent, end_descendants, take_signals
from tile_runner._main import main

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
    sys.exit(code)
