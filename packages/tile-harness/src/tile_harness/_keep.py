"""`[output] keep = N`: only the N newest run directories stay under `[output] dir`.

The key was accepted and shown by `tile config` but nothing read it, so `.tile/runs` grew
without bound. Only directories tile itself made are removed: a name that is a run id, with
the `events.jsonl` every run directory starts with; anything else there is left alone, and
so is the run just started, and so is every run another process is still writing (its
`ArtifactWriter` holds a lock on it: `tile_artifacts.unless_live`), however old its name.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

__all__ = ["prune_runs"]


def _stamp(run_id: str) -> str:
    """`bench-20250101T120000Z-1a2b3c4d` -> `20250101T120000Z`: when the run started."""
    return run_id.rsplit("-", 2)[-2]


def prune_runs(runs_dir: Path, keep: int, current: Path) -> list[Path]:
    """Remove the oldest run directories of `runs_dir` beyond the `keep` newest; the removed.

    A directory that cannot be removed, or that a live run is writing, is skipped (the next
    run tries again), so overlapping runs may leave more than `keep` for a while.
    """
    import tile_artifacts as ta

    pattern = re.compile(ta.RUN_ID_PATTERN)
    try:
        runs = [
            p
            for p in runs_dir.iterdir()
            if pattern.match(p.name)
            and p.is_dir()
            and not p.is_symlink()
            and (p / ta.EVENTS_JSONL).is_file()
        ]
    except OSError:
        return []
    runs.sort(key=lambda p: (_stamp(p.name), p.name))
    removed: list[Path] = []
    for old in runs[: max(0, len(runs) - keep)]:
        if old.absolute() == current.absolute():
            continue
        if _remove_unless_live(old):
            removed.append(old)
    return removed


def _remove_unless_live(run_dir: Path) -> bool:
    """Delete `run_dir` unless a process is writing it; whether it was deleted."""
    import tile_artifacts as ta

    with ta.unless_live(run_dir) as idle:
        if not idle:
            return False
        try:
            shutil.rmtree(run_dir)
        except OSError:
            return False
    return True
