"""Fixtures: a complete run directory written through the real writer."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import tile_stats
from tile_artifacts import (
    ArtifactWriter,
    CaseRecord,
    CheckRecord,
    ConfigSnapshot,
    Context,
    Counts,
    DeviceRecord,
    FailureRecord,
    Peaks,
    Phases,
    Producer,
    ReferenceRecord,
    Report,
    ReportSummary,
    Roofline,
    StatsRecord,
    Status,
    Throughput,
    Work,
    case_metrics,
    failure_id,
    fingerprint_input,
    new_run_id,
    utc_now,
)

PRODUCER = Producer(tool_name="tile", tool_version="0.1.0", git_head=None, dirty=None)


def samples(center: float, n: int = 30, spread: float = 0.01, seed: int = 0) -> list[float]:
    """Deterministic pseudo-random samples around `center` (no numpy needed)."""
    state = seed * 7919 + 1
    out: list[float] = []
    for _ in range(n):
        state = (state * 1103515245 + 12345) % 2**31
        out.append(center * (1 + spread * (state / 2**31 - 0.5)))
    return out


def make_case(
    case_id: str, center: float, *, status: Status = "success", seed: int = 0
) -> CaseRecord:
    xs = samples(center, seed=seed)
    ref = samples(center * 1.5, seed=seed + 100)
    stats = StatsRecord.from_summary(tile_stats.summarize(xs), stop_reason="precision")
    ref_stats = StatsRecord.from_summary(tile_stats.summarize(ref))
    return CaseRecord(
        case_id=case_id,
        kernel=case_id.split("[", 1)[0],
        params={"shape": "4096x4096", "dtype": "float32"},
        status=status,
        phases=Phases(trace_s=0.01, lower_s=0.02, compile_s=0.3, cache_hit=False, compile_count=1),
        timer="cupti",
        cold=False,
        samples=xs,
        stats=stats,
        work=Work(bytes=2 * 4096 * 4096 * 4, flops=None, source="declared"),
        throughput=Throughput(gbps=2 * 4096 * 4096 * 4 / stats.median / 1e9, tflops=None),
        roofline=Roofline(
            intensity=0.0, pct_peak_bw=80.0, bound="memory-bound", peak_source="builtin"
        ),
        reference=ReferenceRecord(
            samples=ref, stats=ref_stats, speedup=ref_stats.median / stats.median
        ),
        check=CheckRecord(passed=status == "success", max_abs_err=1e-7, rel_l2_err=1e-8, tol=1e-5),
    )


def write_run(
    run_dir: Path,
    *,
    status: Status = "success",
    with_failure: bool = False,
    cases: list[CaseRecord] | None = None,
) -> Path:
    """Write a complete bench run the way the CLI does; return the directory."""
    outside = run_dir.parent / f"{run_dir.name}-kernels.py"
    outside.write_text("def kernel(): ...\n")
    writer = ArtifactWriter(run_dir, run_id=new_run_id("bench"), producer=PRODUCER)
    writer.event("run_started", "bench started", phase="plan", fields={"cases": 2})
    log = writer.log_path("logs/runner-1.stderr.log")
    log.write_text("warming up\nsome native chatter\n")
    writer.command(
        "C001",
        ["python", "-m", "tile_runner", "--request", "req.json"],
        cwd=run_dir,
        status="success",
        phase="run",
        environment_overrides={"CUDA_VISIBLE_DEVICES": "0", "HF_TOKEN": "hunter2"},
        stderr_log="logs/runner-1.stderr.log",
        return_code=0,
        started_at=utc_now(),
        finished_at=utc_now(),
    )
    cases = cases or [
        make_case("mylib/softmax[shape=4096x4096,dtype=float32]", 1e-3),
        make_case("mylib/add[shape=4096x4096,dtype=float32]", 2e-4, seed=1),
    ]
    failures: list[FailureRecord] = []
    if with_failure:
        failures.append(
            FailureRecord(
                failure_id=failure_id(1),
                case_id=cases[0].case_id,
                phase="compile",
                status="failed",
                message="XlaRuntimeError: out of memory",
                exception_type="XlaRuntimeError",
                stderr_excerpt="RESOURCE_EXHAUSTED",
                stderr_log="logs/runner-1.stderr.log",
                command_id="C001",
            )
        )
    metrics = [
        m for i, c in enumerate(cases) for m in case_metrics(c, run_id=writer.run_id, index=i)
    ]
    writer.append_jsonl("metrics.jsonl", *metrics)
    writer.write_json("config/resolved_tool.json", Context(argv=["tile", "bench"]))
    writer.write_text("config/tile.toml", "[bench]\nruns = 10\n")
    writer.write_text("outputs/softmax.hlo", "HloModule softmax\n", description="optimized HLO")
    report = Report(
        producer=PRODUCER,
        run=writer.run_info(status),
        context=Context(
            cwd=str(run_dir.parent),
            hostname="gpu01",
            python="3.12.3",
            seed=0,
            argv=["tile", "bench"],
        ),
        configuration={"bench": {"runs": 10, "timer": "auto"}},
        device=DeviceRecord(
            backend="gpu",
            device_kind="NVIDIA H200",
            count=1,
            memory_bytes=141 * 2**30,
            peaks=Peaks(bandwidth_gbps=4800.0, tflops={"bfloat16": 989.0}, source="builtin"),
        ),
        summary=ReportSummary(
            title="tile bench",
            status=status,
            headline="2 cases measured on NVIDIA H200.",
            counts=Counts(cases=len(cases), passed=len(cases), failed=0, skipped=0),
        ),
        cases=cases,
        metrics=metrics,
        failures=failures,
    )
    writer.write_json("report.json", report)
    writer.event("run_finished", "bench finished", phase="done")
    writer.write_summary(report)
    writer.finalize(
        status=status,
        context=report.context,
        input_files=[
            fingerprint_input(outside, "kernel_module"),
            fingerprint_input(run_dir.parent / "gone.py", "data"),
        ],
        config_snapshots=[
            ConfigSnapshot(path="config/tile.toml", kind="source_file", source_path=str(outside))
        ],
        notes=["written by the test suite"],
    )
    return run_dir


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A clean, finalized run directory."""
    return write_run(tmp_path / "run")


@pytest.fixture
def make_run(tmp_path: Path) -> Callable[..., Path]:
    """Factory for run directories with options (status, failures, cases)."""
    counter = iter(range(1000))

    def make(
        *,
        status: Status = "success",
        with_failure: bool = False,
        cases: list[CaseRecord] | None = None,
    ) -> Path:
        return write_run(
            tmp_path / f"run{next(counter)}", status=status, with_failure=with_failure, cases=cases
        )

    return make


@pytest.fixture
def case_factory() -> Callable[..., CaseRecord]:
    """`make_case(case_id, center, *, status, seed)` for tests that build their own reports."""
    return make_case


@pytest.fixture
def sample_factory() -> Callable[..., list[float]]:
    """`samples(center, n, spread, seed)`: deterministic samples around a center."""
    return samples
