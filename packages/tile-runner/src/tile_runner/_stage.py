"""Compiling cases: each one's kernel and reference(s), many cases at once, in threads."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from typing import Any

from tile_runner._api import KernelDef
from tile_runner._check import upcast
from tile_runner._compile import Compiled, aot_compile, bind_static
from tile_runner._figures import prepare_check

__all__ = ["Built", "Building", "build", "check_program"]


@dataclass(frozen=True)
class Built:
    """What one case compiled: the kernel and its reference(s).

    `check_reference` runs on the upcast inputs (None: no reference, or one that cannot be
    traced); `timed_reference` on the case's own inputs, for timing, when those differ (else
    the check's executable is timed, compiled with autotuning for that reason).
    `kernel_s` and `reference_s` are the seconds the compilations took on their threads.
    """

    kernel: Compiled
    check_reference: Any | None
    timed_reference: Any | None
    timed_reference_error: BaseException | None
    same_inputs: bool
    kernel_s: float = 0.0
    reference_s: float = 0.0


def _seconds(work: Callable[[], Any]) -> tuple[Any, float]:
    t0 = time.perf_counter()
    return work(), time.perf_counter() - t0


@dataclass
class Building:
    """The compilations of one case, submitted to a pool and not yet waited for."""

    kernel_job: Future[tuple[Compiled, float]]
    check_job: Future[tuple[Any | None, float]] | None
    timed_job: Future[tuple[tuple[Any | None, BaseException | None], float]] | None
    same_inputs: bool

    def result(self) -> Built:
        """Wait for every compilation; a kernel that does not compile raises here."""
        compiled, kernel_s = self.kernel_job.result()
        check_ref, check_s = self.check_job.result() if self.check_job else (None, 0.0)
        (timed_ref, timed_error), timed_s = (
            self.timed_job.result() if self.timed_job else ((None, None), 0.0)
        )
        return Built(compiled, check_ref, timed_ref, timed_error, self.same_inputs,
                     kernel_s=kernel_s, reference_s=check_s + timed_s)  # fmt: skip


def build(
    pool: Executor, command: str, kernel: KernelDef, fn: Callable[..., Any], args: tuple[Any, ...]
) -> Building:
    """Submit the kernel's and its references' compilations to `pool`.

    XLA compiles without the GIL, so cases compiled together pay for the longest compilations
    rather than their sum (on the H200 a fresh tile-std run spent 28 s compiling, one program
    after another, 19.5 of them on references). None of these compilations runs the device
    except XLA's autotuning of the timed reference, and no case is timed meanwhile.
    """
    import jax

    bound, dynamic = bind_static(fn, args)
    kernel_job = pool.submit(_seconds, lambda: aot_compile(bound, dynamic))
    if kernel.reference is None:
        return Building(kernel_job, None, None, same_inputs=False)
    reference = kernel.reference
    checked_by = kernel.check_reference or reference  # a `bwd` mode checks another program
    up = upcast(args)
    same = checked_by is reference and all(
        a is b for a, b in zip(jax.tree.leaves(args), jax.tree.leaves(up), strict=True)
    )
    timed_here = command == "bench" and not same
    untuned = not same or command != "bench"  # an executable that is never timed
    check_job = pool.submit(_seconds, lambda: _compile_or_none(checked_by, up, untuned))
    timed_job = (
        pool.submit(_seconds, lambda: _compile_reference(reference, args)) if timed_here else None
    )
    return Building(kernel_job, check_job, timed_job, same_inputs=same)


def check_program(built: Built) -> None:
    """Compile the comparison of the kernel's outputs with the check reference's, ahead."""
    if built.check_reference is None:
        return
    out_info = getattr(built.kernel.compiled, "out_info", None)
    ref_info = getattr(built.check_reference, "out_info", None)
    if out_info is not None and ref_info is not None:
        prepare_check(out_info, ref_info)


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
