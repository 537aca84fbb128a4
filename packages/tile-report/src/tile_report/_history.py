"""The run history: every bench run's per-case medians in one SQLite file, series per case.

SQLite from the standard library: one file, no server, safe for several writers. Each
connection waits up to `BUSY_TIMEOUT_S` for a lock and the file runs in WAL mode, so readers
never block the writer of a bench run that just finished. A `schema_version` table says which
layout the file has. A file that is not a history (or is damaged, or was written by a newer
tile) is refused with an error before anything is written to it: the history is the only
copy of old numbers, so nothing here ever rewrites or replaces a file it cannot read.
"""

from __future__ import annotations

import fnmatch
import sqlite3
from collections.abc import Generator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, Self

import tile_artifacts as ta
from tile_report._errors import HistoryBusyError, HistoryError
from tile_report._git import GitInfo
from tile_report._history_rows import checked_median

__all__ = [
    "BUSY_TIMEOUT_S",
    "DEFAULT_PATH",
    "SCHEMA_VERSION",
    "Added",
    "History",
    "Point",
    "Series",
    "matches",
    "measured_cases",
]

SCHEMA_VERSION: Final = 1
DEFAULT_PATH: Final = ".tile/history.sqlite"
BUSY_TIMEOUT_S: Final = 30.0

_SCHEMA: Final = (
    "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)",
    """CREATE TABLE IF NOT EXISTS runs (
        run_id TEXT PRIMARY KEY, created_at TEXT NOT NULL, status TEXT NOT NULL,
        git_commit TEXT, branch TEXT, dirty INTEGER, commit_time TEXT, commit_subject TEXT,
        device_kind TEXT, backend TEXT, hostname TEXT, tool_version TEXT, run_dir TEXT,
        added_at TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS results (
        run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
        case_id TEXT NOT NULL, kernel TEXT NOT NULL, timer TEXT, cold INTEGER,
        median_s REAL NOT NULL, ci_low_s REAL, ci_high_s REAL, n INTEGER NOT NULL,
        ref_median_s REAL, PRIMARY KEY (run_id, case_id))""",
    "CREATE INDEX IF NOT EXISTS results_by_case ON results (case_id)",
    # Each run x case's device kernels (CUPTI-timed runs only), to say which one a step moved.
    # Added to schema version 1 without a bump: an older file gains the empty table on open.
    """CREATE TABLE IF NOT EXISTS kernels (
        run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
        case_id TEXT NOT NULL, name TEXT NOT NULL, label TEXT NOT NULL, median_s REAL NOT NULL,
        PRIMARY KEY (run_id, case_id, name))""",
    # One row per run x case, what `sqlite3 .tile/history.sqlite` users will want to query.
    """CREATE VIEW IF NOT EXISTS history AS
        SELECT r.run_id, r.created_at, r.git_commit, r.branch, r.dirty, r.commit_time,
               r.device_kind, x.case_id, x.kernel, x.timer, x.cold, x.median_s, x.ci_low_s,
               x.ci_high_s, x.n, x.ref_median_s
        FROM results x JOIN runs r USING (run_id)""",
)

_SELECT: Final = """
    SELECT x.case_id, x.kernel, r.device_kind, x.timer, x.cold, r.run_id, r.created_at,
           r.git_commit, r.commit_time, r.commit_subject, r.branch, r.dirty, x.median_s,
           x.ci_low_s, x.ci_high_s, x.n
    FROM results x JOIN runs r USING (run_id)
    ORDER BY x.case_id, COALESCE(r.commit_time, r.created_at), r.created_at"""


@dataclass(frozen=True, slots=True)
class Point:
    """One run's median of one case, with the run's CI of that median and where it came from."""

    run_id: str
    created_at: str
    commit: str | None
    commit_time: str | None
    subject: str | None
    branch: str | None
    dirty: bool | None
    median_s: float
    ci_low_s: float | None
    ci_high_s: float | None
    n: int
    kernels: tuple[tuple[str, str, float], ...] = ()
    """The run's device kernels of this case: (name, label, median seconds); none when the
    run was not CUPTI-timed."""


@dataclass(frozen=True, slots=True)
class Series:
    """A case's points in commit order, on one device kind, timer and warm/cold mode."""

    case_id: str
    kernel: str
    device_kind: str | None
    timer: str | None
    cold: bool | None
    points: tuple[Point, ...]


@dataclass(frozen=True, slots=True)
class Added:
    """What `History.add_run` did: how many cases went in, or that the run was there already."""

    run_id: str
    cases: int
    already: bool = False


def measured_cases(report: ta.Report) -> list[ta.CaseRecord]:
    """The cases worth keeping: timed, with statistics, and not failed (a wrong kernel's
    speed means nothing)."""
    return [
        c
        for c in report.cases
        if c.status in ("success", "partial") and c.stats is not None and c.samples
    ]


def matches(case_id: str, kernel: str, filters: Sequence[str], kernels: Sequence[str]) -> bool:
    """The CLI's selection rule: `-k` substring or glob on case ids, `--kernel` name or glob."""
    if filters and not any(
        fnmatch.fnmatchcase(case_id, f) if any(ch in f for ch in "*?[") else f in case_id
        for f in filters
    ):
        return False
    return not kernels or any(fnmatch.fnmatchcase(kernel, k) for k in kernels)


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
                    for statement in _SCHEMA:
                        db.execute(statement)
                    db.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION,))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        if db.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            db.execute("PRAGMA journal_mode = WAL")

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
        run, device = report.run, report.device
        self._db.execute(
            "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                run.run_id,
                _iso(run.created_at),
                run.status,
                git.commit,
                git.branch,
                None if git.dirty is None else int(git.dirty),
                git.commit_time,
                git.subject,
                device.device_kind,
                device.backend,
                report.context.hostname,
                report.producer.tool_version,
                run_dir,
                _iso(ta.utc_now()),
            ),
        )
        rows = [
            (
                run.run_id,
                c.case_id,
                c.kernel,
                c.timer,
                None if c.cold is None else int(c.cold),
                c.stats.median,
                c.stats.ci_low,
                c.stats.ci_high,
                c.stats.n,
                c.reference.stats.median if c.reference and c.reference.stats else None,
            )
            for c in cases
            if c.stats is not None
        ]
        self._db.executemany("INSERT INTO results VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        kernels = [
            (run.run_id, c.case_id, k.name, ta.kernels.label(k), k.stats.median)
            for c in cases
            if c.stats is not None
            for k in c.kernels or []
        ]
        self._db.executemany("INSERT INTO kernels VALUES (?, ?, ?, ?, ?)", kernels)

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
        """Every selected case's series, one per device kind, timer and mode, points ordered by
        commit time (run time for runs without a commit), then run time."""
        with self._translate():
            rows = self._db.execute(_SELECT).fetchall()
            breakdowns = self._kernels()
        grouped: dict[tuple[str, str, str | None, str | None, bool | None], list[Point]] = {}
        for row in rows:
            (
                case_id,
                kernel,
                kind,
                timer,
                cold,
                run_id,
                created,
                commit,
                ctime,
                subject,
                br,
                dirty,
                median,
                low,
                high,
                n,
            ) = row
            if not matches(case_id, kernel, filters, kernels):
                continue
            if (device is not None and kind != device) or (branch is not None and br != branch):
                continue
            median = checked_median(median, path=self.path, run_id=run_id, case_id=case_id)
            key = (case_id, kernel, kind, timer, None if cold is None else bool(cold))
            point = Point(
                run_id,
                created,
                commit,
                ctime,
                subject,
                br,
                None if dirty is None else bool(dirty),
                median,
                low,
                high,
                n,
                breakdowns.get((run_id, case_id), ()),
            )
            grouped.setdefault(key, []).append(point)
        return [Series(*key, points=tuple(points)) for key, points in grouped.items()]


def _iso(moment: datetime) -> str:
    """A datetime as the artifacts write it: UTC ISO-8601 with `Z`."""
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
