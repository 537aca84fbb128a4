"""The history keeps the CPU's model and each case's op (issue 40): series never mix two CPU
models, an op's implementations come out together, and files an older tile wrote (without
these columns, or without the kernels table) still read, gaining them on open."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import tile_artifacts as ta
from tile_report import GitInfo, History, RunConfig, Trend, op_trends, trends

GIT = GitInfo(commit="a" * 40, branch="main", dirty=False, commit_time="2026-01-02T03:04:05Z")
Cases = Callable[..., ta.CaseRecord]
Reports = Callable[..., ta.Report]
_CONFIG = ta.ConfigRecord(values={"block": "4"}, source="tuned", signature="sig")

# The layout tile wrote before the CPU's model and the op were kept (and, without the kernels
# table and with the view as it was, before per-kernel medians were).
_OLD = (
    "CREATE TABLE schema_version (version INTEGER NOT NULL)",
    """CREATE TABLE runs (
        run_id TEXT PRIMARY KEY, created_at TEXT NOT NULL, status TEXT NOT NULL,
        git_commit TEXT, branch TEXT, dirty INTEGER, commit_time TEXT, commit_subject TEXT,
        device_kind TEXT, backend TEXT, hostname TEXT, tool_version TEXT, run_dir TEXT,
        added_at TEXT NOT NULL)""",
    """CREATE TABLE results (
        run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
        case_id TEXT NOT NULL, kernel TEXT NOT NULL, timer TEXT, cold INTEGER,
        median_s REAL NOT NULL, ci_low_s REAL, ci_high_s REAL, n INTEGER NOT NULL,
        ref_median_s REAL, PRIMARY KEY (run_id, case_id))""",
    """CREATE VIEW history AS
        SELECT r.run_id, r.created_at, r.git_commit, r.branch, r.dirty, r.commit_time,
               r.device_kind, x.case_id, x.kernel, x.timer, x.cold, x.median_s, x.ci_low_s,
               x.ci_high_s, x.n, x.ref_median_s
        FROM results x JOIN runs r USING (run_id)""",
    "INSERT INTO schema_version VALUES (1)",
    "INSERT INTO runs VALUES ('bench-old', '2026-01-01T00:00:00Z', 'success', 'b', 'main', 0,"
    " '2026-01-01T00:00:00Z', 'old', 'cpu', 'cpu', 'h', '0.1.0', NULL, '2026-01-01T00:00:00Z')",
    "INSERT INTO results VALUES ('bench-old', 'k/a[n=1]', 'k/a', 'wall', 0, 0.001, 0.0009,"
    " 0.0011, 20, NULL)",
)


def _old_file(path: Path, *, kernels_table: bool) -> Path:
    db = sqlite3.connect(path)
    for statement in _OLD:
        db.execute(statement)
    if kernels_table:
        db.execute(
            "CREATE TABLE kernels (run_id TEXT NOT NULL, case_id TEXT NOT NULL, name TEXT NOT "
            "NULL, label TEXT NOT NULL, median_s REAL NOT NULL, PRIMARY KEY (run_id, case_id, "
            "name))"
        )
    db.commit()
    db.close()
    return path


def _on_cpu(report: ta.Report, model: str | None) -> ta.Report:
    device = report.device.model_copy(update={"device_kind": "cpu", "backend": "cpu",
                                              "model": model})  # fmt: skip
    return report.model_copy(update={"device": device})


def _columns(path: Path, table: str) -> list[str]:
    db = sqlite3.connect(path)
    try:
        return [row[1] for row in db.execute(f"PRAGMA table_info({table})")]
    finally:
        db.close()


def test_an_older_file_reads_and_gains_the_new_columns(
    tmp_path: Path, make_case: Cases, make_report: Reports
) -> None:
    for kernels_table in (True, False):  # the oldest had no kernels table: reading it failed
        path = _old_file(tmp_path / f"old-{kernels_table}.sqlite", kernels_table=kernels_table)
        with History(path) as history:
            (old,) = history.series()
            assert (old.case_id, old.device_kind, old.device_model, old.op) == (
                "k/a[n=1]", "cpu", None, None)  # fmt: skip
            assert old.points[0].median_s == 0.001
            case = make_case("k/a[n=1]", 2e-3).model_copy(update={"config": _CONFIG})
            report = _on_cpu(make_report([case]), "AMD EPYC 7763, 2 cores")
            assert history.add_run(report, git=GIT).cases == 1
            series = history.series()
        # The old run's CPU is unknown: its point is not put in the new run's series.
        assert sorted((s.device_model or "", len(s.points)) for s in series) == [
            ("", 1), ("AMD EPYC 7763, 2 cores", 1)]  # fmt: skip
        # The old row shows no configuration; the new one keeps what it ran with.
        configs = {s.device_model: s.points[0].config for s in series}
        assert configs[None] is None
        assert configs["AMD EPYC 7763, 2 cores"] == RunConfig({"block": "4"}, "tuned")
        assert "device_model" in _columns(path, "runs")
        assert {"op", "impl", "op_baseline", "config"} <= set(_columns(path, "results"))
        assert {"device_model", "config"} <= set(_columns(path, "history"))  # the view too
        with History(path) as again:  # opened once more: nothing left to add
            assert len(again.series()) == 2


def test_series_keep_two_cpu_models_apart(
    tmp_path: Path, make_case: Cases, make_report: Reports
) -> None:
    with History(tmp_path / "h.sqlite") as history:
        for model, median in (
            ("Intel Xeon 8480, 112 cores", 1e-3),
            ("AMD EPYC 7763, 2 cores", 4e-3),
        ):
            report = _on_cpu(make_report([make_case("k/a[n=1]", median)]), model)
            history.add_run(report, git=GIT)
        both = history.series()
        amd = history.series(device="AMD EPYC 7763, 2 cores")
        cpus = history.series(device="cpu")
    assert sorted(s.device for s in both) == [
        "cpu (AMD EPYC 7763, 2 cores)", "cpu (Intel Xeon 8480, 112 cores)"]  # fmt: skip
    assert all(len(s.points) == 1 for s in both)  # one run each, never one series of two
    assert [s.device_model for s in amd] == ["AMD EPYC 7763, 2 cores"]
    assert amd[0].points[0].median_s > 3e-3
    assert len(cpus) == 2


def test_an_ops_implementations_are_kept_and_come_out_together(
    tmp_path: Path, make_case: Cases, make_report: Reports
) -> None:
    def impl(case_id: str, median: float, name: str, base: bool = False) -> ta.CaseRecord:
        op = ta.ops.OpRecord(name="norm", impl=name, baseline=base)
        return make_case(case_id, median).model_copy(update={"op": op})

    cases = [
        make_case("p/plain[n=8]", 1e-3),
        impl("p/norm_fast[n=8]", 1e-3, "fast"),
        impl("p/norm_fast[n=16]", 2e-3, "fast"),
        impl("p/norm_jnp[n=16]", 3e-3, "jnp", base=True),
        impl("p/norm_jnp[n=8]", 2e-3, "jnp", base=True),
    ]
    with History(tmp_path / "h.sqlite") as history:
        history.add_run(make_report(cases), git=GIT)
        found = trends(history.series())
    groups = op_trends(found)
    assert [(g.name, g.baseline) for g in groups] == [(None, None), ("norm", "jnp")]
    assert [t.series.case_id for t in groups[0].trends] == ["p/plain[n=8]"]
    # By point, the baseline first.
    assert [_label(t) for t in groups[1].trends] == [
        ("jnp", "[n=16]"), ("fast", "[n=16]"), ("jnp", "[n=8]"), ("fast", "[n=8]")]  # fmt: skip
    assert groups[1].impls == ["jnp", "fast"]


def _label(trend: Trend) -> tuple[str, str]:
    op = trend.series.op
    assert op is not None and op.name == "norm"
    return op.impl, trend.series.case_id.partition("[")[1] + trend.series.case_id.partition("[")[2]
