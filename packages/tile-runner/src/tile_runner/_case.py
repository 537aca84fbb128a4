"""One case from inputs to result message: inputs, compile, check, time, work, roofline."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from tile_protocol import (
    BenchResult,
    BenchSettings,
    BuildResult,
    Check,
    Failure,
    Inspect,
    Message,
    Peaks,
    Reference,
    TestResult,
    Work,
)
from tile_runner._api import Case, KernelDef
from tile_runner._build import INSPECT_KINDS, Stages, lower_only, view_text, write_build_outputs
from tile_runner._check import compare, resolve_tolerance, upcast
from tile_runner._compile import Compiled, aot_compile, bind_static, cost_estimate, memory_estimate
from tile_runner._discover import failure_from
from tile_runner._errors import Skip
from tile_runner._inputs import case_key
from tile_runner._measure import time_compiled
from tile_runner._roofline import roofline, throughput
from tile_runner._timers import TimerName

__all__ = ["INSPECT_KINDS", "CaseContext", "Outcome", "run_case"]

Outcome = Literal["passed", "failed", "skipped"]


@dataclass
class CaseContext:
    """What every case of one run shares."""

    command: str
    seed: int
    bench: BenchSettings
    tolerances: dict[str, float]
    timer: TimerName
    peaks: Peaks | None
    send: Callable[[Message], None]
    warn: Callable[[str, str | None], None]
    inspect_kind: str | None = None
    output_dir: str | None = None


def _as_args(value: Any) -> tuple[Any, ...]:
    """An inputs factory returns a tuple of arguments; a single value is one argument."""
    return value if isinstance(value, tuple) else (value,)


def run_case(ctx: CaseContext, kernel: KernelDef, case: Case) -> Outcome:
    """Run one case; every exception (and SystemExit) becomes a Failure for this case."""
    phase = "inputs"
    try:
        import jax

        args = jax.block_until_ready(_as_args(kernel.inputs(case, case_key(ctx.seed, case.id))))
        phase = "compile"
        fn, dynamic = bind_static(kernel.fn, args)
        if ctx.command == "inspect":
            _inspect(ctx, case, fn, dynamic)
            return "passed"
        compiled = aot_compile(fn, dynamic)
        if ctx.command == "build":
            note = None
            if ctx.output_dir is not None:
                phase = "outputs"
                stages = Stages(compiled.traced, compiled.lowered, compiled.compiled)
                note = write_build_outputs(ctx.output_dir, case.id, stages, fn, dynamic, ctx.send)
                if note is not None:
                    ctx.warn(note, case.id)
            ctx.send(
                BuildResult(
                    case_id=case.id,
                    kernel=case.kernel,
                    params=case.str_params,
                    ok=True,
                    phases=compiled.phases,
                    error=note,
                )
            )
            return "passed"
        phase = "run"
        out = jax.block_until_ready(compiled.compiled(*dynamic))
        check: Check | None = None
        if kernel.reference is not None:
            phase = "reference"
            expected = jax.block_until_ready(kernel.reference(*upcast(args)))
            phase = "check"
            check = compare(
                out,
                expected,
                lambda dtype: resolve_tolerance(dtype, request=ctx.tolerances, kernel=kernel.tol),
            )
            del expected
        del out
        if ctx.command == "test":
            check = check or Check(passed=True, message="no reference")
            ctx.send(
                TestResult(
                    case_id=case.id,
                    kernel=case.kernel,
                    params=case.str_params,
                    check=check,
                    seed=ctx.seed,
                )
            )
            return "passed" if check.passed else "failed"
        phase = "work"
        work = _work(kernel, case, compiled.compiled)
        phase = "run"
        return _bench(
            ctx,
            kernel=kernel,
            case=case,
            compiled=compiled,
            args=args,
            dynamic=dynamic,
            check=check,
            work=work,
        )
    except (Exception, SystemExit) as exc:
        if isinstance(exc, Skip):
            reason = str(exc.args[0]) if exc.args else "skipped"
            ctx.send(
                Failure(
                    case_id=case.id,
                    phase=phase,
                    status="skipped",
                    error_type="Skip",
                    message=reason,
                )
            )
            return "skipped"
        ctx.send(failure_from(exc, phase, case.id))
        return "failed"


def _bench(
    ctx: CaseContext,
    *,
    kernel: KernelDef,
    case: Case,
    compiled: Compiled,
    args: tuple[Any, ...],
    dynamic: tuple[Any, ...],
    check: Check | None,
    work: Work,
) -> Outcome:
    def warn(message: str) -> None:
        ctx.warn(message, case.id)

    ref_call = None
    # Correctness gates speed: a kernel that fails its check is timed but never compared.
    if kernel.reference is not None and check is not None and check.passed:
        try:
            ref_fn, ref_dynamic = bind_static(kernel.reference, args)
            ref_call = (aot_compile(ref_fn, ref_dynamic).compiled, ref_dynamic)
        except Exception as exc:
            warn(f"the reference could not be compiled ({type(exc).__name__}: {exc}); no speedup")
    # With a reference, both are timed turn about (see time_compiled): a comparison of two runs
    # can then judge kernel/reference ratios, which machine speed swings do not move.
    timing = time_compiled(
        compiled.compiled, dynamic, ctx.bench, timer=ctx.timer, warn=warn, reference=ref_call
    )
    median = timing.stats.median
    reference = None
    if timing.reference is not None:
        ref_median = timing.reference.stats.median
        reference = Reference(
            samples=timing.reference.samples,
            stats=timing.reference.stats,
            speedup=ref_median / median if median > 0 else None,
            interleaved=True,
        )
    dtype = case.get("dtype")
    ctx.send(
        BenchResult(
            case_id=case.id,
            kernel=case.kernel,
            params=case.str_params,
            timer=timing.timer,
            cold=timing.cold,
            samples=timing.samples,
            stats=timing.stats,
            phases=compiled.phases,
            work=work,
            throughput=throughput(work, median),
            roofline=roofline(work, median, ctx.peaks, dtype if isinstance(dtype, str) else None),
            reference=reference,
            check=check,
            seed=ctx.seed,
            peak_memory_bytes=memory_estimate(compiled.compiled),
        )
    )
    return "passed" if check is None or check.passed else "failed"


def _work(kernel: KernelDef, case: Case, compiled: Any) -> Work:
    """Declared bytes/flops first; XLA's cost analysis fills what was not declared."""
    declared_bytes = None if kernel.bytes is None else float(kernel.bytes(case))
    declared_flops = None if kernel.flops is None else float(kernel.flops(case))
    if declared_bytes is not None and declared_flops is not None:
        return Work(bytes=declared_bytes, flops=declared_flops, source="declared")
    est_bytes, est_flops = cost_estimate(compiled)
    nbytes = declared_bytes if declared_bytes is not None else est_bytes
    flops = declared_flops if declared_flops is not None else est_flops
    if nbytes is None and flops is None:
        return Work()
    estimated = (declared_bytes is None and est_bytes is not None) or (
        declared_flops is None and est_flops is not None
    )
    return Work(bytes=nbytes, flops=flops, source="cost_analysis" if estimated else "declared")


def _inspect(
    ctx: CaseContext, case: Case, fn: Callable[..., Any], dynamic: tuple[Any, ...]
) -> None:
    kinds = INSPECT_KINDS if ctx.inspect_kind in (None, "all") else (ctx.inspect_kind,)
    for kind in kinds:
        if kind not in INSPECT_KINDS:
            raise ValueError(
                f"unknown inspect kind {kind!r}; use one of {', '.join(INSPECT_KINDS)} or all"
            )
    # The jaxpr and StableHLO views need no compilation (`tile snap` asks only for StableHLO).
    if any(kind in ("hlo", "cost", "memory") for kind in kinds):
        compiled = aot_compile(fn, dynamic)
        stages = Stages(compiled.traced, compiled.lowered, compiled.compiled)
    else:
        stages = lower_only(fn, dynamic)
    for kind in kinds:
        ctx.send(Inspect(case_id=case.id, kind=kind, text=view_text(kind, stages)))
