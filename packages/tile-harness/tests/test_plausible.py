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


def _with_l2(facts: RunFacts, l2_bytes: int) -> RunFacts:
    device = facts.report.device.model_copy(update={"l2_bytes": l2_bytes})
    report = facts.report.model_copy(update={"device": device})
    return RunFacts(report=report, comparison=None, peak_origins=ORIGINS)


def _moving(case: ta.CaseRecord, nbytes: float, *, cold: bool = False) -> ta.CaseRecord:
    work = case.work.model_copy(update={"bytes": nbytes})
    return case.model_copy(update={"work": work, "cold": cold})


def test_a_warm_case_whose_data_fits_in_the_l2_is_explained_by_the_cache() -> None:
    """A 2048x2048 bf16 RMSNorm on an H100 read 3,667 GB/s, 110% of DRAM's roof: its 16.8 MB
    sat in the 50 MiB L2. That is the cache's rate, not a wrong `bytes=`; a case that moves
    more than the L2 holds, or one timed cold, keeps the finding that says the rate is wrong."""
    mib = 2**20
    small = _moving(_case("k/small[n=1]", pct=110.0, ci=0.01), 16.8e6)
    big = _moving(_case("k/big[n=1]", pct=110.0, ci=0.01), 200e6)
    cold = _moving(_case("k/cold[n=1]", pct=110.0, ci=0.01), 16.8e6, cold=True)
    found = _plausibility(_with_l2(_facts([small, big, cold]), 50 * mib))
    by_severity = {f.severity: f for f in found}
    assert sorted(by_severity) == ["high", "medium"]
    cache = by_severity["medium"]
    assert (
        cache.title
        == "1 case above 100% of the bandwidth roof with data that fits in the 50 MiB L2"
    )
    assert cache.evidence == [
        "k/small[n=1]: 110 GB/s, 110% of the 100 GB/s roof; one call moves 16.8 MB"
    ]
    assert cache.action is not None and "--cold" in cache.action
    wrong = by_severity["high"]
    assert [e.split(":")[0] for e in wrong.evidence] == ["k/big[n=1]", "k/cold[n=1]"]


def test_without_a_known_l2_every_case_past_the_roof_is_called_wrong() -> None:
    small = _moving(_case("k/small[n=1]", pct=110.0, ci=0.01), 16.8e6)
    [found] = _plausibility(_facts([small]))
    assert found.severity == "high" and "rates are wrong, not fast" in found.interpretation
