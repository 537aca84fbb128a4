"""`tile tune`'s engine: which configurations a rung keeps, the winner, the tuning files."""

from __future__ import annotations

from tile_harness.tune._files import tune_findings, write_tuning
from tile_harness.tune._pick import Decision, Measured, keep_fastest, pick

__all__ = ["Decision", "Measured", "keep_fastest", "pick", "tune_findings", "write_tuning"]
