"""Campaign pieces without a runner: estimates from a history, attempt verdicts, matching."""

from __future__ import annotations

from pathlib import Path

import pytest

import tile_artifacts as ta
from tile_harness._errors import CliError, ExitCode
from tile_harness.campaign._dir import CampaignDir
from tile_harness.campaign._estimate import DEFAULT_CASE_EXTRA_S, DEFAULT_START_S, estimate_unit
from tile_harness.campaign._history import History, Observation
from tile_harness.campaign._select import matches
from tile_harness.campaign._units import AttemptState, planned_args, verdict

A, B, C = "k[n=1]", "k[n=2]", "k[n=3]"


def _history() -> History:
    history = History()
    for total, mtime in ((4.0, 1.0), (2.0, 2.0), (3.0, 3.0)):
        history.cases[("gpu", A)].append(Observation("s1", total, 1.0, mtime))
    history.cases[("gpu", B)].append(Observation("s2", 10.0, 8.0, 1.0))
    history.starts["gpu"] += [2.0, 4.0, 3.0]
    history.overheads["gpu"] += [0.5]
    history.process["gpu"] += [1.5]
    return history


def test_estimate_bases_and_parts() -> None:
    split, cases = estimate_unit(
        _history(),
        device_kind="gpu",
        case_ids=[A, B, C],
        settings="s1",
        max_time=0.5,
        shards=1,
        lists_first=False,
    )
    by_id = {c.case_id: c for c in cases}
    assert (by_id[A].basis, by_id[A].seconds, by_id[A].runs_seen) == ("seen", 3.0, 3)
    # Other settings: its 2 s outside sampling, sampling capped at 2 x max_time.
    assert (by_id[B].basis, by_id[B].seconds) == ("seen_other_settings", 2.0 + 1.0)
    assert (by_id[C].basis, by_id[C].seconds) == ("guess", (3.0 + 3.0) / 2)
    assert split.start_s == 3.0 and split.overhead_s == 0.5 + 1.5
    assert split.cases_s == pytest.approx(9.0)
    assert split.total_s == pytest.approx(3.0 + 9.0 + 2.0)


def test_estimate_with_shards_and_no_history() -> None:
    split, cases = estimate_unit(
        History(),
        device_kind=None,
        case_ids=[A, B],
        settings="s",
        max_time=2.0,
        shards=2,
        lists_first=True,
    )
    assert {c.basis for c in cases} == {"default"}
    assert all(c.seconds == 2 * 2.0 + DEFAULT_CASE_EXTRA_S for c in cases)
    assert split.start_s == 2 * DEFAULT_START_S  # the plan runner lists before the shards
    assert split.cases_s == pytest.approx(2 * 5.0 / 2)


def test_planned_args_drop_the_program_and_the_output_directory() -> None:
    argv = ["/x/__main__.py", "bench", "--case", "k", "-o", "/c/units/u/attempt-1"]
    assert planned_args(argv) == ["bench", "--case", "k"]


def _report(argv: list[str], status: ta.Status = "success", kind: str = "cpu") -> ta.Report:
    return ta.Report(
        producer=ta.Producer(tool_name="tile", tool_version="0"),
        run=ta.RunInfo(
            run_id="bench-20250131T120000Z-0123abcd",
            created_at=ta.utc_now(),
            status=status,
            output_directory="/tmp",
        ),
        context=ta.Context(argv=argv),
        device=ta.DeviceRecord(device_kind=kind),
        summary=ta.ReportSummary(title="t", status=status, headline="h"),
    )


def _unit(device_kind: str | None = "cpu") -> ta.campaign.PlannedUnit:
    split = ta.campaign.TimeSplit(start_s=1, cases_s=1, overhead_s=1, total_s=3)
    return ta.campaign.PlannedUnit(
        unit_id="warm@here",
        variant="warm",
        machine="here",
        device_kind=device_kind,
        args=["bench", "--case", "k"],
        estimate=split,
    )


def _state(report: ta.Report | None) -> AttemptState:
    return AttemptState(1, "units/warm@here/attempt-1", None, report is not None, report)


ARGV = ["tile", "bench", "--case", "k", "-o", "d"]


@pytest.mark.parametrize(
    ("report", "unit", "done", "status", "why"),
    [
        (_report(ARGV), _unit(), True, "success", None),
        (_report(ARGV, "partial"), _unit(), True, "partial", None),  # a failed check is a result
        (None, _unit(), False, "interrupted", "not a complete run directory"),
        (_report(ARGV, "interrupted"), _unit(), False, "interrupted", "interrupted"),
        (_report([*ARGV, "--set", "bench.cold=true"]), _unit(), False, "success", "other arg"),
        (_report(ARGV, kind="NVIDIA H200"), _unit(), False, "invalid", "expects `cpu`"),
        (_report(ARGV, kind="NVIDIA H200"), _unit(None), True, "success", None),
        (_report(ARGV), None, False, "success", "other arguments"),
    ],
)
def test_verdicts(
    report: ta.Report | None,
    unit: ta.campaign.PlannedUnit | None,
    done: bool,
    status: str,
    why: str | None,
) -> None:
    judged = verdict(_state(report), unit)
    assert (judged.done, judged.status) == (done, status)
    if why is None:
        assert judged.reason is None
    else:
        assert judged.reason is not None and why in judged.reason


@pytest.mark.parametrize(
    ("pattern", "hit"),
    [("softmax", True), ("softmax*bfloat16", True), ("dtype=float32", False), ("[n=", True)],
)
def test_filters_match_as_tile_bench_k_does(pattern: str, hit: bool) -> None:
    assert matches("std/softmax[n=8,dtype=bfloat16]", pattern) is hit


def _plan(campaign: str = "c", smoke: bool = False) -> ta.campaign.CampaignPlan:
    return ta.campaign.CampaignPlan(
        producer=ta.Producer(tool_name="tile", tool_version="0"),
        run=ta.RunInfo(
            run_id=ta.new_run_id("campaign"),
            created_at=ta.utc_now(),
            status="dry_run",
            output_directory="/tmp",
        ),
        campaign=campaign,
        smoke=smoke,
        baseline_variant="default",
        budget=ta.campaign.BudgetRecord(estimated_s=0, case_runs=0, over=False),
        estimate_method="-",
    )


def test_one_campaign_run_at_a_time(tmp_path: Path) -> None:
    first, second = CampaignDir(tmp_path / "c", _plan()), CampaignDir(tmp_path / "c", _plan())
    with first.locked():
        with pytest.raises(CliError, match="is in use by pid") as info, second.locked():
            pass
        assert info.value.code == ExitCode.USAGE
    with second.locked():  # released with the first
        pass


def test_a_directory_keeps_its_campaign(tmp_path: Path) -> None:
    camp = CampaignDir(tmp_path / "c", _plan())
    first = _plan().model_copy(update={"run": camp.run_info("dry_run")})
    camp.writer().write_json(ta.campaign.CAMPAIGN_PLAN_JSON, first)
    assert CampaignDir(tmp_path / "c", _plan()).run_id == camp.run_id  # a resume keeps the id
    with pytest.raises(CliError, match=r"holds campaign `c`, not `c` \(smoke\)"):
        CampaignDir(tmp_path / "c", _plan(smoke=True))
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(CliError, match="is not a campaign directory"):
        CampaignDir(tmp_path / "other", _plan())
