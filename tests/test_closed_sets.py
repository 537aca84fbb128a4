"""The closed sets that cross package boundaries agree.

tile-config and tile-artifacts do not import tile-protocol (each depends on pydantic and
little else, and is versioned on its own), so their sets are copies of the protocol's. A value
added to one set and not to the others would pass one layer and fail the next: a timer the
config accepts that no runner sends, a case status the report cannot hold.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, get_args

import pytest

import tile_artifacts as ta
import tile_config as tc
import tile_downloads as td
import tile_protocol as tp
from tile_artifacts import _models as ta_models
from tile_cli.commands import _options as cli_options


def _values(literal: Any) -> set[str]:
    return set(get_args(literal))


def _field(model: Any, name: str) -> set[str]:
    """The values of an Optional Literal field of a pydantic model."""
    (literal,) = [a for a in get_args(model.model_fields[name].annotation) if a is not type(None)]
    return _values(literal)


@pytest.mark.parametrize(
    ("left", "right"),
    [
        # What the configuration may ask for is what a request may carry.
        (tc.Timer, tp.Timer),
        (tc.KernelMode, tp.ModeChoice),
        # What a report records is what a runner measured with.
        (ta.Timer, tp.MeasuredTimer),
        (ta.Bound, tp.Bound),
        (ta.WorkSource, tp.WorkSource),
        (ta.Level, tp.LogLevel),
        (ta.StopReason, tp.StopReason),
        # What `diagnostics/jax_cache.json` holds is what a runner's `cache_event` said.
        (ta.cache.CacheEventKind, tp.CacheEventKind),
        (ta.cache.CacheMissCode, tp.CacheMissCode),
        # `[compare] basis` is the comparison's setting.
        (tc.CompareBasis, ta.compare.BasisSetting),
        # `[downloads.<name>] archive` is what the downloader unpacks.
        (tc.ArchiveKind, td.ArchiveKind),
        # The words `--timer`, `--launcher` and `--basis` take are the configuration's.
        (cli_options.TimerChoice, tc.Timer),
        (cli_options.LauncherChoice, tc.LauncherKind),
        (cli_options.BasisChoice, tc.CompareBasis),
    ],
    ids=str,
)
def test_sets_shared_by_two_packages_are_equal(left: Any, right: Any) -> None:
    assert _values(left) == _values(right)


def test_a_request_may_ask_for_auto_and_every_measured_timer() -> None:
    assert _values(tp.Timer) == {"auto"} | _values(tp.MeasuredTimer)


def test_every_case_status_of_the_protocol_is_a_status_of_the_format() -> None:
    assert _values(tp.CaseStatus) <= set(ta.STATUSES)


def test_records_hold_the_protocol_sets_for_what_a_runner_said() -> None:
    assert _field(ta_models.StatsRecord, "stop_reason") == _values(tp.StopReason)
    config_source = ta_models.ConfigRecord.model_fields["source"].annotation
    assert _values(config_source) == _values(tp.ConfigSource)
    assert _field(ta_models.CaseRecord, "timer") == _values(tp.MeasuredTimer)


def test_usage_error_types_are_the_names_the_runner_sends() -> None:
    # AxisValueError is sent under its exception class's name; the others by constant.
    from tile_runner._capture import CAPTURE_IMPORT, CAPTURE_NONE, CAPTURE_TRACE
    from tile_runner._errors import AxisValueError
    from tile_runner._plan import TUNABLE_VALUE, UNKNOWN_AXIS, UNKNOWN_TUNABLE

    sent = {AxisValueError.__name__, UNKNOWN_AXIS, UNKNOWN_TUNABLE, TUNABLE_VALUE}
    sent |= {CAPTURE_IMPORT, CAPTURE_TRACE, CAPTURE_NONE}
    assert sent == set(tp.USAGE_ERROR_TYPES)


def test_one_set_of_bench_defaults_behind_every_door() -> None:
    # tile.toml's defaults, what a request carries when nothing is set, and what a direct
    # `tile_runner.measure` call samples with (its `warmup` is `warmup_runs`).
    import inspect

    import tile_harness
    import tile_runner

    config = tc.BenchConfig()
    wire = tp.BenchSettings()
    direct = {
        ("warmup_runs" if name == "warmup" else name): p.default
        for name, p in inspect.signature(tile_runner.measure).parameters.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    }
    for name in tp.BenchSettings.__struct_fields__:
        if name == "cache_bytes":  # `[machine] l2_bytes`, not a `[bench]` key
            continue
        if name == "processes":  # on the wire 1 (this runner alone) unless a series of runner
            # processes sets the key's value (`tile_harness._processes`), which a run
            # of one process cannot mean, nor a direct call
            assert (config.processes, wire.processes) == (0, 1)
            continue
        if name in ("target_precision", "cpu_target_precision"):  # tile.toml's 0 is the
            # backend's target: a request carries both, a direct call resolves it on its own
            assert config.target_precision == direct["target_precision"] == 0
            sent = tile_harness.bench_settings(tc.TileConfig())
            for backend in ("cpu", "gpu"):
                assert sent.target_on(backend) == tp.precision_on(0, backend), backend
            assert (wire.target_precision, wire.cpu_target_precision) == (0.01, None)
            continue
        assert getattr(config, name) == getattr(wire, name), name
        if name != "rounds":  # a direct call is one round
            assert direct[name] == getattr(wire, name), name


def test_exit_codes_are_one_list_in_the_help_and_the_docs() -> None:
    # `tile --help` is made from ExitCode; docs/cli.md's table must name the same codes, and
    # 4's line must say all it means (issue 40: the help said "inconclusive" alone).
    from tile_cli._app import app
    from tile_harness import ExitCode

    help_text = " ".join((app.info.help or "").split())
    for code in ExitCode:
        assert f"{int(code)} {code.meaning}" in help_text
    assert "without a baseline" in ExitCode.INCONCLUSIVE.meaning
    docs = (Path(__file__).parents[1] / "docs" / "cli.md").read_text()
    table = docs[docs.index("## Exit codes") :].split("\n\n")[2]
    rows = [line.split("|")[1] for line in table.splitlines()[2:]]
    documented = {int(n) for row in rows for n in re.findall(r"\d+", row)}
    assert documented == {int(code) for code in ExitCode}
