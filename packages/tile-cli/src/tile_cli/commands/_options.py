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
from typing import TYPE_CHECKING, Annotated, Any, Final, Literal, TypeVar

import typer

if TYPE_CHECKING:
    from tile_harness import Selection

__all__ = [
    "ASSIGNMENTS",
    "AXES",
    "CACHE",
    "COMPARE",
    "CONFIG_KEYS",
    "BasisChoice",
    "LauncherChoice",
    "TimerChoice",
    "DB",
    "EXACT",
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
    "TRACEBACKS",
    "SNAPSHOTS",
    "TUNABLE",
    "TUNING",
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

# The choices of the flags that take one of a few words: typer refuses any other word before
# a command runs. Copies of tile-config's sets (importing it would load pydantic for `--help`);
# tests/test_closed_sets.py holds them equal.
TimerChoice = Literal["auto", "cupti", "wall", "batched"]
LauncherChoice = Literal["local", "slurm"]
BasisChoice = Literal["auto", "absolute", "relative"]

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
    "budget": "tune.budget",
    "case_timeout": "runner.case_timeout",
    "isolate": "runner.isolate",
    "compile_cache": "runner.compile_cache",
    "launcher": "launcher.kind",
    "shards": "launcher.shards",
    "noise_floor": "compare.noise_floor",
    "alpha": "compare.alpha",
    "fail_on_inconclusive": "compare.fail_on_inconclusive",
    "basis": "compare.basis",
    "allow_missing": "compare.allow_missing",
}


def config_overrides(flags: Flags) -> dict[str, object]:
    """The configuration a command's flags set: `--set KEY=VALUE`, then positional `KEY=VALUE`
    assignments, then every named flag given (later ones win)."""
    from tile_harness import parse_assignments, parse_sets

    overrides = parse_sets(flags.get("settings") or [])
    overrides |= parse_assignments(flags.get("assignments"))
    for name, key in CONFIG_KEYS.items():
        if flags.get(name) is not None:
            overrides[key] = flags[name]
    return overrides


def selection(flags: Flags, overrides: Mapping[str, object]) -> Selection:
    """Which cases a command runs, from its `-k`, `--kernel`, `-a`, `--plugin`, `--tunable` and
    `--case` flags (whichever it has)."""
    from tile_harness import Selection

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
        command.__signature__ = inspect.Signature(params)
        return command

    return apply


def _option(
    name: str,
    kind: Any,
    *spelt: str,
    default: Any = None,
    help: str | None = None,
    count: bool = False,
) -> inspect.Parameter:
    """One flag: the parameter `name` of type `kind`, spelt `spelt` on the command line."""
    annotation = Annotated[kind, typer.Option(*spelt, help=help, count=count)]
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default
    )


ASSIGNMENTS = (
    inspect.Parameter(
        "assignments",
        inspect.Parameter.KEYWORD_ONLY,
        annotation=Annotated[
            list[str] | None,
            typer.Argument(
                help="Config overrides `SECTION.KEY=VALUE`, read like TILE_* variables: "
                "`bench.max_time=0.2 runner.pin_cpu=true`.",
                show_default=False,
                metavar="[KEY=VALUE]...",
            ),
        ],
        default=None,
    ),
)
"""Positional `SECTION.KEY=VALUE` configuration overrides (Hydra-style)."""
FILTERS = (
    _option("filters", list[str] | None, "-k", "--filter",
            help="Substring or glob on case ids; repeat to widen."),
    _option("kernels", list[str] | None, "--kernel", help="Kernel name or glob; repeatable."),
)  # fmt: skip
AXES = (
    _option("axes", list[str] | None, "-a", "--axis",
            help="Override an axis: `-a dtype=float32,bfloat16`."),
)  # fmt: skip
PLUGINS = (
    _option("plugins", list[str] | None, "--plugin",
            help="Include a kernel plugin (entry point in `tile.kernels`)."),
)  # fmt: skip
SELECT = (*FILTERS, *AXES, *PLUGINS)
"""Which cases: `-k`, `--kernel`, `-a`, `--plugin`."""
PROFILE = (
    _option("profile", str | None, "--profile",
            help="Apply `[profiles.NAME]` from tile.toml; repeat (or `A,B`) to lay several on in "
            "order, later ones winning."),
)  # fmt: skip
OUTPUT_DIR = (
    _option("output_dir", Path | None, "--output-dir", "-o",
            help="Run directory (default `.tile/runs/<run_id>`)."),
)  # fmt: skip
JSON = (_option("json", bool, "--json", default=False, help="Stream machine-readable JSON Lines."),)
OUTPUT = (*OUTPUT_DIR, *JSON)
VERBOSE = (
    _option("verbose", int, "-v", "--verbose", default=0, count=True,
            help="-v samples, stop reason and where each case's time went; -vv more."),
)  # fmt: skip
TRACEBACKS = (
    _option("verbose", int, "-v", "--verbose", default=0, count=True,
            help="Show the traceback of each failure."),
)  # fmt: skip
RUNNER = (
    _option("case_timeout", float | None, "--case-timeout",
            help="Seconds of runner silence before a case is timed out."),
    _option("isolate", bool | None, "--isolate/--no-isolate", help="One runner process per case."),
    _option("compile_cache", bool | None, "--compile-cache/--no-compile-cache",
            help="Use JAX's persistent compilation cache (`[runner] compile_cache`, on by "
            "default)."),
)  # fmt: skip
"""How runners run: `--case-timeout`, `--isolate`, `--compile-cache`."""
TUNABLE = (
    _option("tunable", list[str] | None, "--tunable",
            help="Run with this tunable value instead of the tuned or default one: "
            "`--tunable block_rows=4`; repeatable."),
)  # fmt: skip
LAUNCH = (
    _option("launcher", LauncherChoice | None, "--launcher",
            help="Where runners start (`[launcher] kind`)."),
    _option("shards", int | None, "--shards", help="Split the cases over N runners, one GPU each."),
    _option("slurm_args", list[str] | None, "--slurm-arg",
            help="Extra srun argument, e.g. `--slurm-arg=--qos=high`."),
)  # fmt: skip
"""Where runners start: `--launcher`, `--shards`, `--slurm-arg`."""
SAMPLING = (
    _option("timer", TimerChoice | None, "--timer",
            help="Device kernel time (cupti), wall clock, or batched calls; auto picks."),
    _option("cold", bool | None, "--cold/--warm", help="Flush L2 before every sample."),
    _option("warmup", int | None, "--warmup", help="Warm-up calls."),
    _option("min_runs", int | None, "--min-runs"),
    _option("max_runs", int | None, "--max-runs"),
    _option("max_time", float | None, "--max-time", help="Sampling budget per case, seconds."),
    _option("target_precision", float | None, "--target-precision",
            help="Stop when the 95% CI half-width of the median is below this fraction "
            "(0.01 = 1%)."),
    _option("rounds", int | None, "--rounds",
            help="Time every case in N rounds over the whole run, fresh inputs each round; "
            "compare then judges the spread between rounds (use 5+ to gate on a noisy CPU)."),
)  # fmt: skip
"""How a case is timed (`[bench]`)."""
SEED = (_option("seed", int | None, "--seed", help="Seed for the random inputs."),)
COMPARE = (
    _option("compare", Path | None, "--compare",
            help="Compare with a baseline (file, or directory of baselines)."),
)  # fmt: skip
CACHE = (
    _option("cache_report", bool, "--cache-report", default=False,
            help="Record JAX's compilation cache before and after the run, and why each "
            "compile missed it, in diagnostics/jax_cache.json."),
    _option("cold_process", bool, "--cold-process", default=False,
            help="With --cache-report: run the cases in two fresh runners, first on an empty "
            "cache, then on the filled one; report time to first result and compile saved."),
)  # fmt: skip
EXACT = (
    _option("case_ids", list[str] | None, "--case",
            help="Run exactly this case id (repeatable), as `tile list` prints it."),
    _option("settings", list[str] | None, "--set",
            help="Set any config key for this run: `--set bench.batch=20`, "
            "`--set runner.env.XLA_FLAGS=...` (repeatable; the other flags win)."),
)  # fmt: skip
"""Exact case ids (`--case`) and any configuration key (`--set`)."""
HISTORY = (
    _option("device", str | None, "--device", help="Only this device kind."),
    _option("branch", str | None, "--branch", help="Only runs on this git branch."),
    _option("last", int | None, "--last", help="Only the latest N commits per case."),
    _option("include_dirty", bool, "--include-dirty", default=False,
            help="Count runs of uncommitted changes too."),
)  # fmt: skip
"""Which runs of the history: `--device`, `--branch`, `--last`, `--include-dirty`."""
TUNING = (
    _option("dry_run", bool, "--dry-run", default=False,
            help="Print the configurations and the estimated time only."),
    _option("budget", float | None, "--budget",
            help="Seconds the tune may take; rungs get shorter to fit."),
    _option("eta", int | None, "--eta", help="Each rung keeps the fastest 1/ETA (default 3)."),
)  # fmt: skip
"""How `tile tune` prunes and how long it may take."""
SNAPSHOTS = (
    _option("check", bool, "--check", default=False,
            help="Write nothing; exit 1 with a diff if any lowering changed."),
    _option("update", bool, "--update", default=False,
            help="Accept: rewrite changed, add new, drop stale."),
    _option("directory", Path | None, "--dir",
            help="Snapshot directory (default `snapshots/` in the project)."),
)  # fmt: skip
"""What `tile snap` does with the snapshots: record, `--check` or `--update`, and where."""
DB = (_option("db", Path | None, "--db", help="History database (default `[history] path`)."),)


def compare_flags(*, after_run: bool) -> tuple[inspect.Parameter, ...]:
    """How strictly to compare: `--noise-floor`, `--alpha`, `--fail-on-inconclusive`, `--basis`.

    `after_run`: the flags of `tile bench`, where they apply only with `--compare`.
    """

    def say(text: str) -> str:
        return f"With --compare: {text}" if after_run else text[0].upper() + text[1:]

    return (
        _option("noise_floor", float | None, "--noise-floor",
                help=say("changes within ±this percent are neutral (default 2).")),
        _option("alpha", float | None, "--alpha", help=say("significance level (default 0.05).")),
        _option("fail_on_inconclusive", bool | None,
                "--fail-on-inconclusive/--no-fail-on-inconclusive",
                help=say("exit 4 when a case is inconclusive.")),
        _option("allow_missing", bool | None, "--allow-missing/--no-allow-missing",
                help=say("pass although some cases are in one run only (a new kernel, a case "
                         "left out); by default they exit 4, like every case that could not be "
                         "judged.")),
        _option("basis", BasisChoice | None, "--basis",
                help="Judge times (absolute), or times relative to the "
                "reference timed interleaved (auto: relative where both runs have it). "
                "Default `[compare] basis`."),
    )  # fmt: skip
