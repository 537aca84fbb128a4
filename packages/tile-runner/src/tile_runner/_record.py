"""Calls of registered kernels, recorded while `--from` traces a user's program.

`@tile.kernel` returns its function behind `recorded(name)`, and a library's public entry
points can declare the same (tile-std's `rmsnorm`, `matmul`...): outside a capture the wrapper
only forwards the call; inside one (`recording()`), it notes the kernel's name and the
arguments before forwarding. Only the outermost recorded call counts: a registered kernel
that calls a library function recorded as the same (or another) kernel is one call.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

__all__ = ["KERNEL_ATTRIBUTE", "Call", "recorded", "recording", "recorded_kernel"]

F = TypeVar("F", bound=Callable[..., Any])

KERNEL_ATTRIBUTE = "__tile_kernel__"
"""The attribute a recorded function carries: the name of the kernel its calls are."""


@dataclass(frozen=True)
class Call:
    """One recorded call: the kernel's name, the function called and its arguments."""

    kernel: str
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


@dataclass
class _State:
    calls: list[Call] | None = None
    depth: int = 0
    stack: list[list[Call] | None] = field(default_factory=list[list[Call] | None])


_STATE = _State()


def recorded(name: str) -> Callable[[F], F]:
    """Calls of the decorated function are calls of kernel `name` while a capture is on."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            calls = _STATE.calls
            if calls is None:
                return fn(*args, **kwargs)
            if _STATE.depth == 0:
                calls.append(Call(name, fn, args, dict(kwargs)))
            _STATE.depth += 1
            try:
                return fn(*args, **kwargs)
            finally:
                _STATE.depth -= 1

        setattr(call, KERNEL_ATTRIBUTE, name)
        return cast("F", call)

    return wrap


def recorded_kernel(fn: object) -> tuple[str | None, object]:
    """The kernel name a recorded function's calls are, and the function it wraps (else
    None and `fn` itself)."""
    name = getattr(fn, KERNEL_ATTRIBUTE, None)
    if not isinstance(name, str):
        return None, fn
    return name, getattr(fn, "__wrapped__", fn)


@contextlib.contextmanager
def recording() -> Generator[list[Call]]:
    """Record every outermost call of a recorded function until the block ends."""
    calls: list[Call] = []
    _STATE.stack.append(_STATE.calls)
    _STATE.calls, depth = calls, _STATE.depth
    _STATE.depth = 0
    try:
        yield calls
    finally:
        _STATE.calls = _STATE.stack.pop()
        _STATE.depth = depth
