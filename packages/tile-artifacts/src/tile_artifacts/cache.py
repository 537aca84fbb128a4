"""The persistent compile cache's diagnostics (`jax-cache.json`): the cache before and after
each runner process, every hit, miss and entry not stored, and cold/warm pairs of cases."""

from __future__ import annotations

from tile_artifacts._diagnostics import (
    CacheEvent,
    CacheEventKind,
    CacheMissCode,
    CacheProcess,
    CacheSnapshot,
    ColdWarmCase,
    JaxCacheDoc,
    ProcessRole,
)

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
