"""Compiling one case: its kernel and its reference(s) side by side, in threads."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tile_runner._api import KernelDef
from tile_runner._check import upcast
from tile_runner._clock import Stopwatch
from tile_runner._compile import Compiled, aot_compile, bind_static

if TYPE_CHECKING:
    from tile_runner._context import CaseContext

__all__ = ["Built", "compile_all"]


@dataclass(frozen=True)
class Built:
    """What one case compiled, side by side: the kernel and its reference(s).

    `check_reference` runs on the upcast inputs (None: no reference, or one that cannot be
    traced); `timed_reference` on the case's own inputs, for timing, when those differ (else
    the check's executable is timed, compiled with autotuning for that reason).
    """

    kernel: Compiled
    check_reference: Any | None
    timed_reference: Any | None
    timed_reference_error: BaseException | None
    same_inputs: bool


def _seconds(work: Callable[[], Any]) -> tuple[Any, float]:
    t0 = time.perf_counter()
    return work(), time.perf_counter() - t0


def compile_all(
    ctx: CaseContext,
    kernel: KernelDef,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    watch: Stopwatch,
) -> Built:
    """Compile the kernel and its references in parallel threads.

    XLA compiles without the GIL, so a case pays for the longest compilation rather than their
    sum (on the H200 a fresh tile-std run spent 28 s compiling, 19.5 of them on references).
    None of these compilations runs the device except XLA's autotuning of the timed reference,
    which nothing else uses the device against meanwhile. `compile_s` is the kernel's own time;
    `reference_compile_s` what the references added to the stage.
    """
    import jax

    dynamic = bind_static(fn, args)[1]
    if kernel.reference is None:
        compiled, seconds = _seconds(lambda: aot_compile(fn, dynamic))
        watch.add("compile", seconds)
        watch.mark()
        return Built(compiled, None, None, None, same_inputs=False)
    reference = kernel.reference
    checked_by = kernel.check_reference or reference  # a `bwd` mode checks another program
    up = upcast(args)
    same = checked_by is reference and all(
        a is b for a, b in zip(jax.tree.leaves(args), jax.tree.leaves(up), strict=True)
    )
    timed_here = ctx.command == "bench" and not same
    untuned = not same or ctx.command != "bench"  # an executable that is never timed
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=3, thread_name_prefix="tile-compile") as pool:
        kernel_job = pool.submit(_seconds, lambda: aot_compile(fn, dynamic))
        check_job = pool.submit(_compile_or_none, checked_by, up, untuned)
        timed_job = pool.submit(_compile_reference, reference, args) if timed_here else None
        compiled, kernel_s = kernel_job.result()  # a kernel that does not compile: phase compile
        check_ref = check_job.result()
        timed_ref, timed_error = timed_job.result() if timed_job is not None else (None, None)
    stage = time.perf_counter() - t0
    watch.add("compile", kernel_s)
    watch.add("reference_compile", max(0.0, stage - kernel_s))
    watch.mark()
    return Built(compiled, check_ref, timed_ref, timed_error, same_inputs=same)


def _compile_or_none(
    fn: Callable[..., Any], args: tuple[Any, ...], untuned: bool = False
) -> Any | None:
    """`fn` compiled ahead of time for `args` (called with their arrays), or None when it
    cannot be traced."""
    try:
        bound, dynamic = bind_static(fn, args)
        return aot_compile(bound, dynamic, untuned=untuned).compiled
    except Exception:
        return None


def _compile_reference(
    fn: Callable[..., Any], args: tuple[Any, ...]
) -> tuple[Any | None, BaseException | None]:
    """The reference compiled for the case's own inputs, or why it could not be."""
    try:
        bound, dynamic = bind_static(fn, args)
        return aot_compile(bound, dynamic).compiled, None
    except Exception as exc:
        return None, exc
