"""`tile cache info|clear`: JAX's persistent compilation cache directory, looked at and emptied.

Only what JAX and tile put there is ever removed: executables (`<module>-<sha256>-cache`),
their `-atime` stamps, JAX's lock file and autotune directory, and tile's key-parts index.
A cache directory pointed at the wrong place (a home directory, a project) keeps everything
else, and the user is told what was kept.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Final

from tile_harness._errors import CliError, ExitCode, os_failure
from tile_harness._settings import CacheLocation, compile_cache_location, resolve_config
from tile_protocol.format import format_bytes

if TYPE_CHECKING:
    import tile_artifacts as ta

__all__ = ["ClearResult", "cache_clear", "cache_info", "clear_cache", "snapshot"]

_ENTRY: Final = re.compile(r"^.+-[0-9a-f]{64}-cache$")
_ATIME: Final = re.compile(r"^.+-[0-9a-f]{64}-atime$")
# JAX's eviction lock, its per-fusion GPU autotune results, and tile's index of key parts
# (tile_runner/_cache_log.py): all describe the entries and go with them.
_OWNED_NAMES: Final = frozenset(
    {".lockfile", "xla_gpu_per_fusion_autotune_cache_dir", "tile-key-parts.jsonl"}
)


def _owned(name: str) -> bool:
    return bool(_ENTRY.match(name) or _ATIME.match(name)) or name in _OWNED_NAMES


def _utc(timestamp: float) -> datetime:
    return datetime.fromtimestamp(timestamp, UTC)


def _tree_bytes(path: Path) -> int:
    total = 0
    for root, _, names in os.walk(path):
        for name in names:
            try:
                total += (Path(root) / name).lstat().st_size
            except OSError:
                continue  # removed while we looked
    return total


def snapshot(directory: Path) -> ta.cache.CacheSnapshot:
    """Entries, their bytes, every byte under the directory, oldest and newest entry."""
    import tile_artifacts as ta

    now = datetime.now(UTC)
    if not directory.is_dir():
        return ta.cache.CacheSnapshot(
            taken_at=now, exists=False, entries=0, entry_bytes=0, total_bytes=0
        )
    sizes: list[int] = []
    times: list[float] = []
    try:
        children = list(directory.iterdir())
    except OSError as exc:
        hint = "check its permissions (tile creates it 0700 for you)"
        raise os_failure(f"list the compilation cache `{directory}`", exc, hint=hint) from None
    for child in children:
        if not _ENTRY.match(child.name):
            continue
        try:
            st = child.stat()
        except OSError:
            continue  # removed while we looked
        sizes.append(st.st_size)
        times.append(st.st_mtime)
    return ta.cache.CacheSnapshot(
        taken_at=now,
        exists=True,
        entries=len(sizes),
        entry_bytes=sum(sizes),
        total_bytes=_tree_bytes(directory),
        oldest=_utc(min(times)) if times else None,
        newest=_utc(max(times)) if times else None,
    )


@dataclass
class ClearResult:
    """What `clear_cache` removed and what it left because it was not the cache's."""

    removed_entries: int = 0
    removed_bytes: int = 0
    kept: list[str] = field(default_factory=list[str])


def clear_cache(directory: Path) -> ClearResult:
    """Remove every cache file tile or JAX owns from `directory`; keep the directory (0700)."""
    result = ClearResult()
    if not directory.is_dir():
        return result
    for child in sorted(directory.iterdir()):
        if not _owned(child.name):
            result.kept.append(child.name)
            continue
        is_dir = child.is_dir() and not child.is_symlink()
        try:
            size = _tree_bytes(child) if is_dir else child.lstat().st_size
            if is_dir:
                shutil.rmtree(child)
            else:
                child.unlink()
        except OSError as exc:
            raise CliError(
                f"cannot remove `{child}`: {exc.strerror or exc}",
                hint=f"check the permissions of `{directory}`; nothing else was changed after it",
                code=ExitCode.INFRA,
            ) from None
        result.removed_bytes += size
        result.removed_entries += bool(_ENTRY.match(child.name))
    return result


def _when(value: datetime | None) -> str:
    return "-" if value is None else value.strftime("%Y-%m-%d %H:%M:%S UTC")


def _mode_problem(directory: Path) -> str | None:
    """Why the runner would refuse this directory, as in tile_runner/_compile.py."""
    try:
        st = directory.stat()
    except OSError:
        return None
    if st.st_mode & 0o022:
        return f"it is writable by group or others (mode {st.st_mode & 0o777:o})"
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return f"it belongs to uid {st.st_uid}, not to this user"
    return None


def _describe(location: CacheLocation, snap: ta.cache.CacheSnapshot) -> dict[str, object]:
    return {
        "cache_dir": str(location.path),
        "origin": location.origin,
        "enabled": location.enabled,
        **snap.model_dump(mode="json", exclude={"taken_at"}),
        "refused_because": _mode_problem(location.path) if snap.exists else None,
    }


def cache_info(*, profile: str | None, as_json: bool) -> int:
    """Print where the cache is, why there, and what is in it."""
    location = compile_cache_location(resolve_config(profile, {}))
    snap = snapshot(location.path)
    info = _describe(location, snap)
    if as_json:
        print(json.dumps(info, indent=2))
        return int(ExitCode.OK)
    state = "on" if location.enabled else "off (`[runner] compile_cache = false`)"
    lines = [
        f"cache directory: {location.path}",
        f"origin:          {location.origin}",
        f"compile cache:   {state}",
    ]
    if snap.exists:
        lines += [
            f"entries:         {snap.entries} ({format_bytes(snap.entry_bytes)}; "
            f"{format_bytes(snap.total_bytes)} in all)",
            f"oldest, newest:  {_when(snap.oldest)}, {_when(snap.newest)}",
        ]
    else:
        lines.append("entries:         0 (the directory does not exist yet)")
    print("\n".join(lines))
    if info["refused_because"]:
        why = info["refused_because"]
        print(f"warning: runners will not use this cache: {why}", file=sys.stderr)
        print(f"hint: run `chmod 700 {location.path}`", file=sys.stderr)
    return int(ExitCode.OK)


def _confirm(location: CacheLocation, snap: ta.cache.CacheSnapshot) -> bool:
    if not sys.stdin.isatty():
        raise CliError(
            f"refusing to clear `{location.path}` without a confirmation (stdin is not a terminal)",
            hint="pass `--yes` to clear it: `tile cache clear --yes`",
        )
    print(f"Remove {snap.entries} compiled executables ({format_bytes(snap.total_bytes)}) "
          f"from {location.path}? [y/N] ", end="", file=sys.stderr, flush=True)  # fmt: skip
    answer = sys.stdin.readline().strip().lower()
    return answer in ("y", "yes")


def cache_clear(*, profile: str | None, yes: bool, as_json: bool) -> int:
    """Empty the cache directory, after asking unless `--yes` (0 also when the user declines)."""
    location = compile_cache_location(resolve_config(profile, {}))
    before = snapshot(location.path)
    result = ClearResult()
    if before.total_bytes > 0:
        if not yes and not _confirm(location, before):
            print("nothing removed", file=sys.stderr)
            return int(ExitCode.OK)
        result = clear_cache(location.path)
    done = {
        "cache_dir": str(location.path),
        "origin": location.origin,
        "removed_entries": result.removed_entries,
        "removed_bytes": result.removed_bytes,
        "kept": result.kept,
    }
    if as_json:
        print(json.dumps(done, indent=2))
    else:
        print(f"removed {result.removed_entries} entries ({format_bytes(result.removed_bytes)}) "
              f"from {location.path}")  # fmt: skip
    if result.kept:
        shown = ", ".join(result.kept[:5]) + (" ..." if len(result.kept) > 5 else "")
        print(f"kept {len(result.kept)} file(s) that are not JAX cache files: {shown}",
              file=sys.stderr)  # fmt: skip
    return int(ExitCode.OK)
