"""What a campaign file may say: selection, variants, perturbations, machines, budget, smoke.

A campaign is a saved benchmark plan: the cases (`[select]`), the named ways to run them
(`[variants.NAME]`, multiplied by `[perturb.VAR]`), where to run them (`[machines.NAME]`),
and what it may cost (`[budget]`). Every key maps onto something `tile bench` already has
(a flag, a profile, a `[bench]`/`[runner]`/`[launcher]`/`[machine]` key), so a unit of the
campaign is an ordinary run that could be typed by hand.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, cast

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from tile_config._models import KernelMode, LauncherKind, Timer

__all__ = [
    "NAME_PATTERN",
    "BenchPatch",
    "BudgetSpec",
    "CampaignSpec",
    "CompareSpec",
    "MachineSpec",
    "RunnerPatch",
    "SelectSpec",
    "SmokeSpec",
    "VariantSpec",
    "parse_duration",
]

NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}"
"""Names of campaigns, variants, machines and perturbation labels: they become directory names."""
_NAME_RE = re.compile(NAME_PATTERN)
_ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DURATION_RE = re.compile(
    r"\s*(?:(?P<h>\d+(?:\.\d+)?)\s*h)?\s*(?:(?P<m>\d+(?:\.\d+)?)\s*m(?:in)?)?"
    r"\s*(?:(?P<s>\d+(?:\.\d+)?)\s*s?)?\s*"
)
_SLURM_TIME_RE = re.compile(r"(\d+-)?\d+(:\d+){0,2}|(?i:unlimited|infinite)")

_Text = Annotated[str, Field(min_length=1)]


def _split_commas(value: object) -> object:
    """`"a, b"` -> `["a", "b"]`: a list may be written as one comma-separated string."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",")]
    if isinstance(value, list):
        items = cast("list[object]", value)
        return [item.strip() if isinstance(item, str) else item for item in items]
    return value


def _axis_value(value: object) -> object:
    """One axis value as the text `-a` takes: `[8, 128]` -> `8x128`, `1024` -> `1024`."""
    if isinstance(value, bool):
        return value  # left for strict validation to refuse
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list):
        items = cast("list[object]", value)
        if items and all(type(v) is int for v in items):
            return "x".join(str(v) for v in items)
        return items
    return value


def _parse_axes(value: object) -> object:
    """`["dtype=f32,bf16"]` (as `-a` takes it) or `{dtype = [...]}` -> `{axis: [values]}`."""
    if isinstance(value, list):
        table: dict[str, object] = {}
        for item in cast("list[object]", value):
            if not isinstance(item, str) or "=" not in item:
                raise ValueError(f"holds {item!r}: write each override as `AXIS=V1,V2`")
            name, _, rest = item.partition("=")
            table[name.strip()] = rest
        value = table
    if not isinstance(value, dict):
        return value
    out: dict[object, object] = {}
    for name, items in cast("dict[object, object]", value).items():
        listed = _split_commas(items)
        if isinstance(listed, list):
            out[name] = [_axis_value(v) for v in cast("list[object]", listed)]
        else:
            out[name] = listed
    return out


def parse_duration(value: object) -> object:
    """Seconds as a number, or text such as `90`, `90s`, `20m`, `1h30m`, `2h 5m 10s`."""
    if isinstance(value, bool) or not isinstance(value, str):
        return value
    match = _DURATION_RE.fullmatch(value)
    if not value.strip() or match is None or not any(match.groupdict().values()):
        raise ValueError("must be seconds or a duration such as `90s`, `20m` or `1h30m`")
    parts = {k: float(v) if v else 0.0 for k, v in match.groupdict().items()}
    return parts["h"] * 3600 + parts["m"] * 60 + parts["s"]


_List = Annotated[list[_Text], BeforeValidator(_split_commas)]
_Axes = Annotated[
    dict[_Text, Annotated[list[_Text], Field(min_length=1)]], BeforeValidator(_parse_axes)
]
_Seconds = Annotated[float, Field(gt=0), BeforeValidator(parse_duration)]


def _check_names(names: dict[str, Any], what: str) -> None:
    for name in names:
        if not _NAME_RE.fullmatch(name):
            raise ValueError(
                f"has a {what} named `{name}`: use letters, digits, `.`, `_`, `-` "
                "(at most 64, starting with a letter or digit)"
            )


def _check_env(env: dict[str, str]) -> dict[str, str]:
    for name, value in env.items():
        if not _ENV_NAME_RE.fullmatch(name) or "\0" in value:
            raise ValueError(f"holds `{name}`, which is not a usable environment variable")
    return env


class _Model(BaseModel):
    """Strict, closed and immutable, like TileConfig: typos and `"false"` booleans are errors."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, allow_inf_nan=False)


class SelectSpec(_Model):
    """`[select]`: which cases, as `tile bench --kernel K -k F -a AXIS=V --plugin P` would pick.

    A case is selected when its kernel matches one of `kernels` (name or glob; all kernels when
    empty) and its id one of `filters` (substring or glob; all when empty).
    """

    kernels: _List = []
    filters: _List = []
    axes: _Axes = {}
    plugins: _List = []
    modes: list[KernelMode] = []
    """As `--mode`: the modes each case runs in (none: `fwd`)."""
    cases: _Text | None = None
    """As `--cases`: a cases file (`--save-cases`), relative to the project's root, whose cases
    are selected from instead of the kernels' declared axes."""


class BenchPatch(_Model):
    """`[bench]` keys a variant (or smoke mode) sets; the others keep the configured values."""

    warmup_runs: int | None = Field(default=None, ge=0)
    min_runs: int | None = Field(default=None, ge=1)
    max_runs: int | None = Field(default=None, ge=1)
    min_time: float | None = Field(default=None, ge=0)
    max_time: float | None = Field(default=None, gt=0)
    target_precision: float | None = Field(default=None, gt=0, lt=1)
    timer: Timer | None = None
    cold: bool | None = None
    batch: int | None = Field(default=None, ge=1)
    rounds: int | None = Field(default=None, ge=1, le=100)


class RunnerPatch(_Model):
    """`[runner]` keys a variant sets (its interpreter belongs to the machine, its env to `env`)."""

    timeout: float | None = Field(default=None, gt=0)
    case_timeout: float | None = Field(default=None, gt=0)
    isolate: bool | None = None
    compile_cache: bool | None = None
    jax_cache_dir: _Text | None = None
    pin_cpu: bool | None = None


class VariantSpec(_Model):
    """`[variants.NAME]`: one way of running every case: a profile, config keys, environment."""

    description: str | None = None
    profile: _Text | None = None
    bench: BenchPatch = BenchPatch()
    runner: RunnerPatch = RunnerPatch()
    env: dict[str, str] = {}
    """Set in the runner's environment (over `[runner] env`), e.g. `XLA_FLAGS`."""

    @field_validator("env")
    @classmethod
    def _env_names(cls, env: dict[str, str]) -> dict[str, str]:
        return _check_env(env)


class MachineSpec(_Model):
    """`[machines.NAME]`: where units run: launcher, shards, interpreter, expected device, peaks.

    Unset keys keep what tile.toml says (`[launcher]`, `[runner] python`, `[machine]`).
    """

    description: str | None = None
    launcher: LauncherKind | None = None
    shards: int | None = Field(default=None, ge=1)
    partition: _Text | None = None
    time_limit: _Text | None = None
    gres: _Text | None = None
    extra_args: _List = []
    python: _Text | None = None
    device_kind: _Text | None = None
    """The device kind this machine must have (`tile device` shows it); a unit that ran on
    another is not counted as done."""
    peak_bandwidth_gbps: float | None = Field(default=None, gt=0)
    peak_tflops: dict[_Text, Annotated[float, Field(gt=0)]] = {}
    l2_bytes: int | None = Field(default=None, ge=1)
    env: dict[str, str] = {}

    @field_validator("time_limit")
    @classmethod
    def _slurm_time(cls, value: str | None) -> str | None:
        if value is not None and not _SLURM_TIME_RE.fullmatch(value):
            raise ValueError("must be a SLURM time such as `30`, `2:00:00` or `1-12:00:00`")
        return value

    @field_validator("extra_args")
    @classmethod
    def _one_flag_each(cls, args: list[str]) -> list[str]:
        for arg in args:
            if not arg.startswith("-"):
                raise ValueError(f"holds `{arg}`: each entry is one srun flag, e.g. `--qos=high`")
        return args

    @field_validator("env")
    @classmethod
    def _env_names(cls, env: dict[str, str]) -> dict[str, str]:
        return _check_env(env)


class BudgetSpec(_Model):
    """`[budget]`: what the whole plan may cost; `tile campaign plan|run` refuse more."""

    wall_time: _Seconds | None = None
    """Seconds, or a duration such as `20m`: the estimated wall time of every unit together."""
    max_cases: int | None = Field(default=None, ge=1)
    """Case runs (cases x variants x machines)."""


def _smoke_bench() -> BenchPatch:
    return BenchPatch(warmup_runs=1, min_runs=5, max_runs=20, min_time=0.0, max_time=0.05, rounds=1)


class SmokeSpec(_Model):
    """`[smoke]`: `--smoke` runs this many cases per kernel with minimal sampling.

    `bench` keys given here replace the defaults one by one (5-20 samples, at most 0.05 s each:
    five samples is the fewest a comparison judges).
    """

    cases_per_kernel: int = Field(default=1, ge=1)
    bench: BenchPatch = Field(default_factory=_smoke_bench)


class CompareSpec(_Model):
    """`[compare]`: which variant the others are compared with (default: the first)."""

    baseline: _Text | None = None


class CampaignSpec(_Model):
    """A campaign file (`campaigns/NAME.toml`) or a `[campaigns.NAME]` table of tile.toml."""

    description: str | None = None
    select: SelectSpec = SelectSpec()
    variants: dict[str, VariantSpec] = {}
    """Empty: one variant, `default`, with no overrides."""
    perturb: dict[str, dict[str, str]] = {}
    """`[perturb.VAR]` label = value: every variant runs once per value of each variable."""
    machines: dict[str, MachineSpec] = {}
    """Empty: one machine, `local`, as tile.toml configures it."""
    budget: BudgetSpec = BudgetSpec()
    smoke: SmokeSpec = SmokeSpec()
    compare: CompareSpec = CompareSpec()

    @field_validator("variants")
    @classmethod
    def _variant_names(cls, variants: dict[str, VariantSpec]) -> dict[str, VariantSpec]:
        _check_names(variants, "variant")
        return variants

    @field_validator("machines")
    @classmethod
    def _machine_names(cls, machines: dict[str, MachineSpec]) -> dict[str, MachineSpec]:
        _check_names(machines, "machine")
        return machines

    @field_validator("perturb")
    @classmethod
    def _perturbations(cls, perturb: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
        _check_env(dict.fromkeys(perturb, ""))
        for name, values in perturb.items():
            if not values:
                raise ValueError(f"`{name}` lists no values: give at least one `label = value`")
            _check_names(values, f"value of `{name}`")
        return perturb
