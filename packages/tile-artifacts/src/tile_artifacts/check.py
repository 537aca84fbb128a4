"""Checking artifacts (`tile schema-check`): a run directory, a campaign directory or one file
against Artifact Format v1 and against itself (sums, counts, samples, manifest hashes); and
numbers that cannot be (a case above a roof of its machine by more than its CI)."""

from __future__ import annotations

from tile_artifacts._check import Problem, check_path
from tile_artifacts._consistency import case_problems
from tile_artifacts._plausible import (
    IMPOSSIBLE,
    MEASURED_SLACK,
    RoofName,
    beyond_roof,
    case_beyond_roof,
)

__all__ = [
    "IMPOSSIBLE",
    "MEASURED_SLACK",
    "Problem",
    "RoofName",
    "beyond_roof",
    "case_beyond_roof",
    "case_problems",
    "check_path",
]
