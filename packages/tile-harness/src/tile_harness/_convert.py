"""What a runner said, as artifact records: one typed converter per result kind and part.

The wire protocol and the artifact format are versioned apart (a protocol minor version is
not a schema version) and tile-artifacts knows nothing of the protocol, so each keeps its
own models; the CLI, which speaks both, turns one into the other here, straight from the
message (no detour through dicts), each field by the name both sides give it. A test holds
each converter to its message: a field added to one side and not the other fails it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar, get_args

import msgspec

import tile_artifacts as ta
import tile_protocol as tp

__all__ = [
    "accounting_record",
    "accounting_total",
    "cache_event_record",
    "case_from_bench",
    "case_from_build",
    "case_from_test",
    "case_record",
    "check_record",
    "failure_record",
    "kernel_record",
    "op_record",
    "phases_record",
    "stats_record",
]

_R = TypeVar("_R", bound=ta.ArtifactModel)

_PEAK_SOURCE: dict[str, ta.PeakSource] = {s: s for s in get_args(ta.PeakSource)}

# A Failure's status as the status of its case: a "success" failure is still a failure.
_CASE_STATUS: dict[tp.CaseStatus, ta.Status] = {
    "failed": "failed",
    "timed_out": "timed_out",
    "skipped": "skipped",
    "unsupported": "unsupported",
    "success": "failed",
    "invalid": "invalid",
}


# ---------------------------------------------------------------- parts


def _copy(part: msgspec.Struct, record: type[_R], **given: object) -> _R:
    """`part` as `record`: every field the record declares, from the part's field of the same
    name, except those `given` (a part and its record declare the same names; the tests in
    tests/test_convert.py hold them to it)."""
    values = {name: getattr(part, name) for name in record.model_fields if name not in given}
    return record(**values, **given)


def stats_record(stats: tp.Stats) -> ta.StatsRecord:
    """Summary statistics, as the runner computed them."""
    return ta.StatsRecord.from_summary(stats, stop_reason=stats.stop_reason)


def phases_record(phases: tp.Phases) -> ta.Phases:
    """Compile phase timings and cache counts."""
    return _copy(phases, ta.Phases)


def check_record(check: tp.Check) -> ta.CheckRecord:
    """A kernel's output against its reference."""
    return _copy(check, ta.CheckRecord)


def kernel_record(kernel: tp.KernelTime) -> ta.kernels.KernelRecord:
    """One device kernel of a case's breakdown."""
    return _copy(kernel, ta.kernels.KernelRecord, stats=stats_record(kernel.stats))


def op_record(op: tp.OpInfo | None) -> ta.ops.OpRecord | None:
    """The op a case's kernel implements, if it declared one."""
    return _copy(op, ta.ops.OpRecord) if op is not None else None


def accounting_record(accounting: tp.Accounting) -> ta.Accounting:
    """Where one case's wall time went in the runner."""
    return accounting_total([accounting])


def accounting_total(parts: Iterable[tp.Accounting]) -> ta.Accounting:
    """The sum of several cases' accounting, part by part (a run's `timing.parts`)."""
    items = list(parts)
    sums = {name: sum(getattr(a, name) for a in items) for name in ta.Accounting.model_fields}
    return ta.Accounting(**sums)


def _roofline(roofline: tp.Roofline) -> ta.Roofline:
    # The runner names the table row it used (`builtin:NVIDIA H200`); the format keeps the kind.
    kind = (roofline.peak_source or "").split(":")[0]
    return _copy(roofline, ta.Roofline, peak_source=_PEAK_SOURCE.get(kind))


def _reference(reference: tp.Reference) -> ta.ReferenceRecord:
    stats = stats_record(reference.stats) if reference.stats is not None else None
    return _copy(reference, ta.ReferenceRecord, stats=stats)


# ---------------------------------------------------------------- cases


def case_from_bench(result: tp.BenchResult) -> ta.CaseRecord:
    """A measured case; a failed check fails it (its timing is then never compared)."""
    passed = result.check is None or result.check.passed
    return _copy(
        result,
        ta.CaseRecord,
        status="success" if passed else "failed",
        phases=phases_record(result.phases),
        stats=stats_record(result.stats),
        work=_copy(result.work, ta.Work),
        throughput=_copy(result.throughput, ta.Throughput),
        roofline=_roofline(result.roofline),
        reference=_reference(result.reference) if result.reference is not None else None,
        check=check_record(result.check) if result.check is not None else None,
        accounting=accounting_record(result.accounting) if result.accounting else None,
        config=_copy(result.config, ta.ConfigRecord) if result.config is not None else None,
        kernels=[kernel_record(k) for k in result.kernels] if result.kernels is not None else None,
        op=op_record(result.op),
    )


def _planned(info: tp.CaseInfo, status: ta.Status, **given: Any) -> ta.CaseRecord:
    """A case as the plan names it (id, kernel, axis values), with what is known of it."""
    params = dict(info.params)
    given.setdefault("captured", info.captured)
    return ta.CaseRecord(case_id=info.case_id, kernel=info.kernel, params=params, status=status,
                         op=op_record(info.op), **given)  # fmt: skip


def case_from_test(info: tp.CaseInfo, result: tp.TestResult) -> ta.CaseRecord:
    """A checked case."""
    accounting = accounting_record(result.accounting) if result.accounting else None
    config = _copy(result.config, ta.ConfigRecord) if result.config is not None else None
    status = "success" if result.check.passed else "failed"
    return _planned(info, status, check=check_record(result.check), accounting=accounting,
                    config=config, captured=result.captured)  # fmt: skip


def case_from_build(info: tp.CaseInfo, result: tp.BuildResult) -> ta.CaseRecord:
    """A case lowered and compiled without running it."""
    status = "success" if result.ok else "failed"
    return _planned(info, status, phases=phases_record(result.phases))


def case_record(
    info: tp.CaseInfo,
    result: tp.BenchResult | tp.TestResult | tp.BuildResult | None,
    failure: tp.Failure | None,
    *,
    interrupted: bool,
    invalid: bool = False,
) -> ta.CaseRecord:
    """One planned case from whatever the runner said about it: its result, else its failure,
    else nothing (`interrupted` when the run was stopped, else `skipped`).

    `invalid`: the runner sent a message about the case that broke the protocol's rules
    (`_boundary.py`); the case is `invalid`, with whatever valid result it had kept.
    """
    record = _record_of(info, result, failure, interrupted=interrupted)
    return record.model_copy(update={"status": "invalid"}) if invalid else record


def _record_of(
    info: tp.CaseInfo,
    result: tp.BenchResult | tp.TestResult | tp.BuildResult | None,
    failure: tp.Failure | None,
    *,
    interrupted: bool,
) -> ta.CaseRecord:
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
    return _planned(info, status)


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


def cache_event_record(event: tp.CacheEvent, process: ta.cache.ProcessRole) -> ta.cache.CacheEvent:
    """A compile-cache lookup as `diagnostics/jax_cache.json` holds it, under the role of the
    runner that reported it (`run`, or `--cold-process`'s `cold` and `warm`)."""
    return _copy(event, ta.cache.CacheEvent, process=process)
