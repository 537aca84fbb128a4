"""The `tile` command line: commands and their flags. Work happens in the other modules."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tile_cli._errors import ExitCode

__all__ = ["app"]

app = typer.Typer(
    name="tile",
    help="Benchmark, test and inspect JAX kernels (jax.numpy and Pallas).\n\n"
    "Exit codes: 0 ok · 1 failed check or regression · 2 usage/config error · "
    "3 runner crash, timeout or infrastructure error (partial results kept) · "
    "4 inconclusive comparison (with --fail-on-inconclusive) · 130 interrupted.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
protocol_app = typer.Typer(help="The runner wire protocol.", no_args_is_help=True)
app.add_typer(protocol_app, name="protocol")
campaign_app = typer.Typer(
    help="Campaigns: saved, budgeted, resumable benchmark plans over kernels, variants and "
    "machines (`campaigns/NAME.toml`, docs/campaigns.md).",
    no_args_is_help=True,
)
app.add_typer(campaign_app, name="campaign")


def _print_versions(value: bool) -> None:
    if value:
        from tile_cli._versions import version_lines

        typer.echo("\n".join(version_lines()))
        raise typer.Exit(ExitCode.OK)


@app.callback()
def _tile(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_versions,
            is_eager=True,
            help="Print the version of every tile package, the protocol and Python; exit.",
        ),
    ] = False,
) -> None:
    """Benchmark, test and inspect JAX kernels (jax.numpy and Pallas)."""


# ---------------------------------------------------------------- shared options

Filter = Annotated[
    list[str] | None,
    typer.Option("-k", "--filter", help="Substring or glob on case ids; repeat to widen."),
]
Kernel = Annotated[
    list[str] | None, typer.Option("--kernel", help="Kernel name or glob; repeatable.")
]
Axis = Annotated[
    list[str] | None,
    typer.Option("-a", "--axis", help="Override an axis: `-a dtype=float32,bfloat16`."),
]
Plugin = Annotated[
    list[str] | None,
    typer.Option("--plugin", help="Include a kernel plugin (entry point in `tile.kernels`)."),
]
Profile = Annotated[
    str | None,
    typer.Option(
        "--profile",
        help="Apply `[profiles.NAME]` from tile.toml; repeat (or `A,B`) to lay several on in "
        "order, later ones winning.",
    ),
]
OutputDir = Annotated[
    Path | None,
    typer.Option("--output-dir", "-o", help="Run directory (default `.tile/runs/<run_id>`)."),
]
Json = Annotated[bool, typer.Option("--json", help="Stream machine-readable JSON Lines.")]
Basis = Annotated[
    str | None,
    typer.Option(
        "--basis",
        help="auto | absolute | relative: judge times, or times relative to the reference "
        "timed interleaved (auto: relative where both runs have it). Default `[compare] basis`.",
    ),
]
AllowMissing = Annotated[
    bool | None,
    typer.Option(
        "--allow-missing/--no-allow-missing",
        help="Pass although some cases are in one run only (a new kernel, a case left out); "
        "by default they exit 4, like every case that could not be judged.",
    ),
]
Verbose = Annotated[
    int,
    typer.Option(
        "-v",
        "--verbose",
        count=True,
        help="-v samples, stop reason and where each case's time went; -vv more.",
    ),
]
CaseTimeout = Annotated[
    float | None,
    typer.Option("--case-timeout", help="Seconds of runner silence before a case is timed out."),
]
Isolate = Annotated[
    bool | None, typer.Option("--isolate/--no-isolate", help="One runner process per case.")
]
CompileCache = Annotated[
    bool | None,
    typer.Option(
        "--compile-cache/--no-compile-cache",
        help="Use JAX's persistent compilation cache (`[runner] compile_cache`, on by default).",
    ),
]
Tunable = Annotated[
    list[str] | None,
    typer.Option(
        "--tunable",
        help="Run with this tunable value instead of the tuned or default one: "
        "`--tunable block_rows=4`; repeatable.",
    ),
]
Launcher = Annotated[
    str | None,
    typer.Option("--launcher", help="Where runners start: local | slurm (`[launcher] kind`)."),
]
Shards = Annotated[
    int | None,
    typer.Option("--shards", help="Split the cases over N runners, one GPU each."),
]
SlurmArgs = Annotated[
    list[str] | None,
    typer.Option("--slurm-arg", help="Extra srun argument, e.g. `--slurm-arg=--qos=high`."),
]
CaseIds = Annotated[
    list[str] | None,
    typer.Option("--case", help="Run exactly this case id (repeatable), as `tile list` prints it."),
]
Assignments = Annotated[
    list[str] | None,
    typer.Argument(
        help="Config overrides `SECTION.KEY=VALUE`, read like TILE_* variables: "
        "`bench.max_time=0.2 runner.pin_cpu=true`.",
        show_default=False,
        metavar="[KEY=VALUE]...",
    ),
]
Settings = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        help="Set any config key for this run: `--set bench.batch=20`, "
        "`--set runner.env.XLA_FLAGS=...` (repeatable; the other flags win).",
    ),
]


def _selection(
    filters: list[str] | None,
    kernels: list[str] | None,
    axes: list[str] | None,
    plugins: list[str] | None,
    overrides: dict[str, object],
    tunables: list[str] | None = None,
):
    from tile_cli._settings import Selection

    return Selection(
        filters=filters or [],
        kernels=kernels or [],
        axes=axes or [],
        plugins=plugins or [],
        overrides=overrides,
        tunables=tunables or [],
    )


# ---------------------------------------------------------------- commands


@app.command("list")
def list_cmd(
    assignments: Assignments = None,
    filters: Filter = None,
    kernels: Kernel = None,
    axes: Axis = None,
    plugins: Plugin = None,
    profile: Profile = None,
    json: Json = False,
) -> None:
    """List the kernels and cases tile can see, without running them."""
    from tile_cli._run import list_cases
    from tile_cli._settings import parse_assignments

    sel = _selection(filters, kernels, axes, plugins, parse_assignments(assignments))
    raise typer.Exit(list_cases(sel, profile=profile, as_json=json))


@app.command("bench")
def bench_cmd(
    assignments: Assignments = None,
    filters: Filter = None,
    kernels: Kernel = None,
    axes: Axis = None,
    plugins: Plugin = None,
    profile: Profile = None,
    output_dir: OutputDir = None,
    json: Json = False,
    verbose: Verbose = 0,
    timer: Annotated[
        str | None, typer.Option("--timer", help="auto | cupti | wall | batched.")
    ] = None,
    cold: Annotated[
        bool | None, typer.Option("--cold/--warm", help="Flush L2 before every sample.")
    ] = None,
    warmup: Annotated[int | None, typer.Option("--warmup", help="Warm-up calls.")] = None,
    min_runs: Annotated[int | None, typer.Option("--min-runs")] = None,
    max_runs: Annotated[int | None, typer.Option("--max-runs")] = None,
    max_time: Annotated[
        float | None, typer.Option("--max-time", help="Sampling budget per case, seconds.")
    ] = None,
    target_precision: Annotated[
        float | None,
        typer.Option(
            "--target-precision",
            help="Stop when the 95% CI half-width of the median "
            "is below this fraction (0.01 = 1%).",
        ),
    ] = None,
    rounds: Annotated[
        int | None,
        typer.Option(
            "--rounds",
            help="Time every case in N rounds over the whole run, fresh inputs each round; "
            "compare then judges the spread between rounds (use 5+ to gate on a noisy CPU).",
        ),
    ] = None,
    case_timeout: CaseTimeout = None,
    isolate: Isolate = None,
    compile_cache: CompileCache = None,
    tunable: Tunable = None,
    launcher: Launcher = None,
    shards: Shards = None,
    slurm_args: SlurmArgs = None,
    compare: Annotated[
        Path | None,
        typer.Option(
            "--compare", help="Compare with a baseline (file, or directory of baselines)."
        ),
    ] = None,
    noise_floor: Annotated[
        float | None,
        typer.Option(
            "--noise-floor",
            help="With --compare: changes within ±this percent are neutral (default 2).",
        ),
    ] = None,
    alpha: Annotated[
        float | None,
        typer.Option("--alpha", help="With --compare: significance level (default 0.05)."),
    ] = None,
    fail_on_inconclusive: Annotated[
        bool | None,
        typer.Option(
            "--fail-on-inconclusive/--no-fail-on-inconclusive",
            help="With --compare: exit 4 when a case is inconclusive.",
        ),
    ] = None,
    basis: Basis = None,
    allow_missing: AllowMissing = None,
    cache_report: Annotated[
        bool,
        typer.Option(
            "--cache-report",
            help="Record JAX's compilation cache before and after the run, and why each "
            "compile missed it, in diagnostics/jax_cache.json.",
        ),
    ] = False,
    cold_process: Annotated[
        bool,
        typer.Option(
            "--cold-process",
            help="With --cache-report: run the cases in two fresh runners, first on an empty "
            "cache, then on the filled one; report time to first result and compile saved.",
        ),
    ] = False,
    case_ids: CaseIds = None,
    settings: Settings = None,
) -> None:
    """Benchmark kernels against their references; write a run directory."""
    import dataclasses

    from tile_cli._run import run_suite
    from tile_cli._settings import given, parse_assignments, parse_sets

    overrides = (
        parse_sets(settings or [])
        | parse_assignments(assignments)
        | given(
            {
                "bench.timer": timer,
                "bench.cold": cold,
                "bench.warmup_runs": warmup,
                "bench.min_runs": min_runs,
                "bench.max_runs": max_runs,
                "bench.max_time": max_time,
                "bench.target_precision": target_precision,
                "bench.rounds": rounds,
                "runner.case_timeout": case_timeout,
                "runner.isolate": isolate,
                "runner.compile_cache": compile_cache,
                "launcher.kind": launcher,
                "launcher.shards": shards,
                "compare.noise_floor": noise_floor,
                "compare.alpha": alpha,
                "compare.fail_on_inconclusive": fail_on_inconclusive,
                "compare.basis": basis,
                "compare.allow_missing": allow_missing,
            }
        )
    )
    if cache_report or cold_process:
        from tile_cli._cache_report import EXPLAIN_OVERRIDES

        overrides.update(EXPLAIN_OVERRIDES)
    sel = _selection(filters, kernels, axes, plugins, overrides, tunable)
    if case_ids:
        sel = dataclasses.replace(sel, case_ids=case_ids)
    raise typer.Exit(
        run_suite(
            "bench",
            sel,
            profile=profile,
            output_dir=output_dir,
            as_json=json,
            verbose=verbose,
            compare=compare,
            slurm_args=slurm_args or [],
            cache_report=cache_report,
            cold_process=cold_process,
        )
    )


@app.command("test")
def test_cmd(
    assignments: Assignments = None,
    filters: Filter = None,
    kernels: Kernel = None,
    axes: Axis = None,
    plugins: Plugin = None,
    profile: Profile = None,
    output_dir: OutputDir = None,
    json: Json = False,
    verbose: Verbose = 0,
    seed: Annotated[int | None, typer.Option("--seed", help="Seed for the random inputs.")] = None,
    case_timeout: CaseTimeout = None,
    isolate: Isolate = None,
    compile_cache: CompileCache = None,
    tunable: Tunable = None,
    launcher: Launcher = None,
    shards: Shards = None,
    slurm_args: SlurmArgs = None,
) -> None:
    """Check kernels against their references on fresh random inputs."""
    from tile_cli._run import run_suite
    from tile_cli._settings import given, parse_assignments

    overrides = parse_assignments(assignments) | given(
        {
            "test.seed": seed,
            "runner.case_timeout": case_timeout,
            "runner.isolate": isolate,
            "runner.compile_cache": compile_cache,
            "launcher.kind": launcher,
            "launcher.shards": shards,
        }
    )
    sel = _selection(filters, kernels, axes, plugins, overrides, tunable)
    raise typer.Exit(
        run_suite(
            "test",
            sel,
            profile=profile,
            output_dir=output_dir,
            as_json=json,
            verbose=verbose,
            slurm_args=slurm_args or [],
        )
    )


@app.command("tune")
def tune_cmd(
    assignments: Assignments = None,
    filters: Filter = None,
    kernels: Kernel = None,
    axes: Axis = None,
    plugins: Plugin = None,
    profile: Profile = None,
    output_dir: OutputDir = None,
    verbose: Verbose = 0,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Print the configurations and the estimated time only."),
    ] = False,
    budget: Annotated[
        float | None,
        typer.Option("--budget", help="Seconds the tune may take; rungs get shorter to fit."),
    ] = None,
    eta: Annotated[
        int | None, typer.Option("--eta", help="Each rung keeps the fastest 1/ETA (default 3).")
    ] = None,
) -> None:
    """Find each case's fastest tunable configuration and keep it in `tuning/<device>.json`.

    Every configuration the kernel's constraint allows is checked against the reference and
    timed briefly; each rung keeps the fastest third and times it longer; the finalists get a
    full measurement, and a winner that cannot be told apart from another finalist gives way
    to the default, then to the simplest. bench, test and library use then run the winner.
    """
    from tile_cli._settings import given, parse_assignments
    from tile_cli._tune import run_tune

    overrides = parse_assignments(assignments) | given({"tune.eta": eta})
    sel = _selection(filters, kernels, axes, plugins, overrides)
    raise typer.Exit(
        run_tune(
            sel,
            profile=profile,
            output_dir=output_dir,
            budget=budget,
            dry_run=dry_run,
            verbose=verbose,
        )
    )


@app.command("config")
def config_cmd(
    assignments: Assignments = None,
    profile: Profile = None,
    json: Json = False,
) -> None:
    """Show the resolved configuration and where every value comes from."""
    from tile_cli._settings import parse_assignments
    from tile_cli._show_config import show_config

    overrides = parse_assignments(assignments)
    raise typer.Exit(show_config(profile=profile, as_json=json, overrides=overrides))


@protocol_app.command("schema")
def protocol_schema() -> None:
    """Print the JSON Schema of every protocol message."""
    import json as _json

    import tile_protocol

    typer.echo(_json.dumps(tile_protocol.json_schema(), indent=2, sort_keys=True))
    raise typer.Exit(ExitCode.OK)


baseline_app = typer.Typer(
    help="Baselines: compact, committable copies of a run.", no_args_is_help=True
)
app.add_typer(baseline_app, name="baseline")


@app.command("compare")
def compare_cmd(
    base: Annotated[
        Path, typer.Argument(help="Baseline: run directory, report.json or baseline file.")
    ],
    cur: Annotated[
        Path, typer.Argument(help="Current: run directory, report.json or baseline file.")
    ],
    fmt: Annotated[str, typer.Option("--format", help="table | markdown | json.")] = "table",
    noise_floor: Annotated[
        float | None,
        typer.Option("--noise-floor", help="Changes within ±this percent are neutral (default 2)."),
    ] = None,
    alpha: Annotated[
        float | None, typer.Option("--alpha", help="Significance level (default 0.05).")
    ] = None,
    fail_on_inconclusive: Annotated[
        bool | None,
        typer.Option(
            "--fail-on-inconclusive/--no-fail-on-inconclusive",
            help="Exit 4 when a case is inconclusive.",
        ),
    ] = None,
    basis: Basis = None,
    allow_missing: AllowMissing = None,
    profile: Profile = None,
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Where to write the comparison document.")
    ] = Path("comparisons.json"),
) -> None:
    """Compare two runs case by case: ratio of medians, bootstrap CI, Mann-Whitney p.

    Defaults come from `[compare]` in tile.toml (and `TILE_COMPARE_*`); flags win.
    """
    import tile_artifacts as ta
    from tile_cli._compare import compare_paths, render_comparison
    from tile_cli._errors import CliError
    from tile_cli._escape import escape_controls
    from tile_cli._outcome import comparison_outcome, say_outcome
    from tile_cli._settings import given, load
    from tile_cli._ui import make_consoles

    if fmt not in ("table", "markdown", "json"):
        raise CliError(f"unknown format `{fmt}`", hint="use --format table, markdown or json")
    cfg = load(
        profile,
        given(
            {
                "compare.noise_floor": noise_floor,
                "compare.alpha": alpha,
                "compare.fail_on_inconclusive": fail_on_inconclusive,
                "compare.basis": basis,
                "compare.allow_missing": allow_missing,
            }
        ),
    ).config.compare
    out, err = make_consoles()
    doc = compare_paths(
        base, cur, noise_floor_pct=cfg.noise_floor, alpha=cfg.alpha, basis=cfg.basis
    )
    tmp = output.with_name(output.name + ".tmp")
    tmp.write_text(doc.model_dump_json(indent=2) + "\n")
    tmp.replace(output)
    if fmt == "markdown":
        print(escape_controls(ta.render_comparison_markdown(doc)))
    elif fmt == "json":
        print(doc.model_dump_json(indent=2))
    else:
        render_comparison(doc, out, plain=not out.is_terminal)
        err.print(f"wrote {output}", style="dim", markup=False)
    outcome = comparison_outcome(
        doc, fail_on_inconclusive=cfg.fail_on_inconclusive, allow_missing=cfg.allow_missing
    )
    say_outcome(err, outcome)
    raise typer.Exit(outcome.code)


@baseline_app.command("save")
def baseline_save(
    runs: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Run directories or report.json files (default: the latest run). Several runs "
            "of the same code are pooled: compare then judges each case against how far it "
            "moved between them.",
            show_default=False,
        ),
    ] = None,
    directory: Annotated[
        Path, typer.Option("--dir", help="Where baselines live; one file per device.")
    ] = Path("baselines"),
    label: Annotated[str | None, typer.Option("--label", help="A name for this baseline.")] = None,
) -> None:
    """Save a run (or pool several) as `baselines/<device>.json` for `tile bench --compare`.

    Says which run it took (`.tile/latest` is the newest run, `-o DIR` runs included) and
    refuses one without bench samples (a `tile test` or `tile build` run).
    """
    from tile_cli._compare import save_baseline
    from tile_cli._ui import make_consoles

    _, err = make_consoles()
    target = save_baseline(runs or [Path(".tile/latest")], directory, label, err=err)
    typer.echo(str(target))
    raise typer.Exit(ExitCode.OK)


@app.command("schema-check")
def schema_check_cmd(
    path: Annotated[Path, typer.Argument(help="A run directory or one artifact file.")] = Path(
        ".tile/latest"
    ),
) -> None:
    """Validate a run directory (or one file) against Artifact Format v1."""
    import tile_artifacts as ta
    from tile_cli._errors import CliError
    from tile_cli._escape import escape_controls

    try:
        problems = ta.check_path(path)
    except ta.ArtifactError as exc:
        raise CliError(exc.message, hint=exc.hint, code=ExitCode.USAGE) from None
    for problem in problems:
        typer.echo(escape_controls(str(problem)))
    if problems:
        typer.echo(f"{len(problems)} problem(s) in {path}", err=True)
        raise typer.Exit(ExitCode.FAILED)
    typer.echo(f"ok: {path}", err=True)
    raise typer.Exit(ExitCode.OK)


@app.command("fetch")
def fetch_cmd(
    names: Annotated[
        list[str] | None, typer.Argument(help="Entries of [downloads] to fetch (default: all).")
    ] = None,
    list_only: Annotated[
        bool, typer.Option("--list", help="Show every entry, its size and whether it is cached.")
    ] = False,
    offline: Annotated[
        bool, typer.Option("--offline", help="Use only the cache; fail on anything missing.")
    ] = False,
    deadline: Annotated[
        float,
        typer.Option(
            "--deadline", help="Seconds one file's whole download may take (default 3600)."
        ),
    ] = 3600.0,
    profile: Profile = None,
) -> None:
    """Download the pinned data files of `[downloads.<name>]`, verified by sha256."""
    from tile_cli._fetch import fetch

    raise typer.Exit(
        fetch(names or [], list_only=list_only, offline=offline, profile=profile, deadline=deadline)
    )


@app.command("init")
def init_cmd(
    name: Annotated[str, typer.Argument(help="Project name; a directory of that name is created.")],
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite the files tile writes if they exist.")
    ] = False,
    from_index: Annotated[
        bool,
        typer.Option(
            "--from-index",
            help="Resolve tile from the package index, not from the checkout or wheels this "
            "tile was installed from.",
        ),
    ] = False,
) -> None:
    """Start a kernel project: pyproject, tile.toml, one Pallas kernel with its reference."""
    from tile_cli._init import run_init

    raise typer.Exit(run_init(name, force=force, from_index=from_index))


@app.command("device")
def device_cmd(
    calibrate: Annotated[
        bool,
        typer.Option(
            "--calibrate", help="Measure copy bandwidth and bf16 matmul rate; cache them."
        ),
    ] = False,
    json: Json = False,
    profile: Profile = None,
) -> None:
    """Show the device the runner sees: kind, memory, L2, versions and roofline peaks."""
    from tile_cli._device import show_device

    raise typer.Exit(show_device(calibrate=calibrate, as_json=json, profile=profile))


# ---------------------------------------------------------------- build, inspect, snap

ShowTracebacks = Annotated[
    int, typer.Option("-v", "--verbose", count=True, help="Show the traceback of each failure.")
]


@app.command("build")
def build_cmd(
    assignments: Assignments = None,
    filters: Filter = None,
    kernels: Kernel = None,
    axes: Axis = None,
    plugins: Plugin = None,
    profile: Profile = None,
    output_dir: OutputDir = None,
    json: Json = False,
    verbose: ShowTracebacks = 0,
    case_timeout: CaseTimeout = None,
    isolate: Isolate = None,
    compile_cache: CompileCache = None,
) -> None:
    """Lower and compile every case (no execution); store what the compiler made in a run dir."""
    from tile_cli._run import run_suite
    from tile_cli._settings import given, parse_assignments

    overrides = parse_assignments(assignments) | given(
        {
            "runner.case_timeout": case_timeout,
            "runner.isolate": isolate,
            "runner.compile_cache": compile_cache,
        }
    )
    sel = _selection(filters, kernels, axes, plugins, overrides)
    raise typer.Exit(
        run_suite(
            "build", sel, profile=profile, output_dir=output_dir, as_json=json, verbose=verbose
        )
    )


@app.command("inspect")
def inspect_cmd(
    case: Annotated[
        str | None, typer.Argument(help="Case id, exactly as `tile list` prints it.")
    ] = None,
    kind: Annotated[
        str, typer.Option("--kind", help="jaxpr | stablehlo | hlo | cost | memory | all.")
    ] = "stablehlo",
    list_kinds: Annotated[
        bool, typer.Option("--list-kinds", help="Print the kinds of view and exit.")
    ] = False,
    axes: Axis = None,
    plugins: Plugin = None,
    profile: Profile = None,
    verbose: ShowTracebacks = 0,
) -> None:
    """Print one case's jaxpr, StableHLO, optimized HLO, cost or memory analysis."""
    from tile_cli._build import INSPECT_KINDS, inspect_case
    from tile_cli._errors import CliError

    if list_kinds:
        typer.echo("\n".join([*INSPECT_KINDS, "all"]))
        raise typer.Exit(ExitCode.OK)
    if case is None:
        raise CliError(
            "missing the case id", hint="run `tile list` and pass one id: `tile inspect ID`"
        )
    sel = _selection(None, None, axes, plugins, {})
    raise typer.Exit(inspect_case(case, kind, sel, profile=profile, verbose=verbose))


@app.command("snap")
def snap_cmd(
    filters: Filter = None,
    kernels: Kernel = None,
    plugins: Plugin = None,
    profile: Profile = None,
    check: Annotated[
        bool,
        typer.Option("--check", help="Write nothing; exit 1 with a diff if any lowering changed."),
    ] = False,
    update: Annotated[
        bool, typer.Option("--update", help="Accept: rewrite changed, add new, drop stale.")
    ] = False,
    directory: Annotated[
        Path | None,
        typer.Option("--dir", help="Snapshot directory (default `snapshots/` in the project)."),
    ] = None,
) -> None:
    """Snapshot each case's normalized StableHLO; `--check` diffs it, `--update` accepts it."""
    from tile_cli._errors import CliError
    from tile_cli._snap import snap

    if check and update:
        raise CliError("--check and --update exclude each other", hint="pick one")
    sel = _selection(filters, kernels, None, plugins, {})
    mode = "check" if check else "update" if update else "record"
    raise typer.Exit(snap(sel, profile=profile, mode=mode, directory=directory))


# ---------------------------------------------------------------- campaigns

CampaignName = Annotated[
    str,
    typer.Argument(help="A campaign: `campaigns/NAME.toml` or `[campaigns.NAME]` in tile.toml."),
]
Smoke = Annotated[
    bool,
    typer.Option(
        "--smoke", help="One case per kernel, minimal sampling (`[smoke]`): check the whole plan."
    ),
]
OverBudget = Annotated[
    bool, typer.Option("--over-budget", help="Go on although the plan is over `[budget]`.")
]


@campaign_app.command("list")
def campaign_list_cmd() -> None:
    """List the campaigns of this project and where each is defined."""
    from tile_cli._escape import escape_controls
    from tile_cli._settings import load
    from tile_config import campaign_names

    for name, where in campaign_names(load(None, {})).items():
        typer.echo(escape_controls(f"{name}\t{where}"))
    raise typer.Exit(ExitCode.OK)


@campaign_app.command("plan")
def campaign_plan_cmd(
    name: CampaignName,
    smoke: Smoke = False,
    over_budget: OverBudget = False,
    json: Annotated[bool, typer.Option("--json", help="Print the plan as JSON.")] = False,
) -> None:
    """Show every unit (variant x machine) with its cases and estimated time; run nothing.

    Exit 2 when the plan is over its budget (with the units and cases that cost most).
    """
    from tile_cli._campaign_run import plan_campaign

    raise typer.Exit(plan_campaign(name, smoke=smoke, over_budget=over_budget, as_json=json))


@campaign_app.command("run")
def campaign_run_cmd(
    name: CampaignName,
    smoke: Smoke = False,
    over_budget: OverBudget = False,
    output_dir: Annotated[
        Path | None,
        typer.Option(
            "--output-dir",
            "-o",
            help="Campaign directory (default `.tile/campaigns/NAME`, `NAME-smoke` with --smoke).",
        ),
    ] = None,
) -> None:
    """Run a campaign, one `tile bench` per unit; run it again to resume where it stopped."""
    from tile_cli._campaign_run import run_campaign

    raise typer.Exit(
        run_campaign(name, smoke=smoke, over_budget=over_budget, output_dir=output_dir)
    )


# ---------------------------------------------------------------- cache

cache_app = typer.Typer(
    help="JAX's persistent compilation cache: where it is, what is in it.", no_args_is_help=True
)
app.add_typer(cache_app, name="cache")


@cache_app.command("info")
def cache_info_cmd(profile: Profile = None, json: Json = False) -> None:
    """The cache directory, why it is that one, its entries, bytes, oldest and newest."""
    from tile_cli._jax_cache import cache_info

    raise typer.Exit(cache_info(profile=profile, as_json=json))


@cache_app.command("clear")
def cache_clear_cmd(
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Clear without asking.")] = False,
    profile: Profile = None,
    json: Json = False,
) -> None:
    """Remove every compiled executable from the cache (asks first unless `--yes`)."""
    from tile_cli._jax_cache import cache_clear

    raise typer.Exit(cache_clear(profile=profile, yes=yes, as_json=json))


# ---------------------------------------------------------------- report and history

Db = Annotated[
    Path | None,
    typer.Option("--db", help="History database (default `[history] path`)."),
]


@app.command("report")
def report_cmd(
    run: Annotated[Path, typer.Argument(help="A run directory (or its report.json).")] = Path(
        ".tile/latest"
    ),
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Where to write the HTML file.")
    ] = Path("report.html"),
    compare: Annotated[
        Path | None,
        typer.Option("--compare", help="Compare with a baseline file or directory, or a run."),
    ] = None,
    history: Annotated[
        bool, typer.Option("--history", help="Add each case's trend over commits, steps marked.")
    ] = False,
    db: Db = None,
    profile: Profile = None,
) -> None:
    """Write one self-contained HTML report of a run: context, roofline, samples, failures."""
    from tile_cli._html_report import make_report

    raise typer.Exit(
        make_report(run, output=output, compare=compare, history=history, db=db, profile=profile)
    )


history_app = typer.Typer(
    help="The run history: every bench run's per-case medians, over commits.",
    no_args_is_help=True,
)
app.add_typer(history_app, name="history")

Device = Annotated[str | None, typer.Option("--device", help="Only this device kind.")]
Branch = Annotated[str | None, typer.Option("--branch", help="Only runs on this git branch.")]
Last = Annotated[int | None, typer.Option("--last", help="Only the latest N commits per case.")]
Dirty = Annotated[
    bool, typer.Option("--include-dirty", help="Count runs of uncommitted changes too.")
]


@history_app.command("add")
def history_add_cmd(
    runs: Annotated[list[Path], typer.Argument(help="Run directories, e.g. `.tile/runs/*`.")],
    branch: Annotated[
        str | None, typer.Option("--branch", help="The branch they ran on, if git cannot tell.")
    ] = None,
    db: Db = None,
    profile: Profile = None,
) -> None:
    """Add existing run directories to the history (a run already there is left alone)."""
    from tile_cli._history import add_runs

    raise typer.Exit(add_runs(runs, db=db, branch=branch, profile=profile))


@history_app.command("show")
def history_show_cmd(
    filters: Filter = None,
    kernels: Kernel = None,
    device: Device = None,
    branch: Branch = None,
    last: Last = None,
    include_dirty: Dirty = False,
    verbose: Annotated[
        int, typer.Option("-v", "--verbose", count=True, help="A table of commits per case.")
    ] = 0,
    db: Db = None,
    profile: Profile = None,
) -> None:
    """Each case's trend over commits: sparkline, first and latest median, steps found."""
    from tile_cli._history import HistoryQuery, show_history

    query = HistoryQuery(filters or [], kernels or [], device, branch, last, include_dirty)
    raise typer.Exit(show_history(query, db=db, profile=profile, verbose=verbose))


@history_app.command("regressions")
def history_regressions_cmd(
    filters: Filter = None,
    kernels: Kernel = None,
    device: Device = None,
    branch: Branch = None,
    last: Last = None,
    include_dirty: Dirty = False,
    min_change: Annotated[
        float, typer.Option("--min-change", help="Smallest step reported, in percent.")
    ] = 5.0,
    db: Db = None,
    profile: Profile = None,
) -> None:
    """Find the commits where a case got slower beyond the noise between runs; exit 1 if any
    such step still stands at the latest commit."""
    from tile_cli._errors import CliError
    from tile_cli._history import HistoryQuery, show_regressions

    if not min_change > 0:
        raise CliError(f"--min-change must be above 0, got {min_change}", hint="e.g. `5` for 5%")
    query = HistoryQuery(
        filters or [], kernels or [], device, branch, last, include_dirty, min_change / 100
    )
    raise typer.Exit(show_regressions(query, db=db, profile=profile))
