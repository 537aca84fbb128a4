"""The flags of `tile bench|test|build` that are not configuration (apart from `_suite`, which
shows the first line, and `_suite_run`, which does the rest, so that neither imports the other)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["SuiteFlags"]


@dataclass(frozen=True)
class SuiteFlags:
    """The flags of a suite run that are not configuration.

    `slurm_args` come after `[launcher] extra_args` on every srun command line. With
    `compare` (a baseline file or directory) the run is compared with it as `[compare]` of
    the configuration says. `cache_report` adds `diagnostics/jax_cache.json`; `cold_process`
    runs the cases twice in fresh runners, first on an empty compilation cache. `against` (a
    git revision) times that revision in turns with the working tree and compares the two.
    """

    profile: str | None = None
    output_dir: Path | None = None
    as_json: bool = False
    verbose: int = 0
    compare: Path | None = None
    against: str | None = None
    slurm_args: Sequence[str] = ()
    cache_report: bool = False
    cold_process: bool = False
