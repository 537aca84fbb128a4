"""The history file's layout: its tables, its version, and what a file written by an older
tile gains when this one opens it.

Schema version 1 grows without a bump, by additions only: a table or a column an older tile
did not write (the kernels table; the CPU's model, the op and implementation of a case, the
configuration it ran with) is added when the file is opened, empty (NULL) for the runs
already there, and the `history` view is made again to show it. An older tile still reads a file that gained them; one that
inserted without naming columns cannot add runs to it (its `tile bench` warns that the run
was not added), which is why every insert here names its columns. Anything else (a table
missing that every version has, a newer version) is refused by `History`.
"""

from __future__ import annotations

import sqlite3
from typing import Final

__all__ = ["ADDED_COLUMNS", "SCHEMA", "SCHEMA_VERSION", "lay_out", "missing_additions", "upgrade"]

SCHEMA_VERSION: Final = 1

_VIEW: Final = """CREATE VIEW IF NOT EXISTS history AS
        SELECT r.run_id, r.created_at, r.git_commit, r.branch, r.dirty, r.commit_time,
               r.device_kind, r.device_model, x.case_id, x.kernel, x.op, x.impl, x.op_baseline,
               x.timer, x.cold, x.median_s, x.ci_low_s, x.ci_high_s, x.n, x.ref_median_s,
               x.config
        FROM results x JOIN runs r USING (run_id)"""

_KERNELS: Final = """CREATE TABLE IF NOT EXISTS kernels (
        run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
        case_id TEXT NOT NULL, name TEXT NOT NULL, label TEXT NOT NULL, median_s REAL NOT NULL,
        PRIMARY KEY (run_id, case_id, name))"""

SCHEMA: Final = (
    "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)",
    """CREATE TABLE IF NOT EXISTS runs (
        run_id TEXT PRIMARY KEY, created_at TEXT NOT NULL, status TEXT NOT NULL,
        git_commit TEXT, branch TEXT, dirty INTEGER, commit_time TEXT, commit_subject TEXT,
        device_kind TEXT, backend TEXT, hostname TEXT, tool_version TEXT, run_dir TEXT,
        added_at TEXT NOT NULL, device_model TEXT)""",
    """CREATE TABLE IF NOT EXISTS results (
        run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
        case_id TEXT NOT NULL, kernel TEXT NOT NULL, timer TEXT, cold INTEGER,
        median_s REAL NOT NULL, ci_low_s REAL, ci_high_s REAL, n INTEGER NOT NULL,
        ref_median_s REAL, op TEXT, impl TEXT, op_baseline INTEGER, config TEXT,
        PRIMARY KEY (run_id, case_id))""",
    "CREATE INDEX IF NOT EXISTS results_by_case ON results (case_id)",
    # Each run x case's device kernels (CUPTI-timed runs only), to say which one a step moved.
    _KERNELS,
    # One row per run x case, what `sqlite3 .tile/history.sqlite` users will want to query.
    _VIEW,
)

ADDED_COLUMNS: Final = (
    # On a CPU, its model and core count (every CPU's kind is `cpu`): series keep models apart.
    ("runs", "device_model", "TEXT"),
    # The op a case's kernel implements (`@tile.kernel(op=...)`), its label, and whether it is
    # the op's baseline: history shows implementations of one op together.
    ("results", "op", "TEXT"),
    ("results", "impl", "TEXT"),
    ("results", "op_baseline", "INTEGER"),
    # The configuration the case ran with, as compact JSON (`{"values": {...}, "source":
    # "tuned"}`, and its `note` when it has one): a step can be told from a changed tuning.
    ("results", "config", "TEXT"),
)
"""Columns added to schema version 1 after files were written without them, in order."""


def lay_out(db: sqlite3.Connection, version: int) -> None:
    """Create every table of an empty file and record its version (inside a transaction)."""
    for statement in SCHEMA:
        db.execute(statement)
    db.execute("INSERT INTO schema_version VALUES (?)", (version,))


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in db.execute(f"PRAGMA table_info({table})")}


def missing_additions(db: sqlite3.Connection) -> bool:
    """Whether the file lacks a table or a column this tile adds to version 1."""
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "kernels" not in tables:
        return True
    have = {table: _columns(db, table) for table in {t for t, _, _ in ADDED_COLUMNS}}
    return any(column not in have[table] for table, column, _ in ADDED_COLUMNS)


def upgrade(db: sqlite3.Connection) -> None:
    """Add what an older tile did not write (inside a transaction; asked again there, since
    another process may have added it while this one waited for the lock)."""
    db.execute(_KERNELS)
    for table, column, kind in ADDED_COLUMNS:
        if column not in _columns(db, table):
            db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
    db.execute("DROP VIEW IF EXISTS history")
    db.execute(_VIEW)
