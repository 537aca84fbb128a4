"""Shards and launchers: balanced splits, per-shard environments, srun argument vectors.

The tests that need SLURM start real tasks through real `srun` on a cluster that answers (the
one-node cluster of tests/slurm/setup.sh; set TILE_SLURM_SETUP=1 to have it started here, as
root). Without a cluster they skip.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO

import pytest
from hypothesis import given
from hypothesis import strategies as st

# tests/support.py: on sys.path through pytest's `pythonpath`, and in pyright's extraPaths here.
from support import slurm_cluster

from tile_harness._launchers import (
    DEFAULT_GRES,
    LauncherError,
    SrunOptions,
    find_srun,
    local_env,
    shard_cases,
    slurm_job_id,
    squeue_job_id,
    srun_argv,
    srun_env,
    srun_task_signal,
    visible_gpus,
)

# Guards against a hang (a stuck queue, a lost line); never a measure of speed.
HANG_GUARD_S = 120.0

# --- shard_cases ------------------------------------------------------------------------------


def ids(n: int) -> list[str]:
    return [f"k/c[{i}]" for i in range(n)]


def test_round_robin_without_costs() -> None:
    assert shard_cases(["a", "b", "c", "d", "e"], 2) == [["a", "c", "e"], ["b", "d"]]
    assert shard_cases(["a", "b", "c"], 3) == [["a"], ["b"], ["c"]]
    assert shard_cases(["a", "b", "c"], 1) == [["a", "b", "c"]]


def test_fewer_cases_than_shards_gives_fewer_shards() -> None:
    assert shard_cases(["a", "b"], 5) == [["a"], ["b"]]
    assert shard_cases(["a", "b"], 5, {"a": 1.0, "b": 9.0}) == [["b"], ["a"]]
    assert shard_cases([], 3) == []
    assert shard_cases([], 3, {}) == []


@pytest.mark.parametrize("shards", [0, -2])
def test_shard_count_below_one_is_an_error(shards: int) -> None:
    with pytest.raises(LauncherError) as info:
        shard_cases(["a"], shards)
    assert f"{shards} shards" in info.value.message
    assert info.value.hint == "use `--shards 1` or more"


def test_a_repeated_case_runs_once() -> None:
    assert shard_cases(["a", "b", "a", "c"], 2) == [["a", "c"], ["b"]]
    assert shard_cases(["a", "b", "a"], 2, {"a": 3.0, "b": 1.0}) == [["a"], ["b"]]


def test_costs_balance_by_longest_processing_time() -> None:
    costs = {"a": 1.0, "b": 8.0, "c": 2.0, "d": 7.0, "e": 3.0, "f": 3.0}
    # b(8)->0, d(7)->1, e(3)->1, f(3)->0, c(2)->1, a(1)->0: loads 12 and 12.
    assert shard_cases(list(costs), 2, costs) == [["a", "b", "f"], ["c", "d", "e"]]
    # Round-robin would load one shard with 13 of the 24 and the other with 11.
    assert shard_cases(list(costs), 2) == [["a", "c", "e"], ["b", "d", "f"]]


def test_unknown_cases_count_as_the_mean_cost() -> None:
    # Mean of the known costs is 6: a(10)->0, c(6)->1, d(6)->1, b(2)->0. Counting the unknown
    # cases as free would leave `a` alone on one shard.
    assert shard_cases(["a", "b", "c", "d"], 2, {"a": 10.0, "b": 2.0}) == [["a", "b"], ["c", "d"]]


def test_unusable_costs_count_as_unknown() -> None:
    costs = {"a": 10.0, "b": 2.0, "c": float("nan"), "d": -4.0, "zzz": 1000.0}
    assert shard_cases(["a", "b", "c", "d"], 2, costs) == [["a", "b"], ["c", "d"]]


def test_zero_costs_still_spread_over_every_shard() -> None:
    cases = ids(7)
    shards = shard_cases(cases, 3, dict.fromkeys(cases, 0.0))
    assert [len(s) for s in shards] == [3, 2, 2]


def test_no_known_cost_at_all_is_round_robin() -> None:
    cases = ids(7)
    assert shard_cases(cases, 3, {}) == shard_cases(cases, 3)


def test_the_order_of_the_cost_mapping_does_not_matter() -> None:
    cases = ids(9)
    costs = {case: float(i % 4) for i, case in enumerate(cases)}
    backwards = dict(reversed(list(costs.items())))
    assert shard_cases(cases, 4, costs) == shard_cases(cases, 4, backwards)


@given(
    costs=st.lists(st.floats(min_value=0, max_value=1e6), min_size=0, max_size=60),
    shards=st.integers(min_value=1, max_value=12),
    with_costs=st.booleans(),
)
def test_every_case_exactly_once_in_balanced_non_empty_shards(
    costs: list[float], shards: int, with_costs: bool
) -> None:
    cases = ids(len(costs))
    table = dict(zip(cases, costs, strict=True)) if with_costs else None
    result = shard_cases(cases, shards, table)
    assert result == shard_cases(cases, shards, table), "deterministic"
    assert len(result) == min(shards, len(cases))
    assert all(result), "no empty shard"
    flat = [case for shard in result for case in shard]
    assert sorted(flat) == sorted(cases)
    for shard in result:
        assert shard == sorted(shard, key=cases.index), "each shard keeps the plan's order"
    if table is None and cases:
        assert max(map(len, result)) - min(map(len, result)) <= 1
    elif table is not None and cases:
        # Greedy list scheduling never exceeds the mean load plus the largest single cost.
        loads = [sum(table[c] for c in shard) for shard in result]
        bound = sum(costs) / len(result) + max(costs)
        assert max(loads) <= bound * (1 + 1e-9)


# --- local_env and visible_gpus ---------------------------------------------------------------


def test_local_env_on_cpu_only_adds_nothing() -> None:
    # The shard travels in its request (`RunRequest.shard`), not in the environment.
    assert local_env(1, 3, None) == {}
    assert local_env(0, 2, []) == {}


def test_local_env_gives_each_shard_its_own_gpu() -> None:
    devices = visible_gpus({"CUDA_VISIBLE_DEVICES": "3,5,GPU-8f2a"})
    envs = [local_env(i, 3, devices) for i in range(3)]
    assert [e["CUDA_VISIBLE_DEVICES"] for e in envs] == ["3", "5", "GPU-8f2a"]
    assert all(set(e) == {"CUDA_VISIBLE_DEVICES"} for e in envs)
    assert local_env(1, 2, ["0", "1", "2", "3"])["CUDA_VISIBLE_DEVICES"] == "1"


def test_local_env_refuses_more_shards_than_gpus() -> None:
    with pytest.raises(LauncherError) as info:
        local_env(0, 3, ["0", "1"])
    assert "`--shards 3` needs one GPU per shard but 2 are visible (0,1)" in info.value.message
    assert info.value.hint is not None
    assert "`--shards 2` or fewer" in info.value.hint


@pytest.mark.parametrize("index", [-1, 2])
def test_local_env_index_must_be_a_shard(index: int) -> None:
    with pytest.raises(ValueError, match=r"outside 0\.\.1"):
        local_env(index, 2, None)


@pytest.mark.parametrize(
    ("environ", "count", "expected"),
    [
        ({}, 0, []),
        ({}, 2, ["0", "1"]),
        ({"CUDA_VISIBLE_DEVICES": "2,3"}, 8, ["2", "3"]),
        ({"CUDA_VISIBLE_DEVICES": " 1 , MIG-4a1c "}, 0, ["1", "MIG-4a1c"]),
        ({"CUDA_VISIBLE_DEVICES": ""}, 4, []),
        ({"CUDA_VISIBLE_DEVICES": "-1"}, 4, []),
        ({"CUDA_VISIBLE_DEVICES": "0,-1,2"}, 4, ["0"]),
    ],
)
def test_visible_gpus_reads_cuda_visible_devices_like_cuda(
    environ: dict[str, str], count: int, expected: list[str]
) -> None:
    assert visible_gpus(environ, count) == expected


# --- srun_argv and friends --------------------------------------------------------------------


def argv(
    *,
    shard_index: int = 1,
    inside_allocation: bool = False,
    partition: str | None = None,
    time_limit: str | None = None,
    gres: str | None = None,
    extra_args: Sequence[str] = (),
    srun: str | None = "/usr/bin/srun",
) -> list[str]:
    return srun_argv(
        ["/venv/bin/python", "-m", "tile_runner"],
        shard_index=shard_index,
        job_name="tile-bench-r1",
        options=SrunOptions(
            partition=partition, time_limit=time_limit, gres=gres, extra_args=extra_args
        ),
        inside_allocation=inside_allocation,
        srun=srun,
    )


def test_srun_argv_outside_an_allocation() -> None:
    assert argv(partition="gpu", time_limit="1:00:00") == [
        "/usr/bin/srun",
        "--ntasks=1",
        "--nodes=1",
        "--job-name=tile-bench-r1.1",
        "--input=0",
        "--export=ALL",
        "--kill-on-bad-exit=1",
        "--quit-on-interrupt",
        "--gres=gpu:1",
        "--partition=gpu",
        "--time=1:00:00",
        "--",
        "/venv/bin/python",
        "-m",
        "tile_runner",
    ]


def test_srun_argv_inside_an_allocation_starts_an_exact_step() -> None:
    got = argv(partition="gpu", time_limit="30", inside_allocation=True)
    assert "--exact" in got
    assert not any(a.startswith("--partition") for a in got), "the allocation has a partition"
    assert "--time=30" in got
    assert "--exact" not in argv()


def test_srun_argv_gres_and_extra_args() -> None:
    assert DEFAULT_GRES == "gpu:1"
    got = argv(gres="gpu:h100:1", extra_args=["--account=ml", "--mem=16G", "-N1"])
    assert "--gres=gpu:h100:1" in got
    assert "--gres=gpu:1" not in got
    # Extra args come last before `--`, so they override the defaults srun saw earlier.
    assert got[got.index("--") - 3 : got.index("--")] == ["--account=ml", "--mem=16G", "-N1"]
    assert got[got.index("--") + 1 :] == ["/venv/bin/python", "-m", "tile_runner"]
    assert "--gres=none" in argv(gres="none")


@pytest.mark.parametrize(
    "bad",
    ["--ntasks=2", "-n2", "--label", "-l", "--pty", "--output=o.txt", "-o", "--input=none", "--"],
)
def test_srun_argv_refuses_args_that_break_the_protocol(bad: str) -> None:
    with pytest.raises(LauncherError) as info:
        argv(extra_args=["--mem=1G", bad])
    assert f"`{bad}` cannot be used" in info.value.message
    assert info.value.hint == "remove it from `[launcher] extra_args` or `--slurm-arg`"


def test_srun_argv_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="negative"):
        argv(shard_index=-1)
    with pytest.raises(ValueError, match="empty"):
        srun_argv(
            [],
            shard_index=0,
            job_name="j",
            options=SrunOptions(),
            inside_allocation=False,
            srun="srun",
        )


def test_srun_not_on_path_is_a_launcher_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(LauncherError) as info:
        argv(srun=None)
    assert info.value.message == (
        "srun not found: `--launcher slurm` needs SLURM's client tools on PATH"
    )
    assert info.value.hint is not None
    assert "--launcher local" in info.value.hint
    assert isinstance(info.value, RuntimeError)


def test_find_srun_takes_the_first_on_the_path(tmp_path: Path) -> None:
    empty, bin_dir = tmp_path / "empty", tmp_path / "bin"
    empty.mkdir()
    bin_dir.mkdir()
    fake = bin_dir / "srun"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    assert find_srun(os.pathsep.join([str(empty), str(bin_dir)])) == str(fake)
    with pytest.raises(LauncherError):
        find_srun(str(empty))


def test_srun_env_drops_the_variables_that_change_srun_stdio() -> None:
    environ = {
        "PATH": "/bin",
        "SLURM_JOB_ID": "42",
        "SLURM_LABELIO": "1",
        "SLURM_UNBUFFEREDIO": "1",
        "SLURM_STDINMODE": "none",
        "SLURM_STDOUTMODE": "out.txt",
        "SLURM_STDERRMODE": "err.txt",
    }
    assert srun_env(environ) == {"PATH": "/bin", "SLURM_JOB_ID": "42"}


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, None),
        ({"SLURM_JOB_ID": "1234"}, "1234"),
        ({"SLURM_JOBID": "77"}, "77"),
        ({"SLURM_JOB_ID": " 9 ", "SLURM_JOBID": "8"}, "9"),
        ({"SLURM_JOB_ID": ""}, None),
        ({"SLURM_JOB_ID": "abc"}, None),
    ],
)
def test_slurm_job_id(environ: dict[str, str], expected: str | None) -> None:
    assert slurm_job_id(environ) == expected


@pytest.mark.parametrize(
    ("returncode", "expected"), [(0, None), (1, None), (3, None), (139, 11), (137, 9), (-15, 15)]
)
def test_srun_task_signal(returncode: int, expected: int | None) -> None:
    assert srun_task_signal(returncode) == expected


# --- real srun --------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def slurm() -> str:
    """A SLURM cluster that runs tasks; its gres for one task: DEFAULT_GRES with GPUs, else none."""
    return slurm_cluster(DEFAULT_GRES)


def launch(
    code: str,
    *,
    gres: str,
    job_name: str,
    env: dict[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    args = srun_argv(
        [sys.executable, "-c", code],
        shard_index=0,
        job_name=job_name,
        # A busy or broken queue fails the test instead of hanging it.
        options=SrunOptions(time_limit="10", gres=gres, extra_args=["--immediate=60"]),
        inside_allocation=False,
    )
    return subprocess.Popen(
        args,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=srun_env({**os.environ, **(env or {})}),
    )


class Lines:
    """The lines of a stream as they arrive, read on a thread so a hang fails, not blocks."""

    def __init__(self, stream: IO[bytes] | None) -> None:
        assert stream is not None
        self._queue: queue.Queue[bytes] = queue.Queue()
        self._thread = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self._thread.start()

    def _pump(self, stream: IO[bytes]) -> None:
        for line in iter(stream.readline, b""):
            self._queue.put(line)
        self._queue.put(b"")

    def join(self) -> None:
        """Wait until the stream has ended (the process is gone, so it must end)."""
        self._thread.join(timeout=HANG_GUARD_S)
        assert not self._thread.is_alive(), "the stream stayed open after srun exited"

    def next(self) -> bytes:
        try:
            return self._queue.get(timeout=HANG_GUARD_S)
        except queue.Empty:
            pytest.fail(f"no line from srun within {HANG_GUARD_S:.0f} s")


def send(proc: subprocess.Popen[bytes], text: str) -> None:
    assert proc.stdin is not None
    proc.stdin.write(text.encode())
    proc.stdin.flush()


def finish(proc: subprocess.Popen[bytes], lines: Lines) -> tuple[int, str]:
    """Wait for srun to exit; its return code and stderr. Closes every pipe."""
    try:
        rc = proc.wait(timeout=HANG_GUARD_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        pytest.fail(f"srun did not exit within {HANG_GUARD_S:.0f} s")
    lines.join()
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    with contextlib.suppress(BrokenPipeError):
        proc.stdin.close()
    proc.stdout.close()
    stderr = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    return rc, stderr


ECHO = r"""
import json, os, sys
print(json.dumps({"type": "hello", "shard": os.environ.get("TILE_SHARD"),
                  "job": os.environ.get("SLURM_JOB_ID"), "tty": os.isatty(1),
                  "gpus": os.environ.get("CUDA_VISIBLE_DEVICES")}), flush=True)
for line in iter(sys.stdin.readline, ""):
    print(json.dumps({"type": "echo", "text": line.rstrip("\n")}), flush=True)
print(json.dumps({"type": "done", "big": "x" * 300_000}), flush=True)
"""


def test_a_task_gets_stdin_and_streams_stdout_line_by_line(slurm: str) -> None:
    proc = launch(ECHO, gres=slurm, job_name="tile-test-echo", env={"TILE_SHARD": "0/1"})
    lines = Lines(proc.stdout)
    hello = json.loads(lines.next())
    assert hello["shard"] == "0/1", "the CLI's environment reaches the task (--export=ALL)"
    assert hello["job"] is not None
    assert hello["tty"] is False, "the protocol travels over a pipe, not a pseudo-terminal"
    if slurm == DEFAULT_GRES:
        assert hello["gpus"] is not None, "SLURM gives the task its one GPU"
    # Ping-pong: each answer must arrive while the task still waits for more input, so srun
    # streams lines as they come instead of holding them until the task ends.
    for word in ["first", "second", "third"]:
        send(proc, word + "\n")
        assert json.loads(lines.next()) == {"type": "echo", "text": word}
    assert squeue_job_id("tile-test-echo.0") == hello["job"]
    assert proc.stdin is not None
    proc.stdin.close()  # EOF reaches the task: the runner reads its request to EOF
    done = json.loads(lines.next())
    assert done == {"type": "done", "big": "x" * 300_000}, "a long line arrives whole"
    assert lines.next() == b""
    rc, stderr = finish(proc, lines)
    assert rc == 0, stderr


def test_a_task_killed_by_a_signal_shows_in_srun_exit_status(slurm: str) -> None:
    code = "import os, signal; print('up', flush=True); os.kill(os.getpid(), signal.SIGSEGV)"
    proc = launch(code, gres=slurm, job_name="tile-test-segv")
    assert proc.stdin is not None
    proc.stdin.close()
    lines = Lines(proc.stdout)
    assert lines.next() == b"up\n"
    rc, stderr = finish(proc, lines)
    assert srun_task_signal(rc) == signal.SIGSEGV, (rc, stderr)
    assert "Segmentation fault" in stderr


def test_a_single_sigint_ends_the_task(slurm: str) -> None:
    # The child never exits by itself: it waits for input that never comes.
    code = "import sys; print('up', flush=True); sys.stdin.read()"
    proc = launch(code, gres=slurm, job_name="tile-test-sigint")
    lines = Lines(proc.stdout)
    assert lines.next() == b"up\n"
    proc.send_signal(signal.SIGINT)
    rc, stderr = finish(proc, lines)
    assert rc != 0
    assert "sending Ctrl-C" in stderr or "forcing job termination" in stderr, stderr


STEPS = r"""
import json, os, subprocess, sys
from tile_harness._launchers import SrunOptions, srun_argv, srun_env
code = '''
import os, sys
print(os.environ["SLURM_JOB_ID"], os.environ["SLURM_STEP_ID"], flush=True)
sys.stdin.readline()
'''
procs = [
    subprocess.Popen(
        srun_argv([sys.executable, "-c", code], shard_index=i, job_name="tile-test-steps",
                  options=SrunOptions(gres=sys.argv[1]), inside_allocation=True),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=srun_env(os.environ))
    for i in range(2)
]
# Both steps must be running at once: each waits for a line that is sent only after both
# have reported, so steps that run one after the other never get there.
seen = [p.stdout.readline().decode().split() for p in procs]
for p in procs:
    p.stdin.write(b"go\n")
    p.stdin.close()
codes = [p.wait() for p in procs]
print(json.dumps({"outer": os.environ["SLURM_JOB_ID"], "seen": seen, "codes": codes}))
"""


def test_shards_inside_one_allocation_run_side_by_side(slurm: str) -> None:
    gres = ["--gres=gpu:2"] if slurm == DEFAULT_GRES else []
    salloc = [
        "salloc",
        "--ntasks=2",
        *gres,
        "--time=10",
        "--immediate=60",
        "--job-name=tile-test-alloc",
        "--",
        sys.executable,
        "-c",
        STEPS,
        slurm,
    ]
    try:
        done = subprocess.run(
            salloc, capture_output=True, text=True, timeout=HANG_GUARD_S, check=False
        )
    except subprocess.TimeoutExpired:
        # salloc died with SIGKILL and cannot give the allocation back: cancel it by name.
        subprocess.run(["scancel", "--name=tile-test-alloc"], check=False, timeout=30)
        pytest.fail("the two steps did not run side by side (each waited for the other)")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["codes"] == [0, 0]
    assert sorted(step for _, step in report["seen"]) == ["0", "1"]
    assert {job for job, _ in report["seen"]} == {report["outer"]}, "steps of the one job"
