"""Shared pieces of Artifact Format v1: closed value sets, the record base, envelope, device."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, ClassVar, Final, Literal, cast, get_args

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    StringConstraints,
    ValidationInfo,
    model_validator,
)

__all__ = [
    "MODE_KEY",
    "RUN_ID_PATTERN",
    "SCHEMA_VERSION",
    "STATUSES",
    "STDERR_EXCERPT_LIMIT",
    "Aggregation",
    "ArtifactModel",
    "Basis",
    "BasisSetting",
    "Bound",
    "Context",
    "DeviceRecord",
    "Envelope",
    "FailureId",
    "Judgement",
    "Level",
    "PeakSource",
    "Peaks",
    "Producer",
    "RunInfo",
    "Status",
    "StopReason",
    "Timer",
    "Unit",
    "UtcDatetime",
    "WorkSource",
    "failure_id",
    "utc_now",
]

SCHEMA_VERSION: Final = 1
RUN_ID_PATTERN: Final = r"^[a-z][a-z0-9-]*-[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}$"
# Failures carry only the tail of stderr; the whole text lives in a log file referenced by path.
STDERR_EXCERPT_LIMIT: Final = 8000

Status = Literal[
    "success",
    "partial",
    "failed",
    "skipped",
    "unsupported",
    "dry_run",
    "interrupted",
    "timed_out",
    "invalid",
    "incomplete",
]
STATUSES: Final[tuple[Status, ...]] = get_args(Status)
MEASURED: Final[frozenset[Status]] = frozenset({"success", "partial"})
"""Case statuses whose timings are worth comparing (not, e.g., a case whose check failed)."""
Timer = Literal["cupti", "wall", "batched"]
StopReason = Literal["precision", "max_time", "max_runs"]
Bound = Literal["memory-bound", "compute-bound", "latency-bound", "unknown"]
PeakSource = Literal["config", "builtin", "calibrated"]
WorkSource = Literal["declared", "cost_analysis"]
Unit = Literal["s", "ms", "us", "bytes", "count", "ratio", "percent", "GB/s", "TFLOP/s"]
Aggregation = Literal["median", "mean", "min", "max", "stdev", "exact"]
Judgement = Literal["improvement", "neutral", "regression", "inconclusive", "not_comparable"]
# What a comparison row judged: the kernel's own times, or its times relative to its reference.
Basis = Literal["absolute", "relative"]
BasisSetting = Literal["auto", "absolute", "relative"]
Level = Literal["debug", "info", "warning", "error"]

# Validation context key: "check" (schema-check: every key present, no unknown key) or "read"
# (readers: unknown keys from a newer v1 producer are dropped, missing optional keys become null).
MODE_KEY: Final = "tile_artifacts_mode"


def _z_suffix(value: object) -> object:
    if isinstance(value, str) and not value.endswith("Z"):
        raise ValueError("timestamp must be UTC ISO-8601 ending in `Z`, e.g. 2025-01-31T12:00:00Z")
    return value


def _utc(value: datetime) -> datetime:
    if value.utcoffset() != timedelta(0):
        raise ValueError("timestamp must be in UTC")
    # The UTC singleton is what makes pydantic serialize the offset as `Z`.
    return value.astimezone(UTC)


# Not strict: in JSON a timestamp is a string, which strict mode would refuse.
UtcDatetime = Annotated[
    AwareDatetime, Strict(False), BeforeValidator(_z_suffix), AfterValidator(_utc)
]
RunId = Annotated[str, StringConstraints(pattern=RUN_ID_PATTERN)]
FailureId = Annotated[str, StringConstraints(pattern=r"^F[0-9]{3,}$")]


def utc_now() -> datetime:
    """Return the current time as an aware UTC datetime."""
    return datetime.now(UTC)


def failure_id(n: int) -> str:
    """Return the failure id for the n-th failure (1-based): `F001`, `F002`, ..."""
    return f"F{n:03d}"


class ArtifactModel(BaseModel):
    """Base of every record: frozen, strict, unknown keys rejected, every key written."""

    # strict: "1" is not an int and 1.0 not a bool, in files and in Python alike.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
    # Optional keys added to schema version 1 after files without them were written: such
    # files stay valid (the key reads as its default); every other key must be present.
    added_keys: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _key_policy(cls, data: Any, info: ValidationInfo) -> Any:
        context: object = info.context
        mode = (
            cast("dict[str, object]", context).get(MODE_KEY) if isinstance(context, dict) else None
        )
        if mode is None or not isinstance(data, dict):
            return data
        fields = cast("dict[object, object]", data)
        if mode == "check":
            missing = [
                name
                for name in cls.model_fields
                if name not in fields and name not in cls.added_keys
            ]
            if missing:
                raise ValueError(
                    f"missing key(s) {', '.join(missing)}: an unknown value is null, never missing"
                )
            return fields
        return {key: value for key, value in fields.items() if key in cls.model_fields}


class Producer(ArtifactModel):
    """Which tool wrote the document, and from which source tree (null when git is unknown)."""

    tool_name: str
    tool_version: str
    git_head: str | None = None
    dirty: bool | None = None
    dirty_diff_sha256: str | None = None


class RunInfo(ArtifactModel):
    """The run a document belongs to."""

    run_id: RunId
    created_at: UtcDatetime
    status: Status
    status_reason: str | None = None
    output_directory: str


class Envelope(ArtifactModel):
    """The header every JSON document starts with; readers peek at it before the full model."""

    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)

    schema_name: str
    schema_version: int
    producer: Producer
    run: RunInfo


class Context(ArtifactModel):
    """Where and how the run happened."""

    added_keys: ClassVar[frozenset[str]] = frozenset({"pinned_cpu", "paired_with"})

    project_root: str | None = None
    cwd: str | None = None
    hostname: str | None = None
    platform: str | None = None
    python: str | None = None
    jax_version: str | None = None
    jaxlib_version: str | None = None
    xla_flags: str | None = None
    pinned_cpu: int | None = None  # the core the runner was pinned to (`[runner] pin_cpu`)
    slurm_job_id: str | None = None
    argv: list[str] = Field(default_factory=list)
    seed: int | None = None
    # The run whose rounds took turns with this run's, one at a time (`tile bench --against`).
    paired_with: str | None = None


class Peaks(ArtifactModel):
    """Roofline peaks used: bandwidth, TFLOP/s by dtype, and where they came from."""

    bandwidth_gbps: float | None = None
    tflops: dict[str, float] = Field(default_factory=dict)
    source: PeakSource | None = None


class DeviceRecord(ArtifactModel):
    """The device the cases ran on."""

    added_keys: ClassVar[frozenset[str]] = frozenset({"model", "l2_bytes"})

    backend: str | None = None
    device_kind: str | None = None
    model: str | None = None
    """On a CPU, its model name and core count (`cpu` is every CPU's kind); None on an
    accelerator and in runs made before tile recorded it."""
    count: int | None = None
    memory_bytes: int | None = None
    l2_bytes: int | None = None
    """The last-level cache a warm sample may find its data in: `[machine] l2_bytes`, else
    the runner's table of known GPUs; None on a CPU, an unknown device, and in older runs."""
    driver: str | None = None
    peaks: Peaks = Field(default_factory=Peaks)
