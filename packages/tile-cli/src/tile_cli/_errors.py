"""Exit codes and the one error type the CLI turns into a message plus `hint:`."""

from __future__ import annotations

from enum import IntEnum

__all__ = ["CliError", "ExitCode"]


class ExitCode(IntEnum):
    """Documented exit codes of `tile` (docs/cli.md)."""

    OK = 0
    FAILED = 1
    """A check failed or a comparison found a regression."""
    USAGE = 2
    """Bad flags, bad configuration or unusable input files."""
    INFRA = 3
    """The runner crashed, hung or could not start; partial results are kept."""
    INCONCLUSIVE = 4
    """A comparison was inconclusive and `--fail-on-inconclusive` was given."""
    INTERRUPTED = 130
    TERMINATED = 143


class CliError(Exception):
    """A user-facing failure: one message, a hint, and the exit code to leave with."""

    def __init__(self, message: str, *, hint: str | None = None, code: ExitCode = ExitCode.USAGE):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.code = code
