"""The one error of the build-profile harness: a message, a hint and the exit code."""

from __future__ import annotations

from enum import IntEnum

__all__ = ["BuildProfileError", "ExitCode"]


class ExitCode(IntEnum):
    """Exit codes of `python -m tools.build_profiles`, the same meanings as `tile`'s."""

    OK = 0
    USAGE = 2
    """Bad labels, a bad target file or an unusable output directory."""
    INFRA = 3
    """A build or a probe failed or timed out; the summary is still written."""


class BuildProfileError(Exception):
    """Raised when the harness cannot go on; says what is wrong and what to do next."""

    def __init__(self, message: str, *, hint: str, code: ExitCode = ExitCode.USAGE) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.code = code
