"""`[bench] processes`: a bench timed by several real runner processes, one after another.

Each run here starts real runners on this CPU. The last one's results must carry every
process's samples (`process_sizes`), the run directory must validate, `compare` must judge
two such runs on the spread between processes, and a run stopped between processes must
keep what the first one measured.
"""

from __future__ import annotations

import json
from pathlib import Path

from support import MakeProject, TileRun

import tile_artifacts as ta
import tile_harness as th
import tile_protocol as tp
from tile_harness import ProcessSeries, QuietDisplay, Selection, Suite, resolve_config
from tile_harness._session import RunnerSession

QUICK = "[bench]\nmax_time = 0.05\nmax_runs = 40\nmin_runs = 5\nwarmup_runs = 1\n"


def _commands(run_dir: Path) -> int:
    """Runner processes the run started (commands.jsonl: a line when each starts and ends)."""
    lines = (run_dir / "commands" / "commands.jsonl").read_text().splitlines()
    return len({json.loads(line)["command_id"] for line in lines})


def test_two_processes_give_one_result_per_case_with_both_samples(
    project: MakeProject, tmp_path: Path
) -> None:
    root = project(["good.py"], QUICK)
    two = {"bench.processes": 2}
    done = th.bench(kernels=["fx/scale"], project=root, output_dir=tmp_path / "a", settings=two)
    assert done.exit_code == 0, done.reason
    assert ta.check.check_path(done.run_dir) == []
    assert _commands(done.run_dir) == 2
    for case in done.report.cases:
        assert case.process_sizes is not None and len(case.process_sizes) == 2, case.case_id
        assert sum(case.process_sizes) == len(case.samples) == case.stats.n  # type: ignore[union-attr]
        assert case.reference is not None and len(case.reference.samples) == len(case.samples)
    again = th.bench(kernels=["fx/scale"], project=root, output_dir=tmp_path / "b", settings=two)
    comparison = ta.compare.compare_runs(ta.read_report(done.run_dir / ta.REPORT_JSON),
                                 ta.read_report(again.run_dir / ta.REPORT_JSON))  # fmt: skip
    for row in comparison.rows:
        assert row.reason is not None and "spread of 2 and 2 runner processes" in row.reason


def test_on_a_cpu_the_default_is_two_processes_and_one_means_one(
    tile: TileRun, project: MakeProject, tmp_path: Path
) -> None:
    """0, the default (the suite's conftest sets 1 for speed), is two processes on a CPU, and
    the screen says why a second one starts."""
    root = project(["good.py"], QUICK)
    case_id = "fx/scale[n=256,dtype=float32]"
    proc = tile("bench", "--case", case_id, "--processes", "0", "-o", str(tmp_path / "a"),
                cwd=root)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "runner process 2 of 2" in proc.stderr and "--processes 1" in proc.stderr
    # The live line (plain lines in a pipe) names the process on: its count is that one's.
    assert "tile bench, runner process 1 of 2 · 0/1 done" in proc.stderr
    assert "tile bench, runner process 2 of 2 · 0/1 done" in proc.stderr
    [case] = ta.read_report(tmp_path / "a" / ta.REPORT_JSON).cases
    assert case.process_sizes is not None and len(case.process_sizes) == tp.AUTO_PROCESSES
    one = th.bench([case_id], project=root, output_dir=tmp_path / "b",
                   settings={"bench.processes": 1})  # fmt: skip
    [case] = one.report.cases
    assert case.process_sizes is None and _commands(one.run_dir) == 1


def test_a_run_stopped_between_processes_keeps_what_the_first_measured(
    project: MakeProject, tmp_path: Path
) -> None:
    """Stopped as the second process would start (as Ctrl-C there does): the first process's
    results, held back for the last one, are recorded as they are."""
    root = project(["good.py"], QUICK)
    resolved = resolve_config(None, {"bench.processes": 2}, cwd=root)
    suite = Suite("bench", resolved, Selection(kernels=("fx/scale",)), output_dir=tmp_path / "r",
                  argv=["tile", "bench"], display=QuietDisplay())  # fmt: skip
    series = suite.session()
    assert isinstance(series, ProcessSeries)
    make, made = series.make, list[tp.RunRequest]()

    def make_then_stop(request: tp.RunRequest, sink: th.Sink) -> RunnerSession:
        made.append(request)
        if len(made) == 2:
            series.stop()
        return make(request, sink)

    series.make = make_then_stop
    assert suite.drive(series) is None
    finished = suite.finish(None)
    assert len(made) == 2 and made[1].prior  # the last was asked for, and never ran
    cases = finished.report.cases
    assert len(cases) == 2 and all(c.status == "success" and c.samples for c in cases)
    assert all(c.process_sizes is None for c in cases)  # one process's results, as measured
    assert ta.check.check_path(suite.run_dir) == []


def test_a_runner_that_dies_before_its_hello_is_reported_not_held(
    project: MakeProject, tmp_path: Path
) -> None:
    """Until a hello says how many processes there are, nothing is held back: a runner that
    cannot start is the run's failure, as with one process."""
    dead = tmp_path / "dead-python"
    dead.write_text("#!/bin/sh\necho no runner here >&2\nexit 3\n")
    dead.chmod(0o755)
    root = project(["good.py"], QUICK)
    done = th.bench(kernels=["fx/scale"], project=root, output_dir=tmp_path / "r",
                    settings={"bench.processes": 2, "runner.python": str(dead)})  # fmt: skip
    assert done.exit_code == th.ExitCode.INFRA
    [failure] = done.report.failures
    assert failure.phase == "startup" and "no runner here" in failure.message


def test_runs_whose_runners_start_otherwise_refuse_several_processes(
    tile: TileRun, project: MakeProject
) -> None:
    """`--cold-process`, shards and `--against` start their runners themselves: `--processes 2`
    there would be ignored, so it is refused (exit 2) before anything runs."""
    root = project(["good.py"], QUICK)
    for extra in (["--cold-process"], ["--shards", "2"], ["--against", "HEAD"]):
        proc = tile("bench", "--kernel", "fx/scale", "--processes", "2", *extra, cwd=root)
        assert proc.returncode == 2, proc.stderr
        assert "cannot apply" in proc.stderr and "--processes" in proc.stderr
