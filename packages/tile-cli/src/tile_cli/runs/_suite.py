"""`tile bench|test|build`: run every selected case into a run directory, always complete.

Resolve the configuration, open the run directory, pick how the runners start (one session,
shards, the cold and warm pair of `--cold-process`), drive them until the end or a signal,
finalize the directory, show the results and choose the exit code (`_suite_run.py`). This
module stays light: the screen's first line is up before the rest is imported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tile_cli.runs._suite_flags import SuiteFlags
from tile_cli.terminal._ui import Ui, make_consoles

if TYPE_CHECKING:
    import tile_protocol as tp
    from tile_harness import Selection

__all__ = ["SuiteFlags", "run_suite"]


def run_suite(command: tp.Command, sel: Selection, flags: SuiteFlags) -> int:
    """Run bench, test or build over every selected case; always leave a complete run directory."""
    out, err = make_consoles()
    ui = Ui(err, verbose=flags.verbose, quiet=flags.as_json, label=f"tile {command}")
    ui.begin()  # the first line, before the configuration is even read
    try:
        from tile_cli.runs._suite_run import run_suite_with

        return run_suite_with(command, sel, flags, (out, err), ui)
    finally:
        ui.stop()  # also when refused before the session: a live line must not stay up
