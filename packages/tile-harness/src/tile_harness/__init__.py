"""tile-harness: the host side of tile as a library, the same behind every door.

The `tile` command, the tile-pytest plugin and a Python program plan a suite, resolve each
case's configuration, start and supervise runner processes, record run directories, judge
comparisons and decide a run's outcome through this package; tile-cli adds only the commands
and the terminal. Namespaces: `tile_harness.campaign` (campaign plans, directories, reports),
`tile_harness.tune` (tune's decisions and tuning files), `tile_harness.signals` (Ctrl-C and
SIGTERM handling shared by every long-running call).

Names are imported on first use (PEP 562), so importing the package costs nothing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tile_harness import campaign, signals, tune
    from tile_harness._against import Against
    from tile_harness._api import RunDone, bench, run
    from tile_harness._ask import ask
    from tile_harness._calibration import calibration_dir
    from tile_harness._captured import load_cases, save_cases, with_cases
    from tile_harness._cold_process import ColdWarmRun, ProcessWatch
    from tile_harness._compare import (
        CompareSettings,
        compare_paths,
        device_slug,
        load_side,
        pick_baseline,
        save_baseline,
    )
    from tile_harness._convert import cache_event_record, case_from_bench, case_from_test
    from tile_harness._display import Display, QuietDisplay
    from tile_harness._errors import (
        CliError,
        ExitCode,
        exit_codes_help,
        no_cases,
        os_error,
        os_failure,
        refuse_run_directory,
        stopped_code,
        usage_failure,
        write_atomically,
    )
    from tile_harness._escape import CONTROLS, escape_controls
    from tile_harness._hints import failure_hints
    from tile_harness._jax_cache import cache_clear, cache_info, snapshot
    from tile_harness._nomatch import close_names, no_match, nothing_matched
    from tile_harness._outcome import (
        Finished,
        Outcome,
        comparison_outcome,
        judge_paths,
        outcome_hint,
        split_failures,
    )
    from tile_harness._plausible import (
        CPU_NO_PEAKS,
        CPU_PEAKS_HINT,
        beyond_roof,
        calibration_excesses,
    )
    from tile_harness._process import LaunchCounter
    from tile_harness._processes import ProcessSeries, one_process_only
    from tile_harness._profile import (
        NCU_METRICS,
        PROFILE_LIMIT,
        NcuKernel,
        find_ncu,
        metric_names,
        ncu_case,
        parse_ncu_csv,
    )
    from tile_harness._record import RunRecorder, launch_id, open_run, recording
    from tile_harness._report import RunSetup, case_counts, cases_status, device_record
    from tile_harness._requests import (
        bench_settings,
        build_request,
        derive,
        tuning_files,
        user_tuning_files,
    )
    from tile_harness._results import RunResults
    from tile_harness._runners import make_session
    from tile_harness._settings import (
        CacheLocation,
        Selection,
        compile_cache_dir,
        compile_cache_location,
        describe_origin,
        parse_assignments,
        parse_sets,
        parse_tunables,
        resolve_config,
    )
    from tile_harness._shards import ShardedRun, check_slurm, previous_costs
    from tile_harness._sinks import NullSink, Relay, Sink
    from tile_harness._suite import Stoppable, Suite
    from tile_harness._undone import declined, is_undone, settle, undone_lines

__all__ = [
    "RunDone",
    "bench",
    "run",
    "cache_event_record",
    "case_from_bench",
    "case_from_test",
    "CONTROLS",
    "CPU_NO_PEAKS",
    "CPU_PEAKS_HINT",
    "Against",
    "CacheLocation",
    "CliError",
    "ColdWarmRun",
    "CompareSettings",
    "Display",
    "ExitCode",
    "LaunchCounter",
    "NullSink",
    "Outcome",
    "ProcessWatch",
    "QuietDisplay",
    "Relay",
    "Finished",
    "RunRecorder",
    "RunResults",
    "RunSetup",
    "case_counts",
    "cases_status",
    "device_record",
    "Selection",
    "ShardedRun",
    "ProcessSeries",
    "one_process_only",
    "load_cases",
    "save_cases",
    "with_cases",
    "Sink",
    "Stoppable",
    "Suite",
    "ask",
    "bench_settings",
    "beyond_roof",
    "build_request",
    "cache_clear",
    "cache_info",
    "calibration_dir",
    "calibration_excesses",
    "campaign",
    "check_slurm",
    "compare_paths",
    "comparison_outcome",
    "judge_paths",
    "compile_cache_dir",
    "compile_cache_location",
    "derive",
    "describe_origin",
    "device_slug",
    "close_names",
    "escape_controls",
    "exit_codes_help",
    "failure_hints",
    "declined",
    "is_undone",
    "launch_id",
    "load_side",
    "make_session",
    "no_cases",
    "no_match",
    "nothing_matched",
    "open_run",
    "os_error",
    "os_failure",
    "outcome_hint",
    "parse_assignments",
    "parse_sets",
    "parse_tunables",
    "pick_baseline",
    "previous_costs",
    "recording",
    "resolve_config",
    "refuse_run_directory",
    "save_baseline",
    "settle",
    "signals",
    "snapshot",
    "split_failures",
    "stopped_code",
    "tune",
    "tuning_files",
    "user_tuning_files",
    "undone_lines",
    "usage_failure",
    "write_atomically",
    "NCU_METRICS",
    "PROFILE_LIMIT",
    "NcuKernel",
    "find_ncu",
    "metric_names",
    "ncu_case",
    "parse_ncu_csv",
]

_HOME: dict[str, str] = {
    "NCU_METRICS": "tile_harness._profile",
    "PROFILE_LIMIT": "tile_harness._profile",
    "NcuKernel": "tile_harness._profile",
    "find_ncu": "tile_harness._profile",
    "metric_names": "tile_harness._profile",
    "ncu_case": "tile_harness._profile",
    "parse_ncu_csv": "tile_harness._profile",
    "RunDone": "tile_harness._api",
    "bench": "tile_harness._api",
    "run": "tile_harness._api",
    "cache_event_record": "tile_harness._convert",
    "case_from_bench": "tile_harness._convert",
    "case_from_test": "tile_harness._convert",
    "CONTROLS": "tile_harness._escape",
    "CPU_NO_PEAKS": "tile_harness._plausible",
    "CPU_PEAKS_HINT": "tile_harness._plausible",
    "CacheLocation": "tile_harness._settings",
    "CliError": "tile_harness._errors",
    "ColdWarmRun": "tile_harness._cold_process",
    "CompareSettings": "tile_harness._compare",
    "Display": "tile_harness._display",
    "ExitCode": "tile_harness._errors",
    "LaunchCounter": "tile_harness._process",
    "Against": "tile_harness._against",
    "NullSink": "tile_harness._sinks",
    "Outcome": "tile_harness._outcome",
    "ProcessWatch": "tile_harness._cold_process",
    "QuietDisplay": "tile_harness._display",
    "Relay": "tile_harness._sinks",
    "Finished": "tile_harness._outcome",
    "RunRecorder": "tile_harness._record",
    "RunResults": "tile_harness._results",
    "RunSetup": "tile_harness._report",
    "case_counts": "tile_harness._report",
    "cases_status": "tile_harness._report",
    "device_record": "tile_harness._report",
    "Selection": "tile_harness._settings",
    "ShardedRun": "tile_harness._shards",
    "ProcessSeries": "tile_harness._processes",
    "one_process_only": "tile_harness._processes",
    "Sink": "tile_harness._sinks",
    "Stoppable": "tile_harness._suite",
    "Suite": "tile_harness._suite",
    "ask": "tile_harness._ask",
    "bench_settings": "tile_harness._requests",
    "beyond_roof": "tile_harness._plausible",
    "build_request": "tile_harness._requests",
    "cache_clear": "tile_harness._jax_cache",
    "cache_info": "tile_harness._jax_cache",
    "calibration_dir": "tile_harness._calibration",
    "calibration_excesses": "tile_harness._plausible",
    "campaign": "tile_harness.campaign",
    "check_slurm": "tile_harness._shards",
    "compare_paths": "tile_harness._compare",
    "judge_paths": "tile_harness._outcome",
    "comparison_outcome": "tile_harness._outcome",
    "compile_cache_dir": "tile_harness._settings",
    "compile_cache_location": "tile_harness._settings",
    "derive": "tile_harness._requests",
    "describe_origin": "tile_harness._settings",
    "device_slug": "tile_harness._compare",
    "close_names": "tile_harness._nomatch",
    "escape_controls": "tile_harness._escape",
    "exit_codes_help": "tile_harness._errors",
    "failure_hints": "tile_harness._hints",
    "declined": "tile_harness._undone",
    "is_undone": "tile_harness._undone",
    "launch_id": "tile_harness._record",
    "load_side": "tile_harness._compare",
    "make_session": "tile_harness._runners",
    "no_cases": "tile_harness._errors",
    "no_match": "tile_harness._nomatch",
    "nothing_matched": "tile_harness._nomatch",
    "open_run": "tile_harness._record",
    "os_error": "tile_harness._errors",
    "os_failure": "tile_harness._errors",
    "outcome_hint": "tile_harness._outcome",
    "parse_assignments": "tile_harness._settings",
    "parse_sets": "tile_harness._settings",
    "parse_tunables": "tile_harness._settings",
    "pick_baseline": "tile_harness._compare",
    "previous_costs": "tile_harness._shards",
    "recording": "tile_harness._record",
    "resolve_config": "tile_harness._settings",
    "refuse_run_directory": "tile_harness._errors",
    "save_baseline": "tile_harness._compare",
    "settle": "tile_harness._undone",
    "signals": "tile_harness.signals",
    "snapshot": "tile_harness._jax_cache",
    "split_failures": "tile_harness._outcome",
    "stopped_code": "tile_harness._errors",
    "tune": "tile_harness.tune",
    "tuning_files": "tile_harness._requests",
    "user_tuning_files": "tile_harness._requests",
    "with_cases": "tile_harness._captured",
    "load_cases": "tile_harness._captured",
    "save_cases": "tile_harness._captured",
    "undone_lines": "tile_harness._undone",
    "usage_failure": "tile_harness._errors",
    "write_atomically": "tile_harness._errors",
}
"""Where each public name is defined."""


def __getattr__(name: str) -> object:
    """Import a public name's module on first use: `tile --help` must not pay for all of them."""
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = importlib.import_module(module)
    if not module.endswith(f".{name}"):
        value = getattr(value, name)
    globals()[name] = value
    return value
