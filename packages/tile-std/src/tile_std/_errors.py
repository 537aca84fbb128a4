"""The error of tile-std: one root, raised when a kernel gets inputs it does not support."""

from __future__ import annotations

__all__ = ["KernelInputError"]


class KernelInputError(ValueError):
    """Raised when a kernel gets shapes or dtypes it does not support; says which and what to do."""

    def __init__(self, kernel: str, message: str, *, hint: str | None = None) -> None:
        text = f"{kernel}: {message}"
        if hint:
            text += f"\nhint: {hint}"
        super().__init__(text)
        self.kernel = kernel
        self.hint = hint
