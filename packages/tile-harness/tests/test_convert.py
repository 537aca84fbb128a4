"""The typed converters from protocol messages to artifact records: every field of each
message lands in its record (or is dropped on purpose), so a field added on one side and not
mapped on the other fails here."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

import tile_artifacts as ta
import tile_protocol as tp
from tile_harness import _convert as convert

STATS = tp.Stats(
    n=4, min=1.0, max=4.0, mean=2.5, median=2.5, stdev=1.2, mad=1.0, q1=1.7, q3=3.2,
    p5=1.1, p95=3.9, ci_low=2.0, ci_high=3.0, outliers_mild=1, outliers_severe=2,
    stop_reason="max_runs",
)  # fmt: skip
CHECK = tp.Check(
    passed=True, max_abs_err=1e-6, rel_l2_err=1e-7, tol=1e-5, worst_index=[1, 2], message="ok"
)
ACCOUNTING = tp.Accounting(
    inputs_s=0.1, compile_s=0.2, reference_compile_s=0.3, check_s=0.4, warmup_s=0.5,
    sample_s=0.6, reference_sample_s=0.7, other_s=0.8, total_s=3.6,
)  # fmt: skip
PHASES = tp.Phases(
    trace_s=0.1, lower_s=0.2, compile_s=0.3, cache_hit=False, compile_count=2,
    cache_hit_count=1, cache_miss_count=1,
)  # fmt: skip
CONFIG = tp.ConfigInfo(
    values={"block_rows": "4"}, source="shipped", signature="abc", note="no entry for cpu"
)
KERNEL = tp.KernelTime(
    name="input_reduce_fusion_1", short="input_reduce_fusion_1",
    origin="input_reduce_fusion.1 (kInput)", launches=2, stats=STATS, share=0.75,
)  # fmt: skip
OP = tp.OpInfo(name="norm", impl="pallas", baseline=True)
INFO = tp.CaseInfo(case_id="k[n=4]", kernel="k", params={"n": "4"}, op=OP)
BENCH = tp.BenchResult(
    case_id="k[n=4]",
    kernel="k",
    params={"n": "4"},
    timer="batched",
    cold=True,
    samples=[1.0, 2.0, 3.0, 4.0],
    stats=STATS,
    phases=PHASES,
    work=tp.Work(bytes=64.0, flops=8.0, source="declared"),
    throughput=tp.Throughput(gbps=1.5, tflops=0.25),
    roofline=tp.Roofline(
        intensity=0.125,
        pct_peak_bw=12.0,
        pct_peak_flops=1.0,
        bound="memory-bound",
        peak_source="builtin:NVIDIA H200",
    ),
    reference=tp.Reference(samples=[2.0] * 4, stats=STATS, speedup=0.8, interleaved=True),
    check=CHECK,
    seed=7,
    peak_memory_bytes=1024,
    round_sizes=[2, 2],
    accounting=ACCOUNTING,
    config=CONFIG,
    kernels=[KERNEL],
    op=OP,
    captured="model:example",
)

# What a record leaves out of its message, on purpose.
# Provenance (`pid`, `seq`, `token`) is the stream's business, checked at the boundary.
DROPPED = {"type", "seed", "peak_memory_bytes", "pid", "seq", "token"}


def _wire(struct: msgspec.Struct) -> dict[str, Any]:
    return msgspec.to_builtins(struct)


def test_a_bench_result_keeps_every_field_but_the_dropped_ones() -> None:
    record = convert.case_from_bench(BENCH).model_dump(mode="json")
    wire = _wire(BENCH)
    assert set(record) - {"status"} == set(wire) - DROPPED
    # The runner names the table row of its peaks; the format keeps only the kind.
    assert record["roofline"].pop("peak_source") == "builtin"
    assert wire["roofline"].pop("peak_source") == "builtin:NVIDIA H200"
    for key in set(wire) - DROPPED:
        assert record[key] == wire[key], key
    assert record["status"] == "success"


@pytest.mark.parametrize(
    ("part", "convert"),
    [
        (STATS, convert.stats_record),
        (CHECK, convert.check_record),
        (ACCOUNTING, convert.accounting_record),
        (PHASES, convert.phases_record),
        (KERNEL, convert.kernel_record),
        (OP, convert.op_record),
    ],
    ids=lambda x: type(x).__name__,
)
def test_each_part_maps_field_for_field(part: Any, convert: Any) -> None:
    assert convert(part).model_dump(mode="json") == _wire(part)


def test_a_cache_event_keeps_every_field_and_gains_its_process() -> None:
    event = tp.CacheEvent(
        event="miss", module="jit_k", key="jit_k-1", code="key_changed", reason="flags",
        differs=["XLA flags"], case_id="k[n=4]", pid=3, seq=2,
    )  # fmt: skip
    record = convert.cache_event_record(event, "cold").model_dump(mode="json")
    wire = _wire(event)
    assert record.pop("process") == "cold"
    assert record == {k: v for k, v in wire.items() if k not in DROPPED}


def test_accounting_total_adds_part_by_part() -> None:
    total = convert.accounting_total([ACCOUNTING, ACCOUNTING]).model_dump()
    assert total == {k: pytest.approx(2 * v) for k, v in _wire(ACCOUNTING).items()}


def test_a_failed_check_fails_the_case() -> None:
    failed = msgspec.structs.replace(BENCH, check=tp.Check(passed=False, message="off"))
    assert convert.case_from_bench(failed).status == "failed"
    result = tp.TestResult(case_id="k[n=4]", kernel="k", check=tp.Check(passed=False))
    assert convert.case_from_test(INFO, result).status == "failed"


def test_test_and_build_results_take_the_planned_identity() -> None:
    result = tp.TestResult(case_id="k[n=4]", kernel="k", check=CHECK, accounting=ACCOUNTING,
                           config=CONFIG, captured="model:example")  # fmt: skip
    tested = convert.case_from_test(INFO, result)
    assert (tested.case_id, tested.kernel, tested.params) == ("k[n=4]", "k", {"n": "4"})
    assert tested.op == convert.op_record(OP)  # the plan's op, which a TestResult does not carry
    assert tested.captured == "model:example"
    assert tested.check == convert.check_record(CHECK)
    assert tested.config is not None and tested.config.values == {"block_rows": "4"}
    build = tp.BuildResult(case_id="k[n=4]", kernel="k", ok=False, phases=PHASES)
    built = convert.case_from_build(INFO, build)
    assert built.status == "failed" and built.phases == convert.phases_record(PHASES)
    # A case captured from a program (`--from`) stays marked whatever became of it.
    captured = msgspec.structs.replace(INFO, captured="model:example")
    assert convert.case_from_build(captured, build).captured == "model:example"
    assert convert.case_record(captured, None, None, interrupted=True).captured == "model:example"


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ("failed", "failed"),
        ("timed_out", "timed_out"),
        ("skipped", "skipped"),
        ("unsupported", "unsupported"),
        ("success", "failed"),
    ],
)
def test_a_failure_decides_the_status_of_a_case_without_result(
    status: tp.CaseStatus, expected: ta.Status
) -> None:
    failure = tp.Failure(case_id="k[n=4]", phase="run", status=status, error_type="E", message="m")
    assert convert.case_record(INFO, None, failure, interrupted=False).status == expected
    # A result wins over a failure (the runner finished the case after all).
    assert convert.case_record(INFO, BENCH, failure, interrupted=False).status == "success"


def test_a_case_nobody_spoke_of_was_skipped_or_interrupted() -> None:
    assert convert.case_record(INFO, None, None, interrupted=False).status == "skipped"
    assert convert.case_record(INFO, None, None, interrupted=True).status == "interrupted"


def test_a_failure_record_keeps_the_tail_of_a_long_traceback() -> None:
    tail = "x" * ta.STDERR_EXCERPT_LIMIT
    failure = tp.Failure(case_id=None, phase="import", error_type="ImportError",
                         message="no module", traceback="head" + tail)  # fmt: skip
    record = convert.failure_record(
        3, failure, stderr_log="logs/runner-1.stderr.log", command_id="C001"
    )
    assert (record.failure_id, record.phase, record.status) == ("F003", "import", "failed")
    assert record.stderr_excerpt == tail
    assert (record.stderr_log, record.command_id) == ("logs/runner-1.stderr.log", "C001")
