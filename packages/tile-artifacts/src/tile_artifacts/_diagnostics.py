"""`diagnostics/jax_cache.json` (`tile.jax_cache`): JAX's compilation cache around one run.

Written by `tile bench --cache-report`: what the persistent cache held before and after, every
hit and miss with the reason the miss was a miss, and with `--cold-process` how much a filled
cache saves a fresh process (time to its first result, compile seconds per case).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from tile_artifacts._base import ArtifactModel, Producer, RunInfo, UtcDatetime

__all__ = [
    "CacheEvent",
    "CacheEventKind",
    "CacheMissCode",
    "CacheProcess",
    "CacheSnapshot",
    "ColdWarmCase",
    "JaxCacheDoc",
    "ProcessRole",
]

CacheEventKind = Literal["miss", "hit", "not_stored"]
# new_program: nothing of that program was cached; key_changed: it was, under another key
# (`differs` names the key parts that changed); evicted: tile saw it written, it is gone;
# unreadable: the entry is there but JAX could not use it.
CacheMissCode = Literal["new_program", "key_changed", "evicted", "unreadable"]
# run: the run's own runners; cold/warm: --cold-process's first (empty cache) and second.
ProcessRole = Literal["run", "cold", "warm"]


class CacheSnapshot(ArtifactModel):
    """The cache directory at one moment: executables (`*-cache` files), bytes, ages."""

    taken_at: UtcDatetime
    exists: bool
    entries: int = Field(ge=0)
    entry_bytes: int = Field(ge=0)
    total_bytes: int = Field(ge=0)
    """Every file under the directory: entries, JAX's bookkeeping, autotune results."""
    oldest: UtcDatetime | None = None
    newest: UtcDatetime | None = None


class CacheEvent(ArtifactModel):
    """One lookup in the persistent cache by one XLA module, as JAX's log reported it."""

    process: ProcessRole
    case_id: str | None = None
    event: CacheEventKind
    module: str
    key: str | None = None
    code: CacheMissCode | None = None
    reason: str | None = None
    differs: list[str] = Field(default_factory=list)
    """Key parts that changed against the nearest cached entry (JAX's names: `XLA flags`...)."""


class CacheProcess(ArtifactModel):
    """One runner process of `--cold-process`: how long to its first result, what it found."""

    role: ProcessRole
    command_id: str | None = None
    time_to_first_result_s: float | None = None
    wall_s: float | None = None
    hits: int = 0
    misses: int = 0
    cache_after: CacheSnapshot


class ColdWarmCase(ArtifactModel):
    """A case compiled by the cold process (empty cache) and again by the warm one."""

    case_id: str
    cold_compile_s: float | None = None
    warm_compile_s: float | None = None
    compile_saved_s: float | None = None
    cold_cache_hit: bool | None = None
    warm_cache_hit: bool | None = None


class JaxCacheDoc(ArtifactModel):
    """`diagnostics/jax_cache.json`: the persistent compilation cache around a run."""

    schema_name: Literal["tile.jax_cache"] = "tile.jax_cache"
    schema_version: Literal[1] = 1
    producer: Producer
    run: RunInfo
    cache_dir: str
    origin: str
    cold_process: bool
    before: CacheSnapshot
    after: CacheSnapshot
    hit_count: int = 0
    miss_count: int = 0
    events: list[CacheEvent] = Field(default_factory=list[CacheEvent])
    processes: list[CacheProcess] = Field(default_factory=list[CacheProcess])
    cases: list[ColdWarmCase] = Field(default_factory=list[ColdWarmCase])
