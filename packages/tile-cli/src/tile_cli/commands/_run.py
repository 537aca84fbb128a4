"""The commands that run kernels: list, bench, test, tune, build, inspect, snap.

Flags only; the work happens in the modules each command imports when it runs (so that
`tile --help` stays fast and never imports a runner's dependencies).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from tile_cli.commands._options import (
    ASSIGNMENTS,
    AXES,
    CACHE,
    CASES,
    COMPARE,
    EXACT,
    FILTERS,
    FIXED,
    JSON,
    LAUNCH,
    OUTPUT,
    OUTPUT_DIR,
    PLUGINS,
    PROFILE,
    RUNNER,
    SAMPLING,
    SEED,
    SELECT,
    SNAPSHOTS,
    TRACEBACKS,
    TUNABLE,
    TUNING,
    VERBOSE,
    Flags,
    compare_flags,
    config_overrides,
    selection,
    with_flags,
)
from tile_harness import CliError, ExitCode

if TYPE_CHECKING:
    import tile_protocol as tp
    from tile_cli.runs._suite import SuiteFlags

__all__ = [
    "bench_cmd",
    "build_cmd",
    "inspect_cmd",
    "list_cmd",
    "profile_cmd",
    "snap_cmd",
    "test_cmd",
    "tune_cmd",
]


def _suite_flags(flags: Flags) -> SuiteFlags:
    """The flags of a bench, test or build that are not configuration."""
    from tile_cli.runs._suite import SuiteFlags

    return SuiteFlags(
        profile=flags.profile,
        output_dir=flags.output_dir,
        as_json=flags.json,
        verbose=flags.verbose,
        compare=flags.compare,
        against=flags.against,
        slurm_args=flags.slurm_args or [],
        cache_report=flags.cache_report,
        cold_process=flags.cold_process,
    )


def _run_suite(command: tp.Command, flags: Flags, more: Mapping[str, object]) -> NoReturn:
    """Run a bench, test or build with the command's flags; `more` adds configuration."""
    from tile_cli.runs._suite import run_suite

    sel = selection(flags, {**config_overrides(flags), **more})
    raise typer.Exit(run_suite(command, sel, _suite_flags(flags)))


@with_flags(ASSIGNMENTS, SELECT, CASES, PROFILE, JSON)
def list_cmd(flags: Flags) -> None:
    """List the kernels and cases tile can see, without running them."""
    from tile_cli.runs._views import list_cases

    sel = selection(flags, config_overrides(flags))
    code = list_cases(sel, profile=flags.profile, as_json=flags.json)
    raise typer.Exit(code)


@with_flags(ASSIGNMENTS, SELECT, CASES, PROFILE, OUTPUT, VERBOSE, SAMPLING, RUNNER, TUNABLE, LAUNCH,
            COMPARE,
            compare_flags(after_run=True), CACHE, EXACT)  # fmt: skip
def bench_cmd(flags: Flags) -> None:
    """Benchmark kernels against their references; write a run directory."""
    _run_suite("bench", flags, {})


@with_flags(ASSIGNMENTS, SELECT, CASES, PROFILE, OUTPUT, VERBOSE, SEED, RUNNER, TUNABLE, LAUNCH)
def test_cmd(flags: Flags) -> None:
    """Check kernels against their references on fresh random inputs."""
    _run_suite("test", flags, {})


@with_flags(ASSIGNMENTS, SELECT, CASES, PROFILE, OUTPUT_DIR, VERBOSE, TUNING, FIXED)
def tune_cmd(flags: Flags) -> None:
    """Find each case's fastest tunable configuration and keep it in `tuning/<device>.json`.

    Every configuration the kernel's constraint allows is checked against the reference and
    timed briefly; each rung keeps the fastest third and times it longer; the finalists get a
    full measurement, and a winner that cannot be told apart from another finalist gives way
    to the default, then to the simplest. bench, test and library use then run the winner.
    """
    from tile_cli.runs._tune import run_tune

    sel = selection(flags, config_overrides(flags))
    code = run_tune(sel, profile=flags.profile, output_dir=flags.output_dir,
                    budget=flags.budget, dry_run=flags.dry_run,
                    verbose=flags.verbose)  # fmt: skip
    raise typer.Exit(code)


@with_flags(ASSIGNMENTS, SELECT, PROFILE, OUTPUT, TRACEBACKS, RUNNER)
def build_cmd(flags: Flags) -> None:
    """Lower and compile every case (no execution); store what the compiler made in a run dir."""
    _run_suite("build", flags, {})


@with_flags(ASSIGNMENTS, SELECT, PROFILE, OUTPUT_DIR, TRACEBACKS, RUNNER, TUNABLE, EXACT)
def profile_cmd(
    flags: Flags,
    ncu: Annotated[
        bool, typer.Option("--ncu", help="Profile the case's kernels with Nsight Compute (`ncu`).")
    ] = False,
    trace: Annotated[
        bool, typer.Option("--trace", help="Record a JAX profiler trace (Perfetto) of the calls.")
    ] = False,
    calls: Annotated[
        int,
        typer.Option("--calls", min=1, max=100, help="Calls traced per case (--ncu profiles one)."),
    ] = 3,
    ncu_kernels: Annotated[
        str | None,
        typer.Option(
            "--ncu-kernel",
            metavar="REGEX",
            help="With --ncu: only the kernels whose names match REGEX.",
        ),
    ] = None,
) -> None:
    """Profile a few selected cases (at most 4): their HLO and sources, a JAX trace (`--trace`),
    Nsight Compute's metrics per kernel (`--ncu`); all in a run directory."""
    from tile_cli.runs._profile import ProfileFlags, run_profile

    sel = selection(flags, config_overrides(flags))
    wanted = ProfileFlags(ncu=ncu, trace=trace, calls=calls, ncu_kernels=ncu_kernels,
                          profile=flags.profile, output_dir=flags.output_dir,
                          verbose=flags.verbose)  # fmt: skip
    raise typer.Exit(run_profile(sel, wanted))


@with_flags(AXES, PLUGINS, PROFILE, TRACEBACKS)
def inspect_cmd(
    flags: Flags,
    case: Annotated[
        str | None, typer.Argument(help="Case id, exactly as `tile list` prints it.")
    ] = None,
    kind: Annotated[
        str, typer.Option("--kind", help="jaxpr | stablehlo | hlo | cost | memory | all.")
    ] = "stablehlo",
    list_kinds: Annotated[
        bool, typer.Option("--list-kinds", help="Print the kinds of view and exit.")
    ] = False,
) -> None:
    """Print one case's jaxpr, StableHLO, optimized HLO, cost or memory analysis."""
    import tile_protocol as tp
    from tile_cli.runs._views import inspect_case

    if list_kinds:
        typer.echo("\n".join([*tp.INSPECT_KINDS, "all"]))
        raise typer.Exit(ExitCode.OK)
    if case is None:
        raise CliError(
            "missing the case id", hint="run `tile list` and pass one id: `tile inspect ID`"
        )
    code = inspect_case(case, kind, selection(flags, {}), profile=flags.profile,
                        verbose=flags.verbose)  # fmt: skip
    raise typer.Exit(code)


@with_flags(FILTERS, PLUGINS, PROFILE, SNAPSHOTS)
def snap_cmd(flags: Flags) -> None:
    """Snapshot each case's normalized StableHLO; `--check` diffs it, `--update` accepts it."""
    from tile_cli.runs._snap import snap

    check, update = flags.check, flags.update
    if check and update:
        raise CliError("--check and --update exclude each other", hint="pick one")
    mode = "check" if check else "update" if update else "record"
    sel = selection(flags, {})
    raise typer.Exit(snap(sel, profile=flags.profile, mode=mode, directory=flags.directory))
