"""The flags of the `tile` commands, declared once and composed per command.

`Flags` declares every shared flag once: its Python type, default, spellings, help and, for a
flag that sets configuration, the key it sets. Groups (`SELECT`, `RUNNER`, `SAMPLING`...) name
which flags a command offers, in order; `@with_flags(...)` builds typer's signature from them
and hands the command one `Flags`, so a command reads `flags.profile`, and a misspelt flag is a
type error. A flag the command does not offer, or the user did not give, keeps its default
(None for a configuration flag), which leaves the key to tile.toml, the profile and the
environment.
"""

# RUF009 takes `_flag(...)` for a shared mutable default; it returns a `dataclasses.field`.
# ruff: noqa: RUF009

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Concatenate, Final, Literal, TypeVar, overload

import typer

if TYPE_CHECKING:
    from tile_harness import Selection

__all__ = [
    "ASSIGNMENTS",
    "AXES",
    "CACHE",
    "CASES",
    "COMPARE",
    "CONFIG_KEYS",
    "DB",
    "EXACT",
    "FILTERS",
    "HISTORY",
    "JSON",
    "LAUNCH",
    "MODES",
    "OUTPUT",
    "OUTPUT_DIR",
    "PLUGINS",
    "PROFILE",
    "RUNNER",
    "SAMPLING",
    "SEED",
    "SELECT",
    "SNAPSHOTS",
    "TRACEBACKS",
    "TUNABLE",
    "TUNING",
    "VERBOSE",
    "BasisChoice",
    "Flags",
    "Group",
    "LauncherChoice",
    "TimerChoice",
    "compare_flags",
    "config_overrides",
    "selection",
    "with_flags",
]

_T = TypeVar("_T")

# The choices of the flags that take one of a few words: typer refuses any other word before
# a command runs. Copies of tile-config's sets (importing it would load pydantic for `--help`);
# tests/test_closed_sets.py holds them equal.
TimerChoice = Literal["auto", "cupti", "wall", "batched"]
LauncherChoice = Literal["local", "slurm"]
BasisChoice = Literal["auto", "absolute", "relative"]

_TYPER = "typer"  # field metadata: the typer.Option (or Argument) of the flag
_CONFIG = "config"  # field metadata: the configuration key the flag sets, if any


@overload
def _flag(
    *spelt: str, default: _T, help: str | None = ..., count: bool = ..., config: None = ...
) -> _T: ...
@overload
def _flag(
    *spelt: str, help: str | None = ..., config: str | None = ..., metavar: str | None = ...
) -> None: ...
def _flag(
    *spelt: str,
    default: object = None,
    help: str | None = None,
    count: bool = False,
    config: str | None = None,
    metavar: str | None = None,
) -> Any:
    """One flag spelt `spelt` on the command line; `config`: the configuration key it sets (such
    a flag defaults to None, so that leaving it out leaves the key to the other layers);
    `metavar`: how the help names its value."""
    option = typer.Option(*spelt, help=help, count=count, metavar=metavar)
    return dataclasses.field(default=default, metadata={_TYPER: option, _CONFIG: config})


@dataclass(frozen=True, kw_only=True)
class Flags:
    """The values of the shared flags of one command, as the user gave them (or defaults)."""

    # fmt: off
    assignments: list[str] | None = dataclasses.field(default=None, metadata={
        _TYPER: typer.Argument(show_default=False, metavar="[KEY=VALUE]...",
            help="Config overrides `SECTION.KEY=VALUE`, read like TILE_* variables: "
            "`bench.max_time=0.2 runner.pin_cpu=true`.")})
    # Which cases
    filters: list[str] | None = _flag("-k", "--filter",
        help="Substring or glob on case ids; repeat to widen.")
    kernels: list[str] | None = _flag("--kernel", help="Kernel name or glob; repeatable.")
    axes: list[str] | None = _flag("-a", "--axis",
        help="Override an axis: `-a dtype=float32,bfloat16`.")
    plugins: list[str] | None = _flag("--plugin",
        help="Include a kernel plugin (entry point in `tile.kernels`).")
    modes: list[str] | None = _flag("--mode",
        help="Run each case in this mode: fwd (default), bwd (the VJP alone), fwd_bwd (value "
        "and VJP in one program), or all the modes its kernel declares; repeatable or `A,B`.")
    tunable: list[str] | None = _flag("--tunable",
        help="Run with this tunable value instead of the tuned or default one: "
        "`--tunable block_rows=4`, or for one kernel where several share the name: "
        "`--tunable std/matmul:block=wgmma:64x256x64`; repeatable.")
    capture: str | None = _flag("--from", metavar="MODULE:FUNCTION", help="Run the kernel "
        "calls this program makes, at its shapes and dtypes: FUNCTION() returns (fn, args).")
    cases_file: Path | None = _flag("--cases", help="Run the cases a --save-cases file lists.")
    save_cases: Path | None = _flag("--save-cases", help="Save what --from captured to FILE.")
    case_ids: list[str] | None = _flag("--case",
        help="Run exactly this case id (repeatable), as `tile list` prints it.")
    settings: list[str] | None = _flag("--set",
        help="Set any config key for this run: `--set bench.batch=20`, "
        "`--set runner.env.XLA_FLAGS=...` (repeatable; the other flags win).")
    profile: str | None = _flag("--profile",
        help="Apply `[profiles.NAME]` from tile.toml; repeat (or `A,B`) to lay several on in "
        "order, later ones winning.")
    # What a run writes and says
    output_dir: Path | None = _flag("--output-dir", "-o",
        help="Run directory (default `.tile/runs/<run_id>`).")
    json: bool = _flag("--json", default=False, help="Stream machine-readable JSON Lines.")
    verbose: int = _flag("-v", "--verbose", default=0, count=True,
        help="-v samples, stop reason and where each case's time went; -vv more.")
    # How runners run and where they start
    case_timeout: float | None = _flag("--case-timeout", config="runner.case_timeout",
        help="Seconds of runner silence before a case is timed out.")
    isolate: bool | None = _flag("--isolate/--no-isolate", config="runner.isolate",
        help="One runner process per case.")
    compile_cache: bool | None = _flag("--compile-cache/--no-compile-cache",
        config="runner.compile_cache",
        help="Use JAX's persistent compilation cache (`[runner] compile_cache`, on by default).")
    launcher: LauncherChoice | None = _flag("--launcher", config="launcher.kind",
        help="Where runners start (`[launcher] kind`).")
    shards: int | None = _flag("--shards", config="launcher.shards",
        help="Split the cases over N runners, one GPU each.")
    slurm_args: list[str] | None = _flag("--slurm-arg",
        help="Extra srun argument, e.g. `--slurm-arg=--qos=high`.")
    # How a case is timed and checked
    timer: TimerChoice | None = _flag("--timer", config="bench.timer",
        help="Device kernel time (cupti), wall clock, or batched calls; auto picks.")
    cold: bool | None = _flag("--cold/--warm", config="bench.cold",
        help="Flush L2 before every sample.")
    warmup: int | None = _flag("--warmup", config="bench.warmup_runs", help="Warm-up calls.")
    min_runs: int | None = _flag("--min-runs", config="bench.min_runs")
    max_runs: int | None = _flag("--max-runs", config="bench.max_runs")
    max_time: float | None = _flag("--max-time", config="bench.max_time",
        help="Sampling budget per case, seconds.")
    target_precision: float | None = _flag("--target-precision", config="bench.target_precision",
        help="Stop when the 95% CI half-width of the median is below this fraction (0.01 = "
        "1%; 0, the default: 0.02 on a CPU, 0.01 elsewhere).")
    rounds: int | None = _flag("--rounds", config="bench.rounds", help="Time every case in N "
        "rounds over the whole run, fresh inputs each round; compare then judges the spread "
        "between rounds (use 5+ to gate on a noisy CPU).")
    processes: int | None = _flag("--processes", config="bench.processes", help="Time every "
        "case in N runner processes in turn, 1/N of the budget each; compare then judges "
        "their spread (0, the default: 2 on a CPU, 1 elsewhere).")
    seed: int | None = _flag("--seed", config="test.seed", help="Seed for the random inputs.")
    # Comparison with a baseline
    compare: Path | None = _flag("--compare",
        help="Compare with a baseline (file, or directory of baselines).")
    against: str | None = _flag("--against", metavar="REV",
        help="Time the working tree and git revision REV (a branch, tag or commit) in turns, "
        "round by round, and compare them: the gate for a noisy machine.")
    noise_floor: float | None = _flag("--noise-floor", config="compare.noise_floor",
        help="Changes within ±this percent are neutral (default 2).")
    alpha: float | None = _flag("--alpha", config="compare.alpha",
        help="Significance level (default 0.05).")
    fail_on_inconclusive: bool | None = _flag("--fail-on-inconclusive/--no-fail-on-inconclusive",
        config="compare.fail_on_inconclusive", help="Exit 4 when a case is inconclusive.")
    allow_missing: bool | None = _flag("--allow-missing/--no-allow-missing",
        config="compare.allow_missing",
        help="Pass although some cases are in one run only (a new kernel, a case left out); by "
        "default they exit 4, like every case that could not be judged.")
    basis: BasisChoice | None = _flag("--basis", config="compare.basis",
        help="Judge times (absolute), or times relative to the reference timed interleaved "
        "(auto: relative where both runs have it). Default `[compare] basis`.")
    # The compilation cache
    cache_report: bool = _flag("--cache-report", default=False,
        help="Record JAX's compilation cache before and after the run, and why each compile "
        "missed it, in diagnostics/jax_cache.json.")
    cold_process: bool = _flag("--cold-process", default=False,
        help="With --cache-report: run the cases in two fresh runners, first on an empty "
        "cache, then on the filled one; report time to first result and compile saved.")
    # `tile history`: which runs
    device: str | None = _flag(
        "--device", help="Only this device: a kind (`cpu`: every CPU) or a CPU model as shown."
    )
    branch: str | None = _flag("--branch", help="Only runs on this git branch.")
    last: int | None = _flag("--last", help="Only the latest N commits per case.")
    include_dirty: bool = _flag("--include-dirty", default=False,
        help="Count runs of uncommitted changes too.")
    db: Path | None = _flag("--db", help="History database (default `[history] path`).")
    # `tile tune`
    dry_run: bool = _flag("--dry-run", default=False,
        help="Print the configurations and the estimated time only.")
    budget: float | None = _flag("--budget", config="tune.budget",
        help="Seconds the tune may take; rungs get shorter to fit.")
    eta: int | None = _flag("--eta", config="tune.eta",
        help="Each rung keeps the fastest 1/ETA (default 3).")
    user_cache: bool | None = _flag("--user-cache/--no-user-cache", config="tune.user_cache",
        help="Also read (tune: also write) the user cache's tuning files, shared by every "
        "project on this machine.")
    # `tile snap`
    check: bool = _flag("--check", default=False,
        help="Write nothing; exit 1 with a diff if any lowering changed.")
    update: bool = _flag("--update", default=False,
        help="Accept: rewrite changed, add new, drop stale.")
    directory: Path | None = _flag("--dir",
        help="Snapshot directory (default `snapshots/` in the project).")
    # fmt: on


_FIELDS: Final[Mapping[str, dataclasses.Field[Any]]] = {
    f.name: f for f in dataclasses.fields(Flags)
}

CONFIG_KEYS: Final[Mapping[str, str]] = {
    name: f.metadata[_CONFIG] for name, f in _FIELDS.items() if f.metadata.get(_CONFIG)
}
"""Flag name -> the configuration key it overrides."""

Group = tuple[tuple[str, str | None], ...]
"""Flags a command offers together, in order: each a field of `Flags` and, where this group
says it otherwise, its help text."""


def _group(*offers: str | tuple[str, str]) -> Group:
    """The flags `offers` names, in order; a `(name, help)` pair gives that flag other help."""
    group = tuple((o, None) if isinstance(o, str) else o for o in offers)
    unknown = [name for name, _ in group if name not in _FIELDS]
    if unknown:
        raise TypeError(f"no flag {unknown} in Flags: declare it there first")
    return group


ASSIGNMENTS = _group("assignments")
"""Positional `SECTION.KEY=VALUE` configuration overrides (Hydra-style)."""
FILTERS = _group("filters", "kernels")
AXES = _group("axes")
PLUGINS = _group("plugins")
MODES = _group("modes")
SELECT = (*FILTERS, *AXES, *PLUGINS, *MODES)
"""Which cases: `-k`, `--kernel`, `-a`, `--plugin`, `--mode`."""
CASES = _group("capture", "cases_file", "save_cases")
"""Cases from a program: `--from`, `--cases`, `--save-cases`."""
PROFILE = _group("profile")
OUTPUT_DIR = _group("output_dir")
JSON = _group("json")
OUTPUT = (*OUTPUT_DIR, *JSON)
VERBOSE = _group("verbose")
TRACEBACKS = _group(("verbose", "Show the traceback of each failure."))
RUNNER = _group("case_timeout", "isolate", "compile_cache")
"""How runners run: `--case-timeout`, `--isolate`, `--compile-cache`."""
TUNABLE = _group("tunable", "user_cache")
LAUNCH = _group("launcher", "shards", "slurm_args")
"""Where runners start: `--launcher`, `--shards`, `--slurm-arg`."""
_HOW = ("timer", "cold", "warmup", "min_runs", "max_runs", "max_time", "target_precision")
SAMPLING = _group(*_HOW, "rounds", "processes")
"""How a case is timed (`[bench]`)."""
SEED = _group("seed")
COMPARE = _group("compare", "against")
CACHE = _group("cache_report", "cold_process")
EXACT = _group("case_ids", "settings")
"""Exact case ids (`--case`) and any configuration key (`--set`)."""
HISTORY = _group("device", "branch", "last", "include_dirty")
"""Which runs of the history: `--device`, `--branch`, `--last`, `--include-dirty`."""
TUNING = _group("dry_run", "budget", "eta", "user_cache")
"""How `tile tune` prunes and how long it may take."""
FIXED = _group(("tunable", "Tune only the configurations with this value (`--tunable "
                "num_warps=8` tunes the others around it), or one kernel's where several share "
                "the name: `--tunable std/matmul:block=wgmma:64x256x64`; repeatable."))  # fmt: skip
"""`tile tune --tunable`: a value held fixed, the rest tuned."""
SNAPSHOTS = _group("check", "update", "directory")
"""What `tile snap` does with the snapshots: record, `--check` or `--update`, and where."""
DB = _group("db")


def compare_flags(*, after_run: bool) -> Group:
    """How strictly to compare: `--noise-floor`, `--alpha`, `--fail-on-inconclusive`,
    `--allow-missing`, `--basis`.

    `after_run`: the flags of `tile bench`, where all but `--basis` apply only with `--compare`.
    """
    judged = ("noise_floor", "alpha", "fail_on_inconclusive", "allow_missing")
    if not after_run:
        return _group(*judged, "basis")

    def with_compare(name: str) -> tuple[str, str]:
        text = str(_FIELDS[name].metadata[_TYPER].help)
        return name, f"With --compare: {text[:1].lower()}{text[1:]}"

    return _group(*map(with_compare, judged), "basis")


def config_overrides(flags: Flags) -> dict[str, object]:
    """The configuration a command's flags set: `--set KEY=VALUE`, then positional `KEY=VALUE`
    assignments, then every configuration flag given (later ones win)."""
    from tile_harness import parse_assignments, parse_sets

    overrides = parse_sets(flags.settings or [])
    overrides |= parse_assignments(flags.assignments)
    for name, key in CONFIG_KEYS.items():
        value: object = getattr(flags, name)
        if value is not None:
            overrides[key] = value
    return overrides


def selection(flags: Flags, overrides: Mapping[str, object]) -> Selection:
    """Which cases a command runs, from its `-k`, `--kernel`, `-a`, `--plugin`, `--mode`,
    `--tunable` and `--case` flags (whichever it has)."""
    from tile_harness import Selection

    return Selection(
        filters=flags.filters or [],
        kernels=flags.kernels or [],
        axes=flags.axes or [],
        plugins=flags.plugins or [],
        case_ids=flags.case_ids or None,
        overrides=dict(overrides),
        tunables=flags.tunable or [],
        modes=flags.modes or [],
        capture=flags.capture,
        cases_file=flags.cases_file,
        save_cases=flags.save_cases,
    )


@functools.cache
def _hints() -> dict[str, Any]:
    """The annotations of `Flags`, evaluated (typer reads types, not strings)."""
    return typing.get_type_hints(Flags)


def _parameter(name: str, help: str | None) -> inspect.Parameter:
    """The flag `name` as typer reads it: a keyword-only parameter, its typer info annotated."""
    field = _FIELDS[name]
    info = field.metadata[_TYPER]
    if help is not None:
        info = copy.copy(info)
        info.help = help
    annotation = Annotated[_hints()[name], info]
    kind = inspect.Parameter.KEYWORD_ONLY
    return inspect.Parameter(name, kind, annotation=annotation, default=field.default)


def with_flags(
    *groups: Group,
) -> Callable[[Callable[Concatenate[Flags, ...], None]], Callable[..., None]]:
    """Offer the flags of `groups`, in order, before the command's own parameters.

    The command takes a `Flags` first, then its own parameters; typer sees one signature with
    every flag, and the command gets the flags' values as one `Flags`.
    """
    offered = [_parameter(name, help) for group in groups for name, help in group]
    names = [p.name for p in offered]
    if len(set(names)) < len(names):
        raise TypeError(f"a flag is offered twice: {names}")

    def apply(command: Callable[Concatenate[Flags, ...], None]) -> Callable[..., None]:
        _, *own = inspect.signature(command, eval_str=True).parameters.values()
        clash = {p.name for p in own} & set(names)
        if clash:
            raise TypeError(f"{command.__name__} declares flags of Flags again: {clash}")

        def run(**values: Any) -> None:
            command(Flags(**{name: values.pop(name) for name in names}), **values)

        kept = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own]
        run.__signature__ = inspect.Signature([*offered, *kept])
        run.__name__, run.__qualname__ = command.__name__, command.__qualname__
        run.__module__, run.__doc__ = command.__module__, command.__doc__
        return run

    return apply
