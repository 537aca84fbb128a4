"""The findings rules on hand-built reports, and the nvidia-smi clock parser they read."""

from __future__ import annotations

from collections.abc import Sequence

import tile_artifacts as ta
from tile_harness._findings import Noticed, RunFacts, notice
from tile_harness._telemetry import (
    ClockSample,
    parse_clocks,
    recorded_environment,
    throttle_reasons,
)
from tile_protocol.format import format_change, format_change_ci, format_p

PRODUCER = ta.Producer(tool_name="tile", tool_version="0.1.0")


def _case(
    case_id: str, *, ci: float = 0.001, passed: bool = True, peaks: ta.PeakSource | None = None
) -> ta.CaseRecord:
    median = 1e-3
    return ta.CaseRecord(
        case_id=case_id,
        kernel=case_id.split("[", maxsplit=1)[0],
        status="success" if passed else "failed",
        samples=[median] * 10,
        stats=ta.StatsRecord(
            n=10,
            min=median,
            max=median,
            mean=median,
            median=median,
            ci_low=median * (1 - ci),
            ci_high=median * (1 + ci),
            stop_reason="max_time",
        ),
        roofline=ta.Roofline(peak_source=peaks),
        check=ta.CheckRecord(
            passed=passed, max_abs_err=0.5, rel_l2_err=0.2, tol=1e-5, worst_index=[3]
        ),
    )


def _report(cases: list[ta.CaseRecord], failures: Sequence[ta.FailureRecord] = ()) -> ta.Report:
    return ta.Report(
        producer=PRODUCER,
        run=ta.RunInfo(
            run_id=ta.new_run_id("bench"),
            created_at=ta.utc_now(),
            status="partial",
            output_directory="/tmp/run",
        ),
        device=ta.DeviceRecord(backend="gpu", device_kind="NVIDIA H200"),
        summary=ta.ReportSummary(title="tile bench", status="partial", headline="x"),
        cases=cases,
        failures=list(failures),
    )


def _failure(
    n: int, case_id: str | None, error_type: str, status: ta.Status = "failed"
) -> ta.FailureRecord:
    return ta.FailureRecord(
        failure_id=ta.failure_id(n), case_id=case_id, phase="run", status=status,
        message=f"{error_type} on purpose\nsecond line", exception_type=error_type,
        stderr_log="logs/runner-2.stderr.log",
    )  # fmt: skip


def _by_category(facts: RunFacts) -> dict[str, Noticed]:
    return {n.category: n for n in notice(facts)}


def test_a_clean_precise_run_with_calibrated_peaks_has_nothing_to_say() -> None:
    report = _report([_case("k/a[n=1]", peaks="calibrated")])
    assert notice(RunFacts(report=report, comparison=None)) == []


def test_failures_are_grouped_by_kind_with_evidence_and_an_action() -> None:
    report = _report(
        [_case("k/a[n=1]", passed=False), _case("k/b[n=1]", peaks="calibrated")],
        [
            _failure(1, "k/c[n=1]", "RunnerCrash"),
            _failure(2, "k/d[n=1]", "RunnerTimeout", "timed_out"),
            _failure(3, "k/e[n=1]", "ValueError"),
            _failure(4, None, "ImportError"),
            _failure(5, "k/f[n=1]", "RunnerError", "skipped"),
            _failure(6, "k/g[n=1]", "Skip", "skipped"),  # the kernel's own reason: no finding
        ],
    )
    found = notice(RunFacts(report=report, comparison=None, case_timeout=30.0))
    kinds = [n.category for n in found]
    assert kinds[:1] == ["correctness"]
    assert set(kinds) >= {"crash", "timeout", "error", "setup", "not_run", "roofline"}
    by = {n.category: n for n in found}
    assert by["correctness"].evidence == [
        "k/a[n=1]: rel L2 error 0.2 > tol 1e-05 (max abs error 0.5 at [3])"
    ]
    assert by["crash"].evidence == [
        "k/c[n=1]: RunnerCrash on purpose (stderr: `logs/runner-2.stderr.log`)"
    ]
    assert by["not_run"].evidence == [
        "k/f[n=1]: RunnerError on purpose (stderr: `logs/runner-2.stderr.log`)"
    ]
    assert by["crash"].action and "--isolate -k k/c[n=1]" in by["crash"].action
    assert by["timeout"].action and "runner.case_timeout=120" in by["timeout"].action
    quieter = {"not_run", "roofline"}
    assert all(n.severity == "high" for n in found if n.category not in quieter)


def test_unmet_precision_and_peaks_from_the_table() -> None:
    report = _report([_case("k/a[n=1]", ci=0.05, peaks="builtin"), _case("k/b[n=1]")])
    by = _by_category(RunFacts(report=report, comparison=None, target_precision=0.01))
    noise = by["noise"]
    assert noise.evidence == ["k/a[n=1]: ±5.0% (target ±1%), 10 samples, stopped by max_time"]
    assert noise.action and "--rounds 5" in noise.action
    # The tables' rule: a case the stopping rule ended on `precision` met the target by its own
    # CI, so one a hair wider in the summary is not named (nor flagged ⚠ in the tables).
    near = _case("k/c[n=1]", ci=0.0101)
    assert near.stats is not None
    stopped = near.model_copy(
        update={"stats": near.stats.model_copy(update={"stop_reason": "precision"})}
    )
    by = _by_category(RunFacts(report=_report([stopped]), comparison=None, target_precision=0.01))
    assert "noise" not in by
    titles = [n.title for n in notice(RunFacts(report=report, comparison=None))]
    assert "peaks of NVIDIA H200 come from the built-in table" in titles
    assert "no peak numbers for NVIDIA H200: % of peak and bound are unknown" in titles


def test_throttling_is_seen_in_the_clocks() -> None:
    report = _report([_case("k/a[n=1]", peaks="calibrated")])
    calm = ClockSample("t0", 0, "H200", 1980.0, 1980.0, 40.0, 300.0, 0x1)
    hot = ClockSample("t1", 0, "H200", 1410.0, 1980.0, 88.0, 700.0, 0x4 | 0x40)
    assert notice(RunFacts(report=report, comparison=None, clocks=[calm])) == []
    (found,) = notice(RunFacts(report=report, comparison=None, clocks=[calm, hot]))
    assert found.category == "throttling"
    assert found.evidence == [
        "t1 GPU 0: software power cap, hardware thermal slowdown; SM 1410/1980 MHz, 88.0°C, 700.0 W"
    ]
    (missing,) = notice(
        RunFacts(report=report, comparison=None, clock_problem="`nvidia-smi` not found")
    )
    assert missing.category == "telemetry" and missing.severity == "info"


def test_parse_clocks_reads_nvidia_smi_csv() -> None:
    text = (
        "0, NVIDIA H200, 1980, 1980, 41, 123.45, 0x0000000000000001\n"
        "1, NVIDIA H200, [N/A], 1980, 85, [Not Supported], 0x0000000000000044\n"
        "Field is not valid\n"
    )
    first, second = parse_clocks(text, "now")
    assert (first.index, first.sm_mhz, first.power_w, first.reasons) == (0, 1980.0, 123.45, 1)
    assert (second.sm_mhz, second.power_w) == (None, None)
    assert throttle_reasons(first) == []
    assert throttle_reasons(second) == ["software power cap", "hardware thermal slowdown"]


def test_recorded_environment_keeps_the_patterns_and_hides_secrets() -> None:
    env = {"XLA_FLAGS": "--x", "JAX_KEY_FILE": "k", "HOME": "/root", "TILE_BENCH_ROUNDS": "3"}
    assert recorded_environment(env, ["XLA_*", "JAX_*", "TILE_*"]) == {
        "JAX_KEY_FILE": "<redacted>",
        "TILE_BENCH_ROUNDS": "3",
        "XLA_FLAGS": "--x",
    }
    assert recorded_environment(env, []) == {}


def test_a_regression_reads_its_change_and_ci_in_one_unit() -> None:
    def timed(scale: float) -> ta.Report:
        case = _case("k/a[n=1]")
        samples = [scale * (1 + 0.01 * (i % 5)) for i in range(30)]
        return _report([case.model_copy(update={"samples": samples})])

    doc = ta.compare.compare_runs(timed(1e-3), timed(2e-3), noise_floor_pct=2.0, alpha=0.05)
    (row,) = doc.rows
    assert row.judgement == "regression" and row.ratio is not None
    found = {n.category: n for n in notice(RunFacts(report=timed(2e-3), comparison=doc))}
    (line,) = found["regression"].evidence
    # The CI bounds the change, so both are percent changes (not a ratio beside a percent).
    ci = format_change_ci(row.ratio_ci_low, row.ratio_ci_high)
    assert line == f"k/a[n=1]: {format_change(row.ratio)} (CI {ci}, p={format_p(row.p_value)})"
    assert line.startswith("k/a[n=1]: +100.0% (CI [+")
