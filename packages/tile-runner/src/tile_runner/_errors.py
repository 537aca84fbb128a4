"""The error tree of tile-runner."""

from __future__ import annotations

__all__ = ["AxisValueError", "DefinitionError", "RunnerError", "Skip", "Unsupported"]


class RunnerError(Exception):
    """Root of every error raised by tile-runner; `hint` says what to do next."""

    hint: str | None = None

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint

    def __str__(self) -> str:
        text = super().__str__()
        return f"{text}\nhint: {self.hint}" if self.hint else text


class DefinitionError(RunnerError, ValueError):
    """Raised when a kernel, its axes or its tolerances are declared wrongly."""


class AxisValueError(DefinitionError):
    """Raised when a value given on the command line (`-a axis=v`) cannot be an axis' value.

    A usage error of the whole run, not of one kernel: the plan is then left empty.
    """


class Skip(RunnerError):
    """Raised (through `tile.skip`) by an inputs factory or kernel to skip one case."""


class Unsupported(RunnerError):
    """Raised for a case its kernel cannot run: a `bwd` mode of a function JAX cannot
    differentiate. The case gets an `unsupported` row, not a failure."""
