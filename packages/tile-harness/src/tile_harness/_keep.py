"""`[output] keep = N`: only the N newest run directories stay under `[output] dir`.

The key was accepted and shown by `tile config` but nothing read it, so `.tile/runs` grew
without bound. Only directories tile itself made are removed: a name that is a run id, with
the `events.jsonl` every run directory starts with; anything else there is left alone, and
so is the run just started.
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

    A directory that cannot be removed is skipped (the next run tries again).
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
        try:
            shutil.rmtree(old)
        except OSError:
            continue
        removed.append(old)
    return removed
