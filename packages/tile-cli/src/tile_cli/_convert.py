"""What a runner said, as artifact records: one typed converter per result kind and part.

The wire protocol and the artifact format are versioned apart (a protocol minor version is
not a schema version) and tile-artifacts knows nothing of the protocol, so each keeps its
own models; the CLI, which speaks both, turns one into the other here. Field by field, so
that the type checker sees every field on both sides, and a test holds each converter to its
message (a field added to one and not mapped fails it).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import get_args

import tile_artifacts as ta
import tile_protocol as tp

__all__ = [
    "accounting_record",
    "accounting_total",
    "case_from_bench",
    "case_from_build",
    "case_from_test",
    "case_record",
    "check_record",
    "failure_record",
    "phases_record",
    "stats_record",
]

_PEAK_SOURCE: dict[str, ta.PeakSource] = {s: s for s in get_args(ta.PeakSource)}

# A Failure's status as the status of its case: a "success" failure is still a failure.
_CASE_STATUS: dict[tp.CaseStatus, ta.Status] = {
    "failed": "failed",
    "timed_out": "timed_out",
    "skipped": "skipped",
    "unsupported": "unsupported",
    "success": "failed",
}


# ---------------------------------------------------------------- parts


def stats_record(stats: tp.Stats) -> ta.StatsRecord:
    """Summary statistics, as the runner computed them."""
    return ta.StatsRecord.from_summary(stats, stop_reason=stats.stop_reason)


def phases_record(phases: tp.Phases) -> ta.Phases:
    """Compile phase timings and cache counts."""
    return ta.Phases(
        trace_s=phases.trace_s,
        lower_s=phases.lower_s,
        compile_s=phases.compile_s,
        cache_hit=phases.cache_hit,
        compile_count=phases.compile_count,
        cache_hit_count=phases.cache_hit_count,
        cache_miss_count=phases.cache_miss_count,
    )


def check_record(check: tp.Check) -> ta.CheckRecord:
    """A kernel's output against its reference."""
    return ta.CheckRecord(
        passed=check.passed,
        max_abs_err=check.max_abs_err,
        rel_l2_err=check.rel_l2_err,
        tol=check.tol,
        worst_index=check.worst_index,
        message=check.message,
    )


def accounting_record(accounting: tp.Accounting) -> ta.Accounting:
    """Where one case's wall time went in the runner."""
    return accounting_total([accounting])


def accounting_total(parts: Iterable[tp.Accounting]) -> ta.Accounting:
    """The sum of several cases' accounting, part by part (a run's `timing.parts`)."""
    items = list(parts)
    return ta.Accounting(
        inputs_s=sum(a.inputs_s for a in items),
        compile_s=sum(a.compile_s for a in items),
        reference_compile_s=sum(a.reference_compile_s for a in items),
        check_s=sum(a.check_s for a in items),
        warmup_s=sum(a.warmup_s for a in items),
        sample_s=sum(a.sample_s for a in items),
        reference_sample_s=sum(a.reference_sample_s for a in items),
        other_s=sum(a.other_s for a in items),
        total_s=sum(a.total_s for a in items),
    )


def _work(work: tp.Work) -> ta.Work:
    return ta.Work(bytes=work.bytes, flops=work.flops, source=work.source)


def _throughput(throughput: tp.Throughput) -> ta.Throughput:
    return ta.Throughput(gbps=throughput.gbps, tflops=throughput.tflops)


def _roofline(roofline: tp.Roofline) -> ta.Roofline:
    # The runner names the table row it used (`builtin:NVIDIA H200`); the format keeps the kind.
    kind = (roofline.peak_source or "").split(":")[0]
    return ta.Roofline(
        intensity=roofline.intensity,
        pct_peak_bw=roofline.pct_peak_bw,
        pct_peak_flops=roofline.pct_peak_flops,
        bound=roofline.bound,
        peak_source=_PEAK_SOURCE.get(kind),
    )


def _reference(reference: tp.Reference) -> ta.ReferenceRecord:
    return ta.ReferenceRecord(
        samples=list(reference.samples),
        stats=stats_record(reference.stats) if reference.stats is not None else None,
        speedup=reference.speedup,
        interleaved=reference.interleaved,
    )


def _config(config: tp.ConfigInfo) -> ta.ConfigRecord:
    return ta.ConfigRecord(
        values=dict(config.values), source=config.source, signature=config.signature
    )


# ---------------------------------------------------------------- cases


def case_from_bench(result: tp.BenchResult) -> ta.CaseRecord:
    """A measured case; a failed check fails it (its timing is then never compared)."""
    passed = result.check is None or result.check.passed
    return ta.CaseRecord(
        case_id=result.case_id,
        kernel=result.kernel,
        params=dict(result.params),
        status="success" if passed else "failed",
        phases=phases_record(result.phases),
        timer=result.timer,
        cold=result.cold,
        samples=list(result.samples),
        stats=stats_record(result.stats),
        work=_work(result.work),
        throughput=_throughput(result.throughput),
        roofline=_roofline(result.roofline),
        reference=_reference(result.reference) if result.reference is not None else None,
        check=check_record(result.check) if result.check is not None else None,
        round_sizes=list(result.round_sizes) if result.round_sizes is not None else None,
        accounting=accounting_record(result.accounting) if result.accounting is not None else None,
        config=_config(result.config) if result.config is not None else None,
    )


def case_from_test(info: tp.CaseInfo, result: tp.TestResult) -> ta.CaseRecord:
    """A checked case."""
    return ta.CaseRecord(
        case_id=info.case_id,
        kernel=info.kernel,
        params=dict(info.params),
        status="success" if result.check.passed else "failed",
        check=check_record(result.check),
        accounting=accounting_record(result.accounting) if result.accounting is not None else None,
        config=_config(result.config) if result.config is not None else None,
    )


def case_from_build(info: tp.CaseInfo, result: tp.BuildResult) -> ta.CaseRecord:
    """A case lowered and compiled without running it."""
    return ta.CaseRecord(
        case_id=info.case_id,
        kernel=info.kernel,
        params=dict(info.params),
        status="success" if result.ok else "failed",
        phases=phases_record(result.phases),
    )


def case_record(
    info: tp.CaseInfo,
    result: tp.BenchResult | tp.TestResult | tp.BuildResult | None,
    failure: tp.Failure | None,
    *,
    interrupted: bool,
) -> ta.CaseRecord:
    """One planned case from whatever the runner said about it: its result, else its failure,
    else nothing (`interrupted` when the run was stopped, else `skipped`)."""
    if isinstance(result, tp.BenchResult):
        return case_from_bench(result)
    if isinstance(result, tp.TestResult):
        return case_from_test(info, result)
    if isinstance(result, tp.BuildResult):
        return case_from_build(info, result)
    if failure is not None:
        status = _CASE_STATUS[failure.status]
    else:
        status = "interrupted" if interrupted else "skipped"
    return ta.CaseRecord(
        case_id=info.case_id, kernel=info.kernel, params=dict(info.params), status=status
    )


def failure_record(
    number: int,
    failure: tp.Failure,
    *,
    stderr_log: str | None = None,
    command_id: str | None = None,
) -> ta.FailureRecord:
    """The `number`-th failure of a run (1-based), with the tail of its traceback."""
    excerpt = failure.traceback[-ta.STDERR_EXCERPT_LIMIT :] if failure.traceback else None
    return ta.FailureRecord(
        failure_id=ta.failure_id(number),
        case_id=failure.case_id,
        phase=failure.phase,
        status=_CASE_STATUS[failure.status],
        message=failure.message,
        exception_type=failure.error_type,
        stderr_excerpt=excerpt,
        stderr_log=stderr_log,
        command_id=command_id,
    )
