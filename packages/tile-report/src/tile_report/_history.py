"""The run history: every bench run's per-case medians in one SQLite file, series per case.

SQLite from the standard library: one file, no server, safe for several writers. Each
connection waits up to `BUSY_TIMEOUT_S` for a lock and the file runs in WAL mode, so readers
never block the writer of a bench run that just finished. A `schema_version` table says which
layout the file has. A file that is not a history (or is damaged, or was written by a newer
tile) is refused with an error before anything is written to it: the history is the only
copy of old numbers, so nothing here ever rewrites or replaces a file it cannot read.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Generator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final, Self

import tile_artifacts as ta
from tile_report._errors import HistoryBusyError, HistoryError
from tile_report._git import GitInfo
from tile_report._history_rows import (
    Added,
    Point,
    Series,
    SeriesOp,
    checked_median,
    matches,
    measured_cases,
    read_config,
    result_rows,
    run_row,
)
from tile_report._history_schema import SCHEMA_VERSION, lay_out, missing_additions, upgrade

__all__ = ["BUSY_TIMEOUT_S", "DEFAULT_PATH", "SCHEMA_VERSION", "History"]

DEFAULT_PATH: Final = ".tile/history.sqlite"
BUSY_TIMEOUT_S: Final = 30.0

_SELECT: Final = """
    SELECT x.case_id, x.kernel, r.device_kind, r.device_model, x.timer, x.cold, x.op, x.impl,
           x.op_baseline, r.run_id, r.created_at, r.git_commit, r.commit_time,
           r.commit_subject, r.branch, r.dirty, x.median_s, x.ci_low_s, x.ci_high_s, x.n,
           x.config
    FROM results x JOIN runs r USING (run_id)
    ORDER BY x.case_id, COALESCE(r.commit_time, r.created_at), r.created_at"""

_SeriesKey = tuple[str, str, str | None, str | None, str | None, bool | None]
"""case id, kernel, device kind, device model, timer, cold."""


class History:
    """The history database at `path`, opened (and created when `create`) and checked."""

    def __init__(self, path: str | Path, *, create: bool = True) -> None:
        self.path = Path(path)
        if not self.path.exists():
            if not create:
                raise HistoryError(
                    f"no run history at `{self.path}`",
                    hint="`tile bench` records every run there (unless `[history] enabled = "
                    "false`); `tile history add RUN...` records existing run directories",
                )
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise self._error(exc) from None
        with self._translate():
            self._db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        try:
            with self._translate():
                self._prepare()
        except BaseException:
            self._db.close()
            raise

    def close(self) -> None:
        """Close the connection (a WAL checkpoint folds the log back into the file)."""
        self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------- opening

    def _prepare(self) -> None:
        """Check the file is a history this tile can read; lay out an empty one; WAL on."""
        db = self._db
        db.execute("PRAGMA foreign_keys = ON")
        if self._check_version() is None:
            db.execute("BEGIN IMMEDIATE")
            try:
                # Another process may have laid it out while this one waited for the lock.
                if self._check_version() is None:
                    lay_out(db, SCHEMA_VERSION)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        elif missing_additions(db):
            self._upgrade()
        self._wal()

    def _wal(self) -> None:
        """Switch the file to WAL (kept in the file: the first switch holds for every opener).

        The switch takes the file's exclusive lock, and where it meets another opener's read
        or switch SQLite answers "locked" at once instead of waiting (seen with ten processes
        opening a new file together, 2026-12-07): it is tried again until `BUSY_TIMEOUT_S`.
        """
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        while True:
            try:
                if self._db.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                    self._db.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
            time.sleep(0.01)

    def _upgrade(self) -> None:
        """Give a file an older tile wrote the tables and columns added since (empty)."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            upgrade(db)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def _check_version(self) -> int | None:
        """The schema version; None for an empty file; HistoryError for anything else."""
        names = {row[0] for row in self._db.execute("SELECT name FROM sqlite_master")}
        if not names:
            return None
        if "schema_version" not in names:
            raise HistoryError(
                f"`{self.path}` is an SQLite file but not a tile run history "
                "(it has no `schema_version` table); it was left as it is",
                hint="point `[history] path` (or `--db`) at another file",
            )
        if lost := sorted({"runs", "results"} - names):  # dropped by hand: not "already there"
            return self._not_history(f"its `{lost[0]}` table is missing")
        row = self._db.execute("SELECT MAX(version) FROM schema_version").fetchone()
        version = row[0] if row else None
        if version is None:
            return None if names == {"schema_version"} else self._not_history("no version")
        if version > SCHEMA_VERSION:
            raise HistoryError(
                f"`{self.path}` holds history schema {version}, newer than the {SCHEMA_VERSION} "
                "this tile reads; it was left as it is",
                hint="upgrade tile (`pip install -U tile-cli tile-report`), or point "
                "`[history] path` at another file",
            )
        return int(version)

    def _not_history(self, why: str) -> int:
        raise HistoryError(
            f"`{self.path}` is not a usable tile run history ({why}); it was left as it is",
            hint=f"move it aside (`mv {self.path} {self.path}.broken`) and rebuild it with "
            "`tile history add .tile/runs/*`",
        )

    def _error(self, exc: Exception) -> HistoryError:
        text = str(exc)
        if isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text):
            return HistoryBusyError(
                f"`{self.path}` stayed locked by another process for {BUSY_TIMEOUT_S:g} s",
                hint="another tile is writing the history; run the command again",
            )
        if isinstance(exc, OSError) or "unable to open" in text:
            return HistoryError(
                f"cannot open the run history `{self.path}`: {text}",
                hint="check that the directory exists and is writable, or set `[history] path`",
            )
        return HistoryError(
            f"`{self.path}` is not a readable tile run history ({text}); it was left as it is",
            hint=f"move it aside (`mv {self.path} {self.path}.broken`) and rebuild it with "
            "`tile history add .tile/runs/*`",
        )

    @contextmanager
    def _translate(self) -> Generator[None]:
        """sqlite3's errors as HistoryError, which names the file and says what to do."""
        try:
            yield
        except HistoryError:
            raise
        except (sqlite3.Error, OSError) as exc:
            raise self._error(exc) from None

    # ---------------------------------------------------------------- writing

    def add_run(self, report: ta.Report, *, git: GitInfo, run_dir: str | None = None) -> Added:
        """Record a run's measured cases in one transaction; a run already there is left alone."""
        cases = measured_cases(report)
        run = report.run
        with self._translate():
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                if db.execute("SELECT 1 FROM runs WHERE run_id = ?", (run.run_id,)).fetchone():
                    db.execute("ROLLBACK")
                    return Added(run.run_id, 0, already=True)
                if cases:
                    self._insert(report, cases, git, run_dir)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        return Added(run.run_id, len(cases))

    def _insert(
        self, report: ta.Report, cases: list[ta.CaseRecord], git: GitInfo, run_dir: str | None
    ) -> None:
        run_id = report.run.run_id
        _insert_rows(self._db, "runs", [run_row(report, git, run_dir)])
        _insert_rows(self._db, "results", result_rows(run_id, cases))
        kernels = [
            (run_id, c.case_id, k.name, ta.kernels.label(k), k.stats.median)
            for c in cases
            if c.stats is not None
            for k in c.kernels or []
        ]
        self._db.executemany(
            "INSERT INTO kernels (run_id, case_id, name, label, median_s) VALUES (?, ?, ?, ?, ?)",
            kernels,
        )

    def _kernels(self) -> dict[tuple[str, str], tuple[tuple[str, str, float], ...]]:
        found: dict[tuple[str, str], list[tuple[str, str, float]]] = {}
        for run_id, case_id, name, label, median in self._db.execute(
            "SELECT run_id, case_id, name, label, median_s FROM kernels"
        ):
            found.setdefault((run_id, case_id), []).append((name, label, median))
        return {key: tuple(values) for key, values in found.items()}

    # ---------------------------------------------------------------- reading

    def run_count(self) -> int:
        """How many runs the history holds."""
        with self._translate():
            return int(self._db.execute("SELECT COUNT(*) FROM runs").fetchone()[0])

    def series(
        self,
        *,
        filters: Sequence[str] = (),
        kernels: Sequence[str] = (),
        device: str | None = None,
        branch: str | None = None,
    ) -> list[Series]:
        """Every selected case's series, one per device (kind and model), timer and mode,
        points ordered by commit time (run time for runs without a commit), then run time.
        `device` is a device kind (`cpu`: every CPU) or a CPU's model as recorded."""
        with self._translate():
            rows = self._db.execute(_SELECT).fetchall()
            breakdowns = self._kernels()
        grouped: dict[_SeriesKey, list[Point]] = {}
        ops: dict[_SeriesKey, SeriesOp | None] = {}
        for row in rows:
            case_id, kernel, kind, model, timer, cold, op, impl, base = row[:9]
            run_id, br = row[9], row[14]
            if not matches(case_id, kernel, filters, kernels):
                continue
            if (device is not None and device not in (kind, model)) or (
                branch is not None and br != branch
            ):
                continue
            key = (case_id, kernel, kind, model, timer, None if cold is None else bool(cold))
            point = self._point(row[9:], breakdowns.get((run_id, case_id), ()), case_id)
            grouped.setdefault(key, []).append(point)
            ops[key] = SeriesOp(op, impl, bool(base)) if op and impl else None  # the latest's
        return [
            Series(case_id, kernel, kind, timer, cold, tuple(points), device_model=model,
                   op=ops[(case_id, kernel, kind, model, timer, cold)])
            for (case_id, kernel, kind, model, timer, cold), points in grouped.items()
        ]  # fmt: skip

    def _point(
        self, row: Sequence[Any], kernels: tuple[tuple[str, str, float], ...], case_id: str
    ) -> Point:
        run_id, created, commit, ctime, subject, br, dirty, median, low, high, n, config = row
        median = checked_median(median, path=self.path, run_id=run_id, case_id=case_id)
        ran = read_config(config, path=self.path, run_id=run_id, case_id=case_id)
        dirty = None if dirty is None else bool(dirty)
        return Point(run_id, created, commit, ctime, subject, br, dirty, median, low, high, n,
                     kernels, ran)  # fmt: skip


def _insert_rows(db: sqlite3.Connection, table: str, rows: Sequence[dict[str, object]]) -> None:
    """Insert rows naming their columns: a column a newer tile added later stays NULL."""
    if not rows:
        return
    columns = list(rows[0])
    marks = ", ".join("?" for _ in columns)
    db.executemany(
        f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})",
        [tuple(row[c] for c in columns) for row in rows],
    )
