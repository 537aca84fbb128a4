"""The one error of tile-pytest: bad options, configuration or baselines, and fixture misuse."""

from __future__ import annotations

__all__ = ["TileInconclusiveWarning", "TilePytestError"]


class TilePytestError(Exception):
    """Raised when an option, tile.toml, a baseline or a fixture call cannot be used.

    `message` names the option, file or test; `hint` says what to do next. The plugin turns
    it into a usage error before the session starts, or into a failure of the one test.
    """

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}\nhint: {self.hint}" if self.hint else self.message


class TileInconclusiveWarning(UserWarning):
    """Warned when a benchmark's comparison with the baseline is inconclusive (too noisy)."""
