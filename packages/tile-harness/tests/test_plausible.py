"""The plausibility rule at its edges: within its CI of a roof is possible, past it is not."""

from __future__ import annotations

import pytest

import tile_artifacts as ta
import tile_protocol as tp
from tile_harness._findings import Noticed, RunFacts, notice
from tile_harness._plausible import MEASURED_SLACK, beyond_roof

PRODUCER = ta.Producer(tool_name="tile", tool_version="0.1.0")
ORIGINS = {
    "machine.peak_bandwidth_gbps": "tile.toml:4",
    "machine.peak_tflops.bfloat16": "tile.toml:5",
}


def _case(
    case_id: str,
    *,
    pct: float,
    ci: float,
    roof: str = "bandwidth",
    source: ta.PeakSource = "config",
    work: ta.WorkSource = "declared",
) -> ta.CaseRecord:
    """A case at `pct`% of a roof of 100 (GB/s or TFLOP/s), its median's CI ±`ci`."""
    median = 1e-3
    bandwidth = roof == "bandwidth"
    return ta.CaseRecord(
        case_id=case_id,
        kernel=case_id.split("[", maxsplit=1)[0],
        status="success",
        samples=[median] * 10,
        stats=ta.StatsRecord(
            n=10,
            min=median,
            max=median,
            mean=median,
            median=median,
            ci_low=median * (1 - ci),
            ci_high=median * (1 + ci),
        ),
        work=ta.Work(bytes=1.0, flops=1.0, source=work),
        throughput=ta.Throughput(
            gbps=pct if bandwidth else None, tflops=None if bandwidth else pct
        ),
        roofline=ta.Roofline(
            pct_peak_bw=pct if bandwidth else None,
            pct_peak_flops=None if bandwidth else pct,
            peak_source=source,
        ),
    )


def _facts(
    cases: list[ta.CaseRecord],
    calibration: tp.Calibration | None = None,
    calibration_file: str | None = None,
) -> RunFacts:
    report = ta.Report(
        producer=PRODUCER,
        run=ta.RunInfo(
            run_id=ta.new_run_id("bench"),
            created_at=ta.utc_now(),
            status="success",
            output_directory="/tmp/run",
        ),
        device=ta.DeviceRecord(
            backend="gpu",
            device_kind="NVIDIA H200",
            peaks=ta.Peaks(bandwidth_gbps=100.0, tflops={"bfloat16": 100.0}, source="config"),
        ),
        summary=ta.ReportSummary(title="tile bench", status="success", headline="x"),
        cases=cases,
    )
    return RunFacts(
        report=report,
        comparison=None,
        peak_origins=ORIGINS,
        calibration=calibration,
        calibration_file=calibration_file,
    )


def _plausibility(facts: RunFacts) -> list[Noticed]:
    return [n for n in notice(facts) if n.category == "plausibility"]


@pytest.mark.parametrize(
    ("pct", "ci_high", "measured", "flagged"),
    [
        (100.0, None, False, False),  # at the roof: possible
        (102.0, 1.03, False, False),  # above, but within its CI
        (110.0, 1.03, False, True),  # the CI's slow end is still above: impossible
        (100.5, None, False, True),  # no CI: the figure itself
        (100.0 * (1 + MEASURED_SLACK) - 0.1, 1.0, True, False),  # a calibration's slack
        (100.0 * (1 + MEASURED_SLACK) + 0.1, 1.0, True, True),
    ],
)
def test_the_rule_bounds_the_rate_by_the_slow_end_of_the_ci(
    pct: float, ci_high: float | None, measured: bool, flagged: bool
) -> None:
    least = beyond_roof(pct, 1.0, ci_high, measured=measured)
    assert (least is not None) is flagged
    if least is not None and ci_high is not None:
        assert least == pytest.approx(pct / ci_high)


def test_only_cases_past_the_roof_by_more_than_their_ci_are_named() -> None:
    facts = _facts(
        [_case("k/near[n=1]", pct=102.0, ci=0.03), _case("k/far[n=1]", pct=120.0, ci=0.03)]
    )
    [found] = _plausibility(facts)
    assert found.severity == "high" and found.priority == "high"
    assert found.title == "1 case above 100% of the bandwidth roof (100 GB/s, `[machine]` peak)"
    assert found.evidence == [
        "k/far[n=1]: 120 GB/s, 120% of the 100 GB/s roof (at least 117% at the slow end of its 95% CI)"
    ]
    causes = found.interpretation
    assert (
        causes.index('`bytes=` of `@tile.kernel("k/far")`')
        < causes.index("`[machine] peak_bandwidth_gbps` (tile.toml:4)")
        < causes.index("another device")
    )
    assert (
        found.action is not None and "`[machine] peak_bandwidth_gbps` (tile.toml:4)" in found.action
    )


def test_a_compute_roof_names_the_dtype_key_that_set_it() -> None:
    [found] = _plausibility(_facts([_case("k/mm[n=1]", pct=292.0, ci=0.01, roof="compute")]))
    assert "compute roof (100 TFLOP/s" in found.title
    assert "`flops=`" in found.interpretation
    assert "`[machine] peak_tflops.bfloat16` (tile.toml:5)" in found.interpretation


def test_a_calibrated_roof_names_the_calibration_file_and_forgives_a_few_percent() -> None:
    file = "/cache/calibration/nvidia-h200.json"
    near = _case("k/copy[n=1]", pct=102.0, ci=0.001, source="calibrated")
    assert _plausibility(_facts([near], calibration_file=file)) == []
    far = _case("k/copy[n=2]", pct=120.0, ci=0.001, source="calibrated", work="cost_analysis")
    [found] = _plausibility(_facts([far], calibration_file=file))
    assert f"`{file}` was measured on another device" in found.interpretation
    assert "XLA's cost analysis" in found.interpretation
    assert found.action is not None and "tile device --calibrate" in found.action


def test_a_calibration_faster_than_the_declared_peak_is_a_finding() -> None:
    cal = tp.Calibration(
        copy_gbps=150.0,
        copy_bytes=1 << 30,
        matmul_tflops=50.0,
        matmul_dtype="bfloat16",
        matmul_shape=[8192] * 3,
        timer="cupti",
    )
    file = "/cache/calibration/nvidia-h200.json"
    [found] = _plausibility(_facts([], calibration=cal, calibration_file=file))
    assert found.severity == "high"
    assert found.evidence == [
        f"`{file}`: its copy ran at 150 GB/s, 150% of the 100 GB/s bandwidth roof of "
        "`[machine]` (tile.toml:4)"
    ]
    slower = tp.Calibration(
        copy_gbps=90.0,
        copy_bytes=1 << 30,
        matmul_tflops=50.0,
        matmul_dtype="bfloat16",
        matmul_shape=[8192] * 3,
        timer="cupti",
    )
    assert _plausibility(_facts([], calibration=slower, calibration_file=file)) == []
