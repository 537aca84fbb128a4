"""`python -m tile_runner`: the runner process (see `tile_runner._main`)."""

from __future__ import annotations

import sys

from tile_runner._lifetime import die_with_parent
from tile_runner._main import main

if __name__ == "__main__":
    die_with_parent()
    sys.exit(main())
