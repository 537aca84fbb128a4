"""Run directory layout: well-known file names, path rules, kinds, media types, hashing."""

from __future__ import annotations

import errno
import functools
import hashlib
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import BinaryIO, Final

from tile_artifacts._documents import ArtifactKind

__all__ = [
    "CAMPAIGN_JSON",
    "CAMPAIGN_LAYOUT",
    "CAMPAIGN_PLAN_JSON",
    "CASES_JSONL",
    "RESOLVED_CAMPAIGN_JSON",
    "RUN_LAYOUT",
    "UNITS_DIR",
    "COMMANDS_JSONL",
    "Layout",
    "COMPARISONS_JSON",
    "EVENTS_JSONL",
    "INCOMPLETE_REASON",
    "JAX_CACHE_JSON",
    "MANIFEST_JSON",
    "METRICS_JSONL",
    "REPORT_JSON",
    "REQUIRED_FILES",
    "SUMMARY_MD",
    "default_description",
    "NotRegularFileError",
    "kind_for",
    "media_type_for",
    "open_regular",
    "relative_path_problem",
    "run_files",
    "sha256_file",
]

MANIFEST_JSON: Final = "artifact_manifest.json"
REPORT_JSON: Final = "report.json"
SUMMARY_MD: Final = "summary.md"
EVENTS_JSONL: Final = "events.jsonl"
METRICS_JSONL: Final = "metrics.jsonl"
COMMANDS_JSONL: Final = "commands/commands.jsonl"
CASES_JSONL: Final = "cases.jsonl"
COMPARISONS_JSON: Final = "comparisons.json"
JAX_CACHE_JSON: Final = "diagnostics/jax_cache.json"
REQUIRED_FILES: Final = (MANIFEST_JSON, REPORT_JSON, SUMMARY_MD, EVENTS_JSONL, METRICS_JSONL)
CAMPAIGN_JSON: Final = "campaign.json"
CAMPAIGN_PLAN_JSON: Final = "plan.json"
RESOLVED_CAMPAIGN_JSON: Final = "config/resolved_campaign.json"
UNITS_DIR: Final = "units"
INCOMPLETE_REASON: Final = (
    "checkpoint of a run still writing: it was killed (SIGKILL, lost node) or is still running"
)


@dataclass(frozen=True)
class Layout:
    """What a directory of artifacts must hold: a run directory, or a campaign directory.

    `primary` is the document whose envelope the manifest must agree with; files under a
    `nested` directory are not the manifest's business (each unit there has its own).
    `case_log` is the JSON Lines file of cases finished since the primary report was last
    rewritten (a run directory's `cases.jsonl`; optional, runs before it have none).
    """

    required: tuple[str, ...]
    primary: str
    documents: Mapping[str, str] = field(default_factory=dict[str, str])
    nested: tuple[str, ...] = ()
    case_log: str | None = None


RUN_LAYOUT: Final = Layout(
    required=REQUIRED_FILES,
    primary=REPORT_JSON,
    documents={
        REPORT_JSON: "tile.report",
        MANIFEST_JSON: "tile.artifact_manifest",
        COMPARISONS_JSON: "tile.comparison",
        JAX_CACHE_JSON: "tile.jax_cache",
    },
    case_log=CASES_JSONL,
)
CAMPAIGN_LAYOUT: Final = Layout(
    required=(
        MANIFEST_JSON,
        CAMPAIGN_JSON,
        CAMPAIGN_PLAN_JSON,
        SUMMARY_MD,
        EVENTS_JSONL,
        METRICS_JSONL,
        RESOLVED_CAMPAIGN_JSON,
    ),
    primary=CAMPAIGN_JSON,
    documents={
        CAMPAIGN_JSON: "tile.campaign",
        CAMPAIGN_PLAN_JSON: "tile.campaign_plan",
        MANIFEST_JSON: "tile.artifact_manifest",
    },
    nested=(UNITS_DIR,),
)

_DESCRIPTIONS: Final = {
    MANIFEST_JSON: "every file of the run with size and sha256 (written last)",
    REPORT_JSON: "run report: cases with raw samples, metrics, failures, findings",
    SUMMARY_MD: "human summary: status, device, headline table, failures, artifact map",
    EVENTS_JSONL: "structured events, appended as they happened",
    METRICS_JSONL: "one metric per line (long form)",
    CASES_JSONL: "each case the moment it finished (report.json is rewritten only now and then)",
    COMMANDS_JSONL: "every child process: args, cwd, redacted environment, status, times",
    COMPARISONS_JSON: "comparison against a baseline",
    JAX_CACHE_JSON: "JAX compilation cache before/after the run, misses with their reasons",
    "config/resolved_tool.json": "resolved configuration with every value's origin",
    "config/environment.json": "the environment variables `[telemetry] env` records, redacted",
    "telemetry/clocks.json": "GPU clocks, temperature and throttle reasons sampled during the run",
    CAMPAIGN_JSON: "campaign report: units, attempts, estimated vs actual time, variants",
    CAMPAIGN_PLAN_JSON: "campaign plan: every unit, its cases and estimated time",
    RESOLVED_CAMPAIGN_JSON: "the campaign as checked, with every unit's resolved settings",
}
_MEDIA_TYPES: Final = {
    ".json": "application/json",
    ".jsonl": "application/x-ndjson",
    ".md": "text/markdown",
    ".log": "text/plain",
    ".txt": "text/plain",
    ".toml": "application/toml",
    ".csv": "text/csv",
    ".html": "text/html",
    ".hlo": "text/plain",
    ".mlir": "text/plain",
    ".py": "text/x-python",
    ".parquet": "application/vnd.apache.parquet",
}
_TOP_KINDS: Final[dict[str, ArtifactKind]] = {
    REPORT_JSON: "report",
    SUMMARY_MD: "summary",
    EVENTS_JSONL: "events",
    METRICS_JSONL: "metrics",
    COMPARISONS_JSON: "comparison",
    CAMPAIGN_JSON: "report",
}
_DIR_KINDS: Final[dict[str, ArtifactKind]] = {
    "commands": "commands",
    "config": "config",
    "logs": "log",
    "outputs": "output",
    "comparisons": "comparison",
}


@functools.lru_cache(maxsize=256)
def relative_path_problem(path: str) -> str | None:
    """Say why `path` is not a clean run-relative path, or None when it is (remembered: a
    long run's metrics name `report.json` 50,000 times)."""
    if not path or path == ".":
        return "empty path"
    if PurePosixPath(path).is_absolute() or PureWindowsPath(path).is_absolute() or path[:1] == "\\":
        return f"absolute path `{path}` where `artifact_relative` is claimed"
    if ".." in PurePosixPath(path.replace("\\", "/")).parts:
        return f"path `{path}` leaves the run directory (`..`)"
    return None


def kind_for(relpath: str) -> ArtifactKind:
    """Artifact kind of a run-relative path, from the standard layout."""
    if relpath in _TOP_KINDS:
        return _TOP_KINDS[relpath]
    top = relpath.split("/", 1)[0]
    if top in _DIR_KINDS and "/" in relpath:
        return _DIR_KINDS[top]
    if relpath.startswith("baseline") and relpath.endswith(".json"):
        return "baseline"
    return "other"


def media_type_for(relpath: str) -> str:
    """Media type from the file extension; unknown ones are application/octet-stream."""
    return _MEDIA_TYPES.get(PurePosixPath(relpath).suffix.lower(), "application/octet-stream")


def default_description(relpath: str) -> str | None:
    """Description of a well-known file of the run directory."""
    if relpath in _DESCRIPTIONS:
        return _DESCRIPTIONS[relpath]
    if relpath.startswith("logs/") and relpath.endswith(".stderr.log"):
        return "stderr of a runner process"
    return None


class NotRegularFileError(OSError):
    """Raised by `open_regular` for a named pipe, device or socket: reading one can block
    forever (a FIFO nobody writes) or never end (`/dev/zero`)."""


def _special_kind(mode: int) -> str:
    """What a non-regular, non-directory file is, in words."""
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def open_regular(path: Path) -> BinaryIO:
    """Open `path` for reading in binary, refusing anything but a regular file.

    The file is opened without blocking (so a FIFO with no writer does not hang the open) and
    judged by `fstat` of what was opened, not by an earlier `stat` that a rename could
    outdate. A directory raises IsADirectoryError, a pipe, device or socket
    NotRegularFileError (its `strerror` says which).
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
        if not stat.S_ISREG(mode):
            raise NotRegularFileError(errno.EINVAL, f"is {_special_kind(mode)}", str(path))
        # Reads of a regular file never block; O_NONBLOCK is cleared all the same.
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def sha256_file(path: Path, limit: int | None = None) -> tuple[int, str]:
    """Size in bytes and sha256 hex digest of a regular file (of its first `limit` bytes), in
    chunks; anything else raises as `open_regular` does."""
    digest = hashlib.sha256()
    size = 0
    with open_regular(path) as f:
        while chunk := f.read(1 << 20 if limit is None else min(1 << 20, limit - size)):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


def run_files(run_dir: Path) -> tuple[list[str], list[str]]:
    """Run-relative posix paths of regular files, and of anything else (links, fifos), sorted."""
    regular: list[str] = []
    other: list[str] = []
    for root, dirs, names in os.walk(run_dir):
        base = Path(root)
        for name in [*names, *dirs]:
            full = base / name
            try:
                mode = full.lstat().st_mode
            except FileNotFoundError:  # removed while we walked
                continue
            rel = full.relative_to(run_dir).as_posix()
            if stat.S_ISREG(mode):
                regular.append(rel)
            elif not stat.S_ISDIR(mode):
                other.append(rel)
    return sorted(regular), sorted(other)
