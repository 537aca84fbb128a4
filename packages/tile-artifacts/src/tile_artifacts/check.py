"""Checking artifacts (`tile schema-check`): a run directory, a campaign directory or one file
against Artifact Format v1 and against itself (sums, counts, samples, manifest hashes)."""

from __future__ import annotations

from tile_artifacts._check import Problem, check_path
from tile_artifacts._consistency import case_problems

__all__ = ["Problem", "case_problems", "check_path"]
