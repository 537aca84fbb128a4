"""TileConfig: every section of tile.toml, its defaults and its checks."""

from __future__ import annotations

import re
import types
from typing import Annotated, Any, ClassVar, Literal, Self, Union, get_args, get_origin

from pydantic import BaseModel, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from tile_config._downloads import ArchiveKind, DownloadEntry, check_download_names
from tile_config._dtypes import DTYPE_KEYS, TOLERANCE_KEYS
from tile_config._strict import STRICT

__all__ = [
    "SECTIONS",
    "ArchiveKind",
    "BenchConfig",
    "KernelMode",
    "CompareBasis",
    "CompareConfig",
    "DownloadEntry",
    "HistoryConfig",
    "LauncherConfig",
    "LauncherKind",
    "MachineConfig",
    "OutputConfig",
    "ProfileConfig",
    "ProjectConfig",
    "RunnerConfig",
    "TelemetryConfig",
    "TestConfig",
    "TileConfig",
    "TuneConfig",
    "Timer",
    "annotation_at",
    "is_mapping",
    "is_optional",
    "known_keys",
    "strip_annotation",
]

Timer = Literal["auto", "cupti", "wall", "batched"]
LauncherKind = Literal["local", "slurm"]
CompareBasis = Literal["auto", "absolute", "relative"]
KernelMode = Literal["fwd", "bwd", "fwd_bwd", "all"]  # `[select] modes`: as `--mode`

_Text = Annotated[str, Field(min_length=1)]
_PositiveFloat = Annotated[float, Field(gt=0)]
_PositiveInt = Annotated[int, Field(ge=1)]

# SLURM --time: minutes, min:sec, h:m:s, days-h, days-h:m, days-h:m:s, or unlimited.
_SLURM_TIME_RE = re.compile(r"(\d+-)?\d+(:\d+){0,2}|(?i:unlimited|infinite)")


class _Model(BaseModel):
    """Strict, closed and immutable (`STRICT`)."""

    model_config = STRICT


class ProjectConfig(_Model):
    """`[project]`: where kernels come from."""

    modules: list[_Text] = []
    paths: list[_Text] = []
    plugins: list[_Text] | None = None


class BenchConfig(_Model):
    """`[bench]`: warm-up, adaptive sampling budget and timer."""

    warmup_runs: int = Field(default=3, ge=0, le=10**9)  # 1e20 hung the case until its timeout
    min_runs: int = Field(default=10, ge=1)
    max_runs: int = Field(default=1000, ge=1, le=10**9)  # 1e20 failed later, in the runner
    min_time: float = Field(default=0.0, ge=0)
    max_time: float = Field(default=2.0, gt=0)
    target_precision: float = Field(default=0.0, ge=0, lt=1)
    """The 95% CI half-width of a median, as a fraction, that stops its sampling. 0: 2% on
    a CPU, whose processes of identical code land several percent apart, 1% elsewhere."""
    timer: Timer = "auto"
    cold: bool = False
    batch: int = Field(default=10, ge=1, le=10**9)
    rounds: int = Field(default=1, ge=1, le=100)
    processes: int = Field(default=0, ge=0, le=16)
    """Runner processes that time each case, one after another, each with its share of the
    sampling budget: `compare` then sees how far the same code moves between processes. 0:
    two on a CPU, whose processes of identical code land up to 2x apart, one elsewhere."""
    cases: _Text | None = None
    """A cases file (`--save-cases` writes one), relative to tile.toml: bench, test, tune and
    list run its cases instead of the kernels' declared axes unless `--from` or `--cases`
    says otherwise."""

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        for low, high in (("min_runs", "max_runs"), ("min_time", "max_time")):
            low_value, high_value = getattr(self, low), getattr(self, high)
            if low_value > high_value:
                raise PydanticCustomError(
                    "inconsistent",
                    "{low} ({low_value}) must be <= {high} ({high_value})",
                    {"low": low, "high": high, "low_value": low_value, "high_value": high_value},
                )
        return self


class _BenchPatch(BenchConfig):
    """`[profiles.NAME.bench]`: ranges are checked now, consistency once the profile is applied."""

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        return self


class TestConfig(_Model):
    """`[test]`: input seed and per-dtype tolerance overrides."""

    __test__: ClassVar[bool] = False  # not a pytest test class

    seed: int = Field(default=0, ge=0, lt=2**63)
    tolerances: Annotated[dict[_Text, _PositiveFloat], TOLERANCE_KEYS] = {}
    """Relative L2 error allowed per output dtype name, or `default` for every dtype."""


class RunnerConfig(_Model):
    """`[runner]`: the interpreter, limits and environment of the runner subprocess."""

    python: _Text | None = None
    timeout: _PositiveFloat | None = None
    case_timeout: float = Field(default=300.0, gt=0)
    isolate: bool = False
    env: dict[str, str] = {}
    compile_cache: bool = True
    """JAX's persistent compilation cache: a second run loads executables instead of compiling."""
    jax_cache_dir: _Text | None = None
    """Where that cache lives; default `jax/` in tile's cache directory (`TILE_CACHE_DIR`)."""
    pin_cpu: bool = False

    @field_validator("env")
    @classmethod
    def _env_names(cls, env: dict[str, str]) -> dict[str, str]:
        for name, value in env.items():
            # A blank in a name (`"A B" = "1"`) is refused as `--set runner.env.A B=1` is.
            blank = any(c.isspace() for c in name)
            if not name or "=" in name or "\0" in name or blank or "\0" in value:
                raise ValueError(f"holds `{name}`, which is not a usable environment variable")
        return env


class CompareConfig(_Model):
    """`[compare]`: how `tile compare` and `tile bench --compare` judge; flags win over it."""

    noise_floor: float = Field(default=2.0, ge=0)
    alpha: float = Field(default=0.05, gt=0, lt=1)
    fail_on_inconclusive: bool = False
    allow_missing: bool = False
    """Let a gate pass with cases in one run only (a new kernel, a case left out); else exit 4."""
    basis: CompareBasis = "auto"


class TuneConfig(_Model):
    """`[tune]`: how `tile tune` prunes configurations and where it keeps what it found."""

    eta: int = Field(default=3, ge=2, le=10)
    """Each rung keeps the fastest 1/eta of a case's configurations."""
    min_runs: int = Field(default=5, ge=2)
    """Samples per configuration in the first rung (times eta each rung after)."""
    max_time: float = Field(default=0.05, gt=0)
    """Sampling seconds per configuration in the first rung (times eta each rung after)."""
    rungs: int = Field(default=4, ge=0, le=10)
    """At most this many pruning rungs before the finalists get a full `[bench]` measurement
    (0: none, every configuration gets it: an exhaustive sweep, to check a pruned tune by)."""
    dir: _Text = "tuning"
    """Tuning files (`<dir>/<device>.json`, committed like baselines), relative to the project."""
    budget: _PositiveFloat | None = None
    """Wall seconds a tune may take (`--budget`); rungs get shorter to fit."""
    user_cache: bool = False
    """Also use the machine-wide user cache's `tuning/` (`--user-cache`); off: this project only."""
    tie_floor: float = Field(default=0.0, ge=0)
    """Percent: a finalist slower than the fastest by less than this ties with it, as does one
    the test cannot tell apart from it; ties go to the default, then the simplest. 0: only the
    statistics decide, so a finalist measurably faster wins however small its lead."""


class OutputConfig(_Model):
    """`[output]`: where run directories go and how many to keep."""

    dir: _Text = ".tile/runs"
    keep: _PositiveInt | None = None
    verbose: int = Field(default=0, ge=0, le=3)
    """Like `-v` given this many times (`TILE_VERBOSE`); a `-v` on the command line wins."""


class HistoryConfig(_Model):
    """`[history]`: the SQLite run history that `tile bench` feeds and `tile history` reads."""

    enabled: bool = True
    """Record every bench run's per-case medians at its end."""
    path: _Text = ".tile/history.sqlite"
    """The database file; relative paths hang off the project root."""


DEFAULT_ENV_PATTERNS: tuple[str, ...] = (
    "XLA_*", "JAX_*", "CUDA_*", "NVIDIA_*", "NCCL_*", "TPU_*", "LIBTPU_*", "ROCM_*", "HIP_*",
    "TILE_*", "SLURM_*", "OMP_*", "PYTHONHASHSEED",
)  # fmt: skip
"""Variables that change what a kernel measures: compiler flags, device selection, threads."""


class TelemetryConfig(_Model):
    """`[telemetry]`: what a run records about where it ran, beyond its measurements."""

    clocks: bool = True
    """GPU clocks, temperature and throttle reasons before and after the run (`nvidia-smi`):
    a throttled GPU measures slow, and only a record of its clocks tells that apart."""
    env: list[_Text] = list(DEFAULT_ENV_PATTERNS)
    """Environment variables to record (glob patterns) in `config/environment.json`, secrets
    redacted; `[]` records none. Variables that change what is measured are the default."""
    commands: bool = True
    """Every child process in `commands/commands.jsonl` (args, redacted env, exit status)."""


class MachineConfig(_Model):
    """`[machine]`: roofline peaks and cache size, when the built-in table does not know them."""

    peak_bandwidth_gbps: _PositiveFloat | None = None
    peak_tflops: Annotated[dict[_Text, _PositiveFloat], DTYPE_KEYS] = {}
    l2_bytes: _PositiveInt | None = None


class LauncherConfig(_Model):
    """`[launcher]`: how runners start (here or through SLURM) and how many shards."""

    kind: LauncherKind = "local"
    shards: int = Field(default=1, ge=1)
    partition: _Text | None = None
    time_limit: _Text | None = None
    gres: _Text | None = None
    extra_args: list[str] = []

    @field_validator("time_limit")
    @classmethod
    def _slurm_time(cls, value: str | None) -> str | None:
        if value is not None and not _SLURM_TIME_RE.fullmatch(value):
            raise ValueError("must be a SLURM time such as `30`, `2:00:00` or `1-12:00:00`")
        return value


class ProfileConfig(_Model):
    """`[profiles.NAME]`: partial sections laid over the file by `--profile NAME`."""

    project: ProjectConfig | None = None
    bench: _BenchPatch | None = None
    test: TestConfig | None = None
    runner: RunnerConfig | None = None
    compare: CompareConfig | None = None
    output: OutputConfig | None = None
    history: HistoryConfig | None = None
    machine: MachineConfig | None = None
    launcher: LauncherConfig | None = None
    tune: TuneConfig | None = None
    telemetry: TelemetryConfig | None = None
    downloads: dict[str, DownloadEntry] = {}

    @field_validator("downloads")
    @classmethod
    def _download_names(cls, entries: dict[str, DownloadEntry]) -> dict[str, DownloadEntry]:
        return check_download_names(entries)


class TileConfig(_Model):
    """The whole configuration of tile; every field has a default."""

    project: ProjectConfig = ProjectConfig()
    bench: BenchConfig = BenchConfig()
    test: TestConfig = TestConfig()
    runner: RunnerConfig = RunnerConfig()
    compare: CompareConfig = CompareConfig()
    output: OutputConfig = OutputConfig()
    history: HistoryConfig = HistoryConfig()
    machine: MachineConfig = MachineConfig()
    launcher: LauncherConfig = LauncherConfig()
    tune: TuneConfig = TuneConfig()
    telemetry: TelemetryConfig = TelemetryConfig()
    downloads: dict[str, DownloadEntry] = {}
    profiles: dict[str, ProfileConfig] = {}
    campaigns: dict[str, dict[str, Any]] = {}
    """`[campaigns.NAME]`: kept as written and checked only by `load_campaign`, so that a
    mistake in a campaign breaks `tile campaign`, not every `tile bench`."""

    @field_validator("downloads")
    @classmethod
    def _download_names(cls, entries: dict[str, DownloadEntry]) -> dict[str, DownloadEntry]:
        return check_download_names(entries)


SECTIONS: tuple[str, ...] = tuple(TileConfig.model_fields)
"""Top-level tables of tile.toml, in order."""


def strip_annotation(annotation: Any) -> Any:
    """`Annotated[X, ...] | None` -> X."""
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
        elif origin in (Union, types.UnionType):
            rest = [a for a in get_args(annotation) if a is not type(None)]
            if len(rest) != 1:
                return annotation
            annotation = rest[0]
        else:
            return annotation


def annotation_at(path: tuple[str, ...], root: Any = TileConfig) -> Any | None:
    """The declared type at a dotted path below `root` (TileConfig), or None when none exists."""
    annotation: Any = root
    for part in path:
        bare = strip_annotation(annotation)
        if isinstance(bare, type) and issubclass(bare, BaseModel):
            field = bare.model_fields.get(part)
            if field is None:
                return None
            annotation = field.annotation
        elif get_origin(bare) is dict:
            annotation = get_args(bare)[1]
        else:
            return None
    return annotation


def known_keys(path: tuple[str, ...], root: Any = TileConfig) -> list[str] | None:
    """The keys the table at `path` accepts, or None for free-form tables (env, downloads...)."""
    bare = strip_annotation(annotation_at(path, root))
    if isinstance(bare, type) and issubclass(bare, BaseModel):
        return list(bare.model_fields)
    return None


def is_optional(annotation: Any) -> bool:
    """Whether None is an accepted value of `annotation`."""
    return get_origin(annotation) in (Union, types.UnionType) and type(None) in get_args(annotation)


def is_mapping(path: tuple[str, ...]) -> bool:
    """Whether the key at `path` is a free-form table (`runner.env`, `downloads`, ...)."""
    return get_origin(strip_annotation(annotation_at(path))) is dict
