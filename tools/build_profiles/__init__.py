"""Build-profile harness: what each Cargo profile of a native extension costs and buys.

Run it as `just build-profiles [LABEL ...]` (or `uv run --no-sync python -m
tools.build_profiles`); see tools/README.md.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
