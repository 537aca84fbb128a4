"""Reports built from the real models (and written by the real writer where a file is needed).

The builders are handed out as fixtures (`make_case`, `make_report`, `write_run`): a module
named conftest is already taken on the path by the top-level tests.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

import tile_artifacts as ta
import tile_stats

H200_PEAKS = ta.Peaks(bandwidth_gbps=4800.0, tflops={"bfloat16": 989.0}, source="builtin")


def samples(center: float, n: int = 40, spread: float = 0.02, seed: int = 0) -> list[float]:
    """Seeded log-normal samples around `center`."""
    rng = random.Random(seed)
    return [center * math.exp(rng.gauss(0, spread)) for _ in range(n)]


# What one call does unless a test says otherwise: moves a gigabyte, no FLOPs.
_COPY_WORK = ta.Work(bytes=1e9, flops=None, source="declared")


def _make_case(
    case_id: str,
    center: float,
    *,
    work: ta.Work = _COPY_WORK,
    status: ta.Status = "success",
    seed: int = 0,
    peaks: ta.Peaks | None = None,
    ref_center: float | None = None,
) -> ta.CaseRecord:
    """A measured case with a reference (1.3x slower unless `ref_center`), and the rates and
    roofline position (against `peaks`) of its `work` as the runner writes them; its check
    passed when its status is `success`."""
    flops, nbytes = work.flops, work.bytes
    xs = samples(center, seed=seed)
    ref = samples(ref_center or center * 1.3, seed=seed + 1000)
    stats = ta.StatsRecord.from_summary(tile_stats.summarize(xs), stop_reason="precision")
    ref_stats = ta.StatsRecord.from_summary(tile_stats.summarize(ref))
    gbps = None if nbytes is None else nbytes / stats.median / 1e9
    tflops = None if flops is None else flops / stats.median / 1e12
    roof = ta.Roofline(intensity=None if flops is None or not nbytes else flops / nbytes)
    if peaks is not None:
        peak_bw = peaks.bandwidth_gbps
        peak_fl = peaks.tflops.get("bfloat16")
        roof = ta.Roofline(
            intensity=roof.intensity,
            pct_peak_bw=None if gbps is None or peak_bw is None else 100 * gbps / peak_bw,
            pct_peak_flops=None if tflops is None or peak_fl is None else 100 * tflops / peak_fl,
            bound="memory-bound",
            peak_source=peaks.source,
        )
    return ta.CaseRecord(
        case_id=case_id,
        kernel=case_id.split("[", 1)[0],
        params={"dtype": "bfloat16"},
        status=status,
        phases=ta.Phases(trace_s=0.01, lower_s=0.05, compile_s=0.4, cache_hit=False),
        timer="cupti",
        cold=False,
        samples=xs,
        stats=stats,
        work=work,
        throughput=ta.Throughput(gbps=gbps, tflops=tflops),
        roofline=roof,
        reference=ta.ReferenceRecord(
            samples=ref, stats=ref_stats, speedup=ref_stats.median / stats.median
        ),
        check=ta.CheckRecord(
            passed=status == "success", max_abs_err=1e-3, rel_l2_err=1e-4, tol=2e-2
        ),
    )


def _make_report(
    cases: Sequence[ta.CaseRecord],
    *,
    git_head: str | None = None,
    dirty: bool | None = False,
    device: str = "NVIDIA H200",
    peaks: ta.Peaks | None = None,
    failures: Sequence[ta.FailureRecord] = (),
    status: ta.Status = "success",
) -> ta.Report:
    """A report around `cases`, with a fresh run id."""
    run_id = ta.new_run_id("bench")
    return ta.Report(
        producer=ta.Producer(
            tool_name="tile", tool_version="0.1.0", git_head=git_head, dirty=dirty
        ),
        run=ta.RunInfo(
            run_id=run_id, created_at=ta.utc_now(), status=status, output_directory="/tmp/x"
        ),
        context=ta.Context(hostname="gpu01", python="3.12.3", argv=["tile", "bench"]),
        device=ta.DeviceRecord(
            backend="gpu", device_kind=device, count=1, peaks=peaks or ta.Peaks()
        ),
        summary=ta.ReportSummary(
            title="tile bench",
            status=status,
            headline=f"{len(cases)} cases",
            counts=ta.Counts(cases=len(cases), passed=len(cases)),
        ),
        cases=list(cases),
        failures=list(failures),
    )


def _write_run(run_dir: Path, report: ta.Report) -> Path:
    """A finalized run directory holding `report`, written by the real writer."""
    writer = ta.ArtifactWriter(
        run_dir, run_id=report.run.run_id, producer=report.producer, durable=False
    )
    writer.write_json("report.json", report)
    writer.write_summary(report)
    writer.finalize(status=report.run.status, context=report.context)
    return run_dir


@pytest.fixture
def make_case() -> Callable[..., ta.CaseRecord]:
    """`make_case(case_id, median_s, *, work, status, seed, peaks, ref_center)`."""
    return _make_case


@pytest.fixture
def make_report() -> Callable[..., ta.Report]:
    """`make_report(cases, *, git_head, dirty, device, peaks, failures, status)`."""
    return _make_report


@pytest.fixture
def write_run() -> Callable[[Path, ta.Report], Path]:
    """`write_run(run_dir, report)`: a finalized run directory."""
    return _write_run
