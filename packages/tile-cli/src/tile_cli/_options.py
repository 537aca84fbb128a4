"""The flags of the `tile` commands, declared once and composed per command.

Flags come in groups (`SELECT`, `RUNNER`, `SAMPLING`...) that a command takes with
`@with_flags(...)`: typer reads the composed signature, the command reads the values from its
keyword arguments. Every flag that sets a configuration key is named in `CONFIG_KEYS`, so
`config_overrides` turns any command's flags into configuration the same way, and a flag the
user did not give leaves the key to tile.toml, the profile and the environment.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final, TypeVar

import typer

if TYPE_CHECKING:
    from tile_cli._settings import Selection

__all__ = [
    "AXES",
    "CACHE",
    "CASES",
    "COMPARE",
    "CONFIG_KEYS",
    "DB",
    "FILTERS",
    "HISTORY",
    "JSON",
    "LAUNCH",
    "OUTPUT",
    "OUTPUT_DIR",
    "PLUGINS",
    "PROFILE",
    "RUNNER",
    "SAMPLING",
    "SEED",
    "SELECT",
    "SETTINGS",
    "TRACEBACKS",
    "TUNABLE",
    "VERBOSE",
    "Flags",
    "compare_flags",
    "config_overrides",
    "selection",
    "with_flags",
]

_Command = TypeVar("_Command", bound=Callable[..., None])

Flags = Mapping[str, Any]
"""A command's flag values by parameter name, as typer passes them."""

CONFIG_KEYS: Final[Mapping[str, str]] = {
    # parameter name -> configuration key it overrides
    "timer": "bench.timer",
    "cold": "bench.cold",
    "warmup": "bench.warmup_runs",
    "min_runs": "bench.min_runs",
    "max_runs": "bench.max_runs",
    "max_time": "bench.max_time",
    "target_precision": "bench.target_precision",
    "rounds": "bench.rounds",
    "seed": "test.seed",
    "eta": "tune.eta",
    "case_timeout": "runner.case_timeout",
    "isolate": "runner.isolate",
    "compile_cache": "runner.compile_cache",
    "launcher": "launcher.kind",
    "shards": "launcher.shards",
    "noise_floor": "compare.noise_floor",
    "alpha": "compare.alpha",
    "fail_on_inconclusive": "compare.fail_on_inconclusive",
    "basis": "compare.basis",
}


def config_overrides(flags: Flags) -> dict[str, object]:
    """The configuration a command's flags set: `--set KEY=VALUE`, then every named flag given."""
    from tile_cli._settings import parse_sets

    overrides = parse_sets(flags.get("settings") or [])
    for name, key in CONFIG_KEYS.items():
        if flags.get(name) is not None:
            overrides[key] = flags[name]
    return overrides


def selection(flags: Flags, overrides: Mapping[str, object]) -> Selection:
    """Which cases a command runs, from its `-k`, `--kernel`, `-a`, `--plugin`, `--tunable` and
    `--case` flags (whichever it has)."""
    from tile_cli._settings import Selection

    return Selection(
        filters=flags.get("filters") or [],
        kernels=flags.get("kernels") or [],
        axes=flags.get("axes") or [],
        plugins=flags.get("plugins") or [],
        case_ids=flags.get("case_ids") or None,
        overrides=dict(overrides),
        tunables=flags.get("tunable") or [],
    )


def with_flags(*groups: tuple[inspect.Parameter, ...]) -> Callable[[_Command], _Command]:
    """Give a command the flags of `groups`, in order, before its own parameters.

    The command takes them as `**flags`; typer sees one signature with every flag.
    """

    def apply(command: _Command) -> _Command:
        own = inspect.signature(command, eval_str=True).parameters.values()
        kept = [
            p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
            for p in own
            if p.kind is not inspect.Parameter.VAR_KEYWORD
        ]
        params = [*(p for group in groups for p in group), *kept]
        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        return command

    return apply


def _flag(name: str, annotation: object, default: object = None) -> inspect.Parameter:
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default
    )


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
    str | None, typer.Option("--profile", help="Apply `[profiles.NAME]` from tile.toml.")
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
Verbose = Annotated[
    int,
    typer.Option(
        "-v",
        "--verbose",
        count=True,
        help="-v samples, stop reason and where each case's time went; -vv more.",
    ),
]
ShowTracebacks = Annotated[
    int, typer.Option("-v", "--verbose", count=True, help="Show the traceback of each failure.")
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
Settings = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        help="Set any config key for this run: `--set bench.batch=20`, "
        "`--set runner.env.XLA_FLAGS=...` (repeatable; the other flags win).",
    ),
]
Db = Annotated[
    Path | None,
    typer.Option("--db", help="History database (default `[history] path`)."),
]
Timer = Annotated[str | None, typer.Option("--timer", help="auto | cupti | wall | batched.")]
Cold = Annotated[bool | None, typer.Option("--cold/--warm", help="Flush L2 before every sample.")]
Warmup = Annotated[int | None, typer.Option("--warmup", help="Warm-up calls.")]
MinRuns = Annotated[int | None, typer.Option("--min-runs")]
MaxRuns = Annotated[int | None, typer.Option("--max-runs")]
MaxTime = Annotated[
    float | None, typer.Option("--max-time", help="Sampling budget per case, seconds.")
]
TargetPrecision = Annotated[
    float | None,
    typer.Option(
        "--target-precision",
        help="Stop when the 95% CI half-width of the median is below this fraction (0.01 = 1%).",
    ),
]
Rounds = Annotated[
    int | None,
    typer.Option(
        "--rounds",
        help="Time every case in N rounds over the whole run, fresh inputs each round; "
        "compare then judges the spread between rounds (use 5+ to gate on a noisy CPU).",
    ),
]
CacheReport = Annotated[
    bool,
    typer.Option(
        "--cache-report",
        help="Record JAX's compilation cache before and after the run, and why each "
        "compile missed it, in diagnostics/jax_cache.json.",
    ),
]
ColdProcess = Annotated[
    bool,
    typer.Option(
        "--cold-process",
        help="With --cache-report: run the cases in two fresh runners, first on an empty "
        "cache, then on the filled one; report time to first result and compile saved.",
    ),
]
Seed = Annotated[int | None, typer.Option("--seed", help="Seed for the random inputs.")]
Compare = Annotated[
    Path | None,
    typer.Option("--compare", help="Compare with a baseline (file, or directory of baselines)."),
]
Device = Annotated[str | None, typer.Option("--device", help="Only this device kind.")]
Branch = Annotated[str | None, typer.Option("--branch", help="Only runs on this git branch.")]
Last = Annotated[int | None, typer.Option("--last", help="Only the latest N commits per case.")]
Dirty = Annotated[
    bool, typer.Option("--include-dirty", help="Count runs of uncommitted changes too.")
]


def compare_flags(*, after_run: bool) -> tuple[inspect.Parameter, ...]:
    """How strictly to compare: `--noise-floor`, `--alpha`, `--fail-on-inconclusive`, `--basis`.

    `after_run`: the flags of `tile bench`, where they apply only with `--compare`.
    """

    def say(text: str) -> str:
        return f"With --compare: {text}" if after_run else text[0].upper() + text[1:]

    noise_floor = say("changes within ±this percent are neutral (default 2).")
    alpha = say("significance level (default 0.05).")
    inconclusive = say("exit 4 when a case is inconclusive.")
    return (
        _flag(
            "noise_floor", Annotated[float | None, typer.Option("--noise-floor", help=noise_floor)]
        ),
        _flag("alpha", Annotated[float | None, typer.Option("--alpha", help=alpha)]),
        _flag(
            "fail_on_inconclusive",
            Annotated[
                bool | None,
                typer.Option("--fail-on-inconclusive/--no-fail-on-inconclusive", help=inconclusive),
            ],
        ),
        _flag("basis", Basis),
    )


FILTERS = (_flag("filters", Filter), _flag("kernels", Kernel))
AXES = (_flag("axes", Axis),)
PLUGINS = (_flag("plugins", Plugin),)
SELECT = (*FILTERS, *AXES, *PLUGINS)
"""Which cases: `-k`, `--kernel`, `-a`, `--plugin`."""
PROFILE = (_flag("profile", Profile),)
OUTPUT_DIR = (_flag("output_dir", OutputDir),)
JSON = (_flag("json", Json, False),)
OUTPUT = (*OUTPUT_DIR, *JSON)
VERBOSE = (_flag("verbose", Verbose, 0),)
TRACEBACKS = (_flag("verbose", ShowTracebacks, 0),)
RUNNER = (
    _flag("case_timeout", CaseTimeout),
    _flag("isolate", Isolate),
    _flag("compile_cache", CompileCache),
)
"""How runners run: `--case-timeout`, `--isolate`, `--compile-cache`."""
TUNABLE = (_flag("tunable", Tunable),)
LAUNCH = (_flag("launcher", Launcher), _flag("shards", Shards), _flag("slurm_args", SlurmArgs))
"""Where runners start: `--launcher`, `--shards`, `--slurm-arg`."""
SAMPLING = (
    _flag("timer", Timer),
    _flag("cold", Cold),
    _flag("warmup", Warmup),
    _flag("min_runs", MinRuns),
    _flag("max_runs", MaxRuns),
    _flag("max_time", MaxTime),
    _flag("target_precision", TargetPrecision),
    _flag("rounds", Rounds),
)
"""How a case is timed (`[bench]`)."""
SEED = (_flag("seed", Seed),)
COMPARE = (_flag("compare", Compare),)
CACHE = (_flag("cache_report", CacheReport, False), _flag("cold_process", ColdProcess, False))
CASES = (_flag("case_ids", CaseIds),)
SETTINGS = (_flag("settings", Settings),)
HISTORY = (
    _flag("device", Device),
    _flag("branch", Branch),
    _flag("last", Last),
    _flag("include_dirty", Dirty, False),
)
"""Which runs of the history: `--device`, `--branch`, `--last`, `--include-dirty`."""
DB = (_flag("db", Db),)
