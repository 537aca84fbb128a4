"""`--from MODULE:FUNCTION`: trace a user's program and capture each registered kernel it
calls, at the shapes and dtypes of the call, as a case (`CaseSpec`).

The contract (docs/tuning.md): FUNCTION takes no arguments and returns `(fn, args)` or
`(fn, args, kwargs)`: the program (jitted or not) and example inputs, arrays or
`jax.ShapeDtypeStruct`s. The program is traced abstractly (`jax.eval_shape`): nothing is
computed, so real shapes cost no memory. A FUNCTION that returns None is taken to have run
its program itself; the calls it made while running are captured.

Each call becomes the case of its kernel whose inputs have the call's structure, shapes,
dtypes and static values (`_infer.py`), so the captured case times what the program runs.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from tile_protocol import CaseSpec, UsageErrorType
from tile_runner._api import KernelDef, registry
from tile_runner._errors import RunnerError
from tile_runner._infer import describe, infer_case
from tile_runner._record import Call, recording

__all__ = ["CAPTURE_IMPORT", "CAPTURE_NONE", "CAPTURE_TRACE", "CaptureError", "Captured", "capture"]

CAPTURE_IMPORT: UsageErrorType = "CaptureImport"
"""`error_type` of the plan failure for a `--from` target that cannot be imported."""
CAPTURE_TRACE: UsageErrorType = "CaptureTrace"
"""`error_type` of the plan failure for a `--from` program that raised while traced."""
CAPTURE_NONE: UsageErrorType = "CaptureNone"
"""`error_type` of the plan failure for a `--from` program that called no registered kernel."""

_HOW = "FUNCTION takes no arguments and returns `(fn, args)`: the program and example inputs"


class CaptureError(RunnerError):
    """A `--from` target that gives no case; `error_type` is the usage error the host shows."""

    def __init__(self, error_type: UsageErrorType, message: str, *, hint: str) -> None:
        super().__init__(message, hint=hint)
        self.error_type: UsageErrorType = error_type


@dataclass
class Captured:
    """The cases a program's kernel calls came to, in the order first called, and the calls
    that matched no case of their kernel (each a warning)."""

    cases: list[CaseSpec] = field(default_factory=list[CaseSpec])
    unmatched: list[str] = field(default_factory=list[str])


def capture(target: str, backend: str) -> Captured:
    """Import `target` (`MODULE:FUNCTION`), trace its program and turn each kernel call into
    a case; CaptureError when it cannot be imported, raises, or calls no registered kernel."""
    function = _load(target)
    calls = _trace(target, function)
    if not calls:
        known = ", ".join(sorted(registry())) or "none"
        raise CaptureError(
            CAPTURE_NONE,
            f"`--from {target}`: the program called no registered kernel (registered: {known})",
            hint="call `@tile.kernel` functions or tile-std's kernels in it, and have the "
            "module that registers them imported; " + _HOW,
        )
    captured = _cases(target, calls, backend)
    if not captured.cases:
        raise CaptureError(
            CAPTURE_NONE,
            f"`--from {target}`: no kernel call of the program is one of its kernel's cases: "
            + "; ".join(captured.unmatched),
            hint="a case is found from the call's shapes, dtypes and static values, which the "
            "kernel's `inputs` must be able to make; see docs/tuning.md (Real shapes)",
        )
    return captured


def _load(target: str) -> Callable[[], Any]:
    """The FUNCTION of `MODULE:FUNCTION`, imported (CaptureError if it cannot be)."""
    module_name, sep, attribute = target.partition(":")
    hint = "write `--from MODULE:FUNCTION` with MODULE importable from the project's root; " + _HOW
    if not sep or not module_name or not attribute:
        raise CaptureError(CAPTURE_IMPORT, f"`--from {target}`: not MODULE:FUNCTION", hint=hint)
    try:
        found: Any = importlib.import_module(module_name)
    except Exception as exc:
        raise CaptureError(
            CAPTURE_IMPORT,
            f"`--from {target}`: cannot import `{module_name}`: {type(exc).__name__}: {exc}",
            hint=hint,
        ) from None
    for part in attribute.split("."):
        if not hasattr(found, part):
            raise CaptureError(
                CAPTURE_IMPORT,
                f"`--from {target}`: `{module_name}` has no `{attribute}`",
                hint=hint,
            )
        found = getattr(found, part)
    if not callable(found):
        raise CaptureError(
            CAPTURE_IMPORT, f"`--from {target}`: `{attribute}` is not a function", hint=hint
        )
    return cast("Callable[[], Any]", found)


def _trace(target: str, function: Callable[[], Any]) -> list[Call]:
    """Every kernel call the program makes, traced with fresh JAX caches (a program traced
    before, at import, would otherwise not run its Python again)."""
    import jax

    from tile_runner._jaxapi import eval_shape

    jax.clear_caches()
    with recording() as calls:
        try:
            program = function()
            if program is not None:
                fn, args, kwargs = _program(target, program)
                eval_shape(fn, *args, **kwargs)
        except CaptureError:
            raise
        except Exception as exc:
            raise CaptureError(
                CAPTURE_TRACE,
                f"`--from {target}` raised while traced{_where(exc)}: {type(exc).__name__}: {exc}",
                hint="run the program once by itself to see the whole traceback (the runner's "
                "log has it too), fix it, then rerun",
            ) from exc
    return calls


def _where(exc: BaseException) -> str:
    """` at FILE:LINE`: the innermost frame of the user's code (not JAX's, not tile's)."""
    import traceback

    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if not any(part in f.filename for part in ("/jax/", "/jaxlib/", "/tile_runner/"))
    ]
    return f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""


def _program(target: str, program: Any) -> tuple[Callable[..., Any], Sequence[Any], dict[str, Any]]:
    """`(fn, args)` or `(fn, args, kwargs)` as returned by FUNCTION, checked."""
    returned = type(cast("object", program)).__name__
    parts: tuple[Any, ...] = cast("tuple[Any, ...]", program) if isinstance(program, tuple) else ()
    if len(parts) in (2, 3) and callable(parts[0]) and isinstance(parts[1], list | tuple):
        kwargs: object = parts[2] if len(parts) == 3 else {}
        if isinstance(kwargs, dict):
            fn = cast("Callable[..., Any]", parts[0])
            return fn, cast("Sequence[Any]", parts[1]), cast("dict[str, Any]", kwargs)
    raise CaptureError(
        CAPTURE_TRACE,
        f"`--from {target}` returned {returned}, not `(fn, args)`",
        hint=_HOW + " (a tuple or list of arrays or `jax.ShapeDtypeStruct`s), or None when it "
        "ran the program itself",
    )


def _cases(target: str, calls: list[Call], backend: str) -> Captured:
    """One case per distinct (kernel, axis values), in the order first called."""
    out = Captured()
    seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    kernels = registry()
    for call in calls:
        definition: KernelDef | None = kernels.get(call.kernel)
        params = infer_case(definition, call, backend) if definition is not None else None
        if params is None:
            why = "none of its cases" if definition is not None else "no registered kernel"
            warning = f"a call of `{call.kernel}` with {describe(call)} matches {why}"
            if warning not in out.unmatched:
                out.unmatched.append(warning)
            continue
        key = (call.kernel, tuple(params.items()))
        if key not in seen:
            seen.add(key)
            out.cases.append(CaseSpec(kernel=call.kernel, params=params, captured=target))
    return out
