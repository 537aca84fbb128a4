"""The settings every configuration model shares."""

from __future__ import annotations

from typing import Final

from pydantic import ConfigDict

__all__ = ["STRICT"]

STRICT: Final = ConfigDict(strict=True, extra="forbid", frozen=True, allow_inf_nan=False)
"""Strict, closed and immutable: a TOML `"false"` is not a boolean and typos are errors."""
