"""A long run's JSON Lines are read one line at a time: `tile schema-check` of a 1.24 GB
`events.jsonl` ran out of memory reading it whole. Real files, memory traced while reading;
the files here are megabytes, and what is measured is that the peak stays a small part of the
file, not a time."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from pathlib import Path

import tile_artifacts as ta
from tile_artifacts.check import check_path

LINES = 80_000


def _grow_events(run_dir: Path, lines: int = LINES) -> int:
    """Append `lines` copies of the run's first event to its `events.jsonl`; its new size."""
    events = run_dir / ta.EVENTS_JSONL
    first = events.read_text().splitlines()[0]
    with events.open("a") as f:
        f.write((first + "\n") * lines)
    return events.stat().st_size


def _peak(work: Callable[[], object]) -> int:
    """The most memory Python held at once while `work` ran, in bytes."""
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_schema_check_of_a_large_events_file_holds_a_fraction_of_it(run_dir: Path) -> None:
    size = _grow_events(run_dir)
    problems: list[ta.check.Problem] = []
    peak = _peak(lambda: problems.extend(check_path(run_dir)))
    assert peak < size / 4, (peak, size)
    # The file grew after the manifest was written; that, and only that, is reported.
    assert problems and {p.file for p in problems} == {ta.EVENTS_JSONL}


def test_iter_jsonl_reads_a_large_file_one_line_at_a_time(run_dir: Path) -> None:
    # 2.5 MB: iter_jsonl's peak is ~10 KB whatever the size (schema-check's above holds ~2 MB
    # of its own, hence its 20 MB file), and reading the file whole would hold all of it.
    size = _grow_events(run_dir, LINES // 8)
    counted = [0]

    def count() -> None:
        for record in ta.iter_jsonl(run_dir / ta.EVENTS_JSONL):
            assert isinstance(record, ta.EventRecord)
            counted[0] += 1

    assert _peak(count) < size / 4
    assert counted[0] == LINES // 8 + 2  # the run's own two events, then the copies
