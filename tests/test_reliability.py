"""Crash isolation with real crashes: nothing measured is ever lost (DESIGN §9)."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from support import MakeProject, TileRun, assert_schema_valid, tile_argv, tile_env, wait_for

from tile_artifacts import complete_lines, read_jsonl

FAST = "[bench]\nmax_time = 0.05\nmin_runs = 5\nwarmup_runs = 1\n[runner]\ncase_timeout = 10\n"

GOOD = ["bad/a_good", "bad/c_good", "bad/i_good", "bad/l_noisy", "bad/m_good"]
# kernel -> (case status, failure phase, error type)
BAD = {
    "bad/b_segfault": ("failed", "run", "RunnerCrash"),
    "bad/d_exit3": ("failed", "run", "RunnerCrash"),
    "bad/e_raises": ("failed", "compile", "RuntimeError"),
    "bad/f_bad_inputs": ("failed", "inputs", "ValueError"),
    "bad/h_sys_exit": ("failed", "compile", "SystemExit"),
    "bad/j_hang": ("timed_out", "run", "RunnerTimeout"),
    "bad/k_memory": ("failed", "compile", "MemoryError"),
}


def _cases(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["kernel"]: c for c in report["cases"]}


@pytest.mark.slow
@pytest.mark.parametrize("command", ["bench", "test"])
def test_every_crash_kind_is_isolated(command: str, tile: TileRun, project: MakeProject) -> None:
    root = project(["crashy.py", "broken_import.py"], FAST)
    proc = tile(command, cwd=root, timeout=600)
    assert proc.returncode == 3, proc.stderr
    run = root / ".tile" / "latest"
    report = json.loads((run / "report.json").read_text())
    cases = _cases(report)
    for kernel in GOOD:
        assert cases[kernel]["status"] == "success", kernel
        if command == "bench":
            assert cases[kernel]["stats"]["n"] >= 5
    assert cases["bad/g_wrong_shape"]["status"] == "failed"
    assert "shape" in cases["bad/g_wrong_shape"]["check"]["message"]
    failures = {f["case_id"].split("[")[0]: f for f in report["failures"] if f["case_id"]}
    for kernel, (status, phase, error_type) in BAD.items():
        assert cases[kernel]["status"] == status, kernel
        assert (failures[kernel]["phase"], failures[kernel]["exception_type"]) == (
            phase,
            error_type,
        ), kernel
    assert "SIGSEGV" in failures["bad/b_segfault"]["message"]
    assert "code 3" in failures["bad/d_exit3"]["message"]
    imports = [f for f in report["failures"] if f["phase"] == "import"]
    assert len(imports) == 1 and "broken on purpose" in imports[0]["message"]
    assert report["run"]["status"] == "partial"
    # the runner's stray stdout went to the stderr log, never into the protocol stream
    logs = "".join(p.read_text(errors="replace") for p in (run / "logs").iterdir())
    assert "a stray print to stdout" in logs
    events = (run / "events.jsonl").read_text()
    assert "protocol_noise" not in events
    assert_schema_valid(run)


@pytest.mark.slow
def test_isolate_runs_one_runner_per_case(tile: TileRun, project: MakeProject) -> None:
    root = project(["crashy.py"], FAST)
    proc = tile("test", "--isolate", "-k", "a_good", "-k", "b_segfault", "-k", "c_good", cwd=root)
    assert proc.returncode == 3, proc.stderr
    run = root / ".tile" / "latest"
    commands = [
        json.loads(line) for line in (run / "commands" / "commands.jsonl").read_text().splitlines()
    ]
    # Each runner is recorded when it starts and when it ends: the plan, one per case.
    assert [c["status"] for c in commands].count("incomplete") == 4
    assert len({c["command_id"] for c in commands}) == 4
    statuses = {
        k: c["status"] for k, c in _cases(json.loads((run / "report.json").read_text())).items()
    }
    assert statuses == {
        "bad/a_good": "success",
        "bad/b_segfault": "failed",
        "bad/c_good": "success",
    }


# Two good cases, then one that hangs in its turn: a signal after the first case lands while a
# case runs or hangs. The kernel hangs when run, not when traced (crashy.py's j_hang), which
# would hang the batch compiled ahead and cost a case_timeout before any case ran; that path
# has a test of its own below.
_HANG_LAST = ("-k", "a_good", "-k", "c_good", "-k", "j_hang_running")


def _start(root: Path, out: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        tile_argv("bench", "--output-dir", str(out), *args),
        cwd=root,
        env=tile_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_finalizes_run_as_interrupted(
    sig: signal.Signals, code: int, project: MakeProject
) -> None:
    root = project(["crashy.py", "hang_when_run.py"], FAST)
    out = root / "run"
    proc = _start(root, out, *_HANG_LAST)
    wait_for(out / "events.jsonl", '"bad/c_good[n=128,dtype=float32]"', proc, limit=120)
    wait_for(out / "events.jsonl", "case_done", proc, limit=120)
    time.sleep(0.5)
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == code, stderr
    report = json.loads((out / "report.json").read_text())
    assert report["run"]["status"] == "interrupted"
    cases = _cases(report)
    assert cases["bad/a_good"]["status"] == "success"
    assert cases["bad/a_good"]["samples"]
    assert_schema_valid(out)


@pytest.mark.slow
def test_sigkill_leaves_no_torn_files(project: MakeProject) -> None:
    root = project(["crashy.py", "hang_when_run.py"], FAST)
    out = root / "run"
    proc = _start(root, out, *_HANG_LAST)
    wait_for(out / "events.jsonl", "case_done", proc, limit=120)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    for path in out.rglob("*"):
        if path.suffix == ".jsonl":
            # A kill inside the write of a long line may leave its start without a newline;
            # readers skip that tail (tile_artifacts.read_jsonl), every whole line parses.
            for line in complete_lines(path.read_text()):
                json.loads(line)
            read_jsonl(path)
        elif path.suffix == ".json":
            json.loads(path.read_text())
    metrics = (out / "metrics.jsonl").read_text()
    assert "bad/a_good" in metrics  # measured before the kill, kept


@pytest.mark.slow
def test_a_kernel_hanging_while_its_batch_compiles_costs_a_case_timeout_and_is_blamed(
    tile: TileRun, project: MakeProject
) -> None:
    # j_hang hangs while traced: in the batch made ready ahead of the cases' turn, where no
    # case is in flight. The runner says each step of the batch, so its silence there is bound
    # by case_timeout (10 s here), not the limit between cases (at least 120 s); a fresh runner,
    # making each case ready in its turn, measures the others and blames the hang on j_hang.
    root = project(["crashy.py"], FAST)
    proc = tile("bench", "-k", "a_good", "-k", "j_hang", "-k", "m_good", cwd=root, timeout=300)
    assert proc.returncode == 3, proc.stderr
    run = root / ".tile" / "latest"
    report = json.loads((run / "report.json").read_text())
    cases = _cases(report)
    assert cases["bad/a_good"]["status"] == cases["bad/m_good"]["status"] == "success"
    assert cases["bad/j_hang"]["status"] == "timed_out"
    (failure,) = report["failures"]
    assert failure["case_id"].startswith("bad/j_hang")
    assert failure["exception_type"] == "RunnerTimeout"
    assert "10 s (case_timeout)" in failure["message"]
    events = (run / "events.jsonl").read_text()
    assert (
        "runner 1 ended: timed_out (no message from the runner for 10 s (case_timeout) while "
        "making cases ready ahead of their turn)"
    ) in events


@pytest.mark.slow
def test_runner_dying_in_a_later_round_blames_that_case_only(
    tile: TileRun, project: MakeProject
) -> None:
    root = project(["rounds_crash.py"], FAST.replace("[bench]\n", "[bench]\nrounds = 3\n"))
    proc = tile("bench", cwd=root, timeout=300)
    assert proc.returncode == 3, proc.stderr
    run = root / ".tile" / "latest"
    report = json.loads((run / "report.json").read_text())
    cases = _cases(report)
    for kernel in ("rounds/a_good", "rounds/c_good"):
        # a_good had finished two rounds when the runner died: a new runner measured it again.
        case = cases[kernel]
        assert case["status"] == "success", kernel
        assert len(case["round_sizes"]) == 3 and sum(case["round_sizes"]) == case["stats"]["n"]
        assert len(case["reference"]["samples"]) == case["stats"]["n"]
    assert cases["rounds/b_dies"]["status"] == "failed"
    (failure,) = [f for f in report["failures"] if f["case_id"]]
    assert failure["exception_type"] == "RunnerCrash" and "code 7" in failure["message"]
    starts = [
        json.loads(line)
        for line in (run / "events.jsonl").read_text().splitlines()
        if '"case_start"' in line
    ]
    assert {s["fields"].get("round") for s in starts} == {1, 2, 3}


_POISON = ["poison/a_good", "poison/b_crash", "poison/c_good", "poison/d_good"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "why", "not_run"),
    [
        # A batch made ready ahead: b_crash segfaults while the batch compiles, before any
        # case has run or is in flight; the restarted runner, which would compile each case in
        # its turn and blame b_crash, dies importing the kernels. Every case is counted.
        (("test",), "the restarted runner made no progress: runner killed by SIGSEGV", 4),
        # Each case compiled in its turn (build compiles no batch; --isolate runners either).
        (("build",), "the restarted runner made no progress: runner killed by SIGSEGV", 2),
        (("test", "--isolate"), "its runner ended before reaching it: runner killed by SIGSEGV", 2),
    ],
)
def test_cases_no_runner_reaches_are_counted_and_the_run_exits_3(
    args: tuple[str, ...], why: str, not_run: int, tile: TileRun, project: MakeProject
) -> None:
    # poison/b_crash segfaults and leaves a mark that makes every later runner segfault while
    # it imports the kernels: poison/c_good and poison/d_good are never run (issue #24).
    root = project(["poisoning.py"], FAST)
    proc = tile(*args, cwd=root)
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"error: {not_run} of 4 planned cases were not run ({why}" in proc.stderr
    assert "not run in" in proc.stderr  # the headline counts them too
    run = root / ".tile" / "latest"
    report = json.loads((run / "report.json").read_text())
    cases = _cases(report)
    failures = {f["case_id"].split("[")[0]: f for f in report["failures"] if f["case_id"]}
    if not_run == 2:
        assert cases["poison/a_good"]["status"] == "success"  # what was done is kept
        assert cases["poison/b_crash"]["status"] == "failed"
        assert failures["poison/b_crash"]["exception_type"] == "RunnerCrash"
    for kernel in _POISON[-not_run:]:
        assert cases[kernel]["status"] == "skipped", kernel
        assert failures[kernel]["exception_type"] == "NotRun" and why in failures[kernel]["message"]
    assert report["run"]["status"] == ("partial" if not_run < 4 else "failed")
    assert f"{not_run} of 4 planned cases were not run" in report["run"]["status_reason"]
    assert f"{not_run} of 4 planned cases were not run" in (run / "summary.md").read_text()
    assert_schema_valid(run)
