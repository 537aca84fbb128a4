"""Sharded runs (DESIGN §10): one plan split over several runners, merged into one run directory.

Real `tile` processes and real runners on the CPU; the SLURM test goes through real `srun` on a
cluster that answers (tests/slurm/setup.sh) and skips without one.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support import MakeProject, TileRun, assert_schema_valid, tile_argv, tile_env, wait_for

from tile_harness._launchers import shard_cases

FAST = "[bench]\nmax_time = 0.05\nmin_runs = 5\nwarmup_runs = 1\n[runner]\ncase_timeout = 60\n"
GOOD_IDS = [
    "fx/scale[n=256,dtype=float32]",
    "fx/scale[n=1024,dtype=float32]",
    "fx/wrong[n=256,dtype=float32]",
    "fx/square[n=512,dtype=float32]",
]


def _report(run: Path) -> dict[str, Any]:
    return json.loads((run / "report.json").read_text())


def _commands(run: Path) -> list[dict[str, Any]]:
    """Each runner's final record (its first line, written when it started, says `incomplete`)."""
    lines = (run / "commands" / "commands.jsonl").read_text().splitlines()
    return [c for c in map(json.loads, lines) if c["status"] != "incomplete"]


def _events(run: Path, name: str) -> list[dict[str, Any]]:
    lines = (run / "events.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["event"] == name]


def _shard_of(run: Path, command: dict[str, Any]) -> str | None:
    """`i/n` for a shard's runner, None for the plan runner (the shard is in its request)."""
    started = _events(run, "runner_started")
    shards = {f"C{int(e['message'].split()[1]):03d}": e["fields"]["shard"] for e in started}
    return shards[command["command_id"]]


def _case_ids_by_command(run: Path) -> dict[str, list[str]]:
    """The case ids each runner was asked for, keyed by command id (from events.jsonl)."""
    started = _events(run, "runner_started")
    return {f"C{int(e['message'].split()[1]):03d}": e["fields"]["case_ids"] for e in started}


def _plan_ids(run: Path) -> list[str]:
    (plan,) = _events(run, "plan")
    return plan["fields"]["case_ids"]


@pytest.mark.slow
def test_local_shards_merge_into_one_report(tile: TileRun, project: MakeProject) -> None:
    root = project(["good.py"], FAST)
    # A previous run says one case costs far more than the others: the split must balance by
    # cost (that case alone on one shard), not deal round-robin.
    old = root / ".tile" / "runs" / "old"
    old.mkdir(parents=True)
    costs = dict.fromkeys(GOOD_IDS, 0.001) | {"fx/scale[n=1024,dtype=float32]": 5.0}
    cases = [{"case_id": c, "stats": {"median": t / 10, "n": 10}} for c, t in costs.items()]
    (old / "report.json").write_text(json.dumps({"cases": cases}))
    (root / ".tile" / "latest").symlink_to("runs/old")

    proc = tile("bench", "--launcher", "local", "--shards", "2", cwd=root)
    assert proc.returncode == 1, proc.stderr  # fx/wrong fails its check, nothing else
    run = root / ".tile" / "latest"
    assert run.resolve() != old.resolve()
    report = _report(run)
    ids = [c["case_id"] for c in report["cases"]]
    assert ids == GOOD_IDS  # every case exactly once, in plan order
    assert _plan_ids(run) == GOOD_IDS  # the recorder saw the full plan, once
    status = {c["case_id"]: c["status"] for c in report["cases"]}
    assert status == dict.fromkeys(GOOD_IDS, "success") | {
        "fx/wrong[n=256,dtype=float32]": "failed"
    }
    assert all(c["stats"]["n"] >= 5 for c in report["cases"])
    assert report["failures"] == []
    assert report["summary"]["counts"]["cases"] == 4

    commands = _commands(run)
    runners = [c for c in commands if c["phase"] == "runner"]
    assert [c["phase"] for c in commands].count("plan") == 1
    assert sorted(_shard_of(run, c) or "" for c in runners) == ["0/2", "1/2"]
    assert all(c["status"] == "success" for c in commands)
    asked = _case_ids_by_command(run)
    split = {_shard_of(run, c): asked[c["command_id"]] for c in runners}
    assert split == {
        "0/2": ["fx/scale[n=1024,dtype=float32]"],
        "1/2": [i for i in GOOD_IDS if i != "fx/scale[n=1024,dtype=float32]"],
    }
    assert shard_cases(GOOD_IDS, 2) != list(split.values())  # not what round-robin gives
    logs = sorted(p.name for p in (run / "logs").iterdir())
    assert logs == [f"runner-{i}.stderr.log" for i in (1, 2, 3)]

    assert_schema_valid(run)


@pytest.mark.slow
def test_a_crashed_shard_loses_nothing_else(tile: TileRun, project: MakeProject) -> None:
    root = project(["crashy.py"], FAST)
    picks = ["a_good", "b_segfault", "c_good", "i_good", "m_good"]
    args = [a for k in picks for a in ("-k", f"bad/{k}")]
    proc = tile("test", "--launcher", "local", "--shards", "2", *args, cwd=root)
    assert proc.returncode == 3, proc.stderr
    run = root / ".tile" / "latest"
    report = _report(run)
    status = {c["kernel"]: c["status"] for c in report["cases"]}
    assert status == {f"bad/{k}": "success" for k in picks} | {"bad/b_segfault": "failed"}
    assert len(report["cases"]) == len(picks)
    (failure,) = report["failures"]
    assert failure["case_id"].startswith("bad/b_segfault")
    assert (failure["phase"], failure["exception_type"]) == ("run", "RunnerCrash")
    assert "SIGSEGV" in failure["message"]

    # Round-robin over the plan: shard 0 gets a, c, m; shard 1 gets b, i. Shard 1's runner
    # dies compiling its batch (b and i, ahead of their turn), is started again to make each
    # case ready in its turn, dies on b, and is started again for i; shard 0 never notices.
    runners = [c for c in _commands(run) if c["phase"] == "runner"]
    by_shard: dict[str, list[dict[str, Any]]] = {}
    for command in runners:
        by_shard.setdefault(_shard_of(run, command) or "", []).append(command)
    assert [c["status"] for c in by_shard["0/2"]] == ["success"]
    ahead, crashed, restarted = by_shard["1/2"]
    for died in (ahead, crashed):
        assert (died["status"], died["signal"]) == ("failed", "SIGSEGV")
    assert restarted["status"] == "success"
    asked = {
        c: [i.split("[")[0] for i in ids or []] for c, ids in _case_ids_by_command(run).items()
    }
    assert asked[crashed["command_id"]] == ["bad/b_segfault", "bad/i_good"]
    assert asked[restarted["command_id"]] == ["bad/i_good"]
    # The failure points at the runner that crashed, not at the other shard's.
    assert failure["command_id"] == crashed["command_id"]
    assert failure["stderr_log"] == crashed["stderr_log"]

    assert_schema_valid(run)


@pytest.mark.slow
@pytest.mark.parametrize("launcher", ["local", "slurm"])
def test_ctrl_c_stops_every_shard(
    launcher: str, project: MakeProject, request: pytest.FixtureRequest
) -> None:
    toml = FAST.replace("case_timeout = 60", "case_timeout = 600")
    if launcher == "slurm":
        gres = request.getfixturevalue("slurm_gres")
        toml += f'[launcher]\ngres = "{gres}"\ntime_limit = "10"\n'
    # j_hang_running hangs when it runs, in its turn, after the batch made ready ahead.
    root = project(["crashy.py", "hang_when_run.py"], toml)
    out = root / "run"
    picks = ["a_good", "c_good", "i_good", "j_hang_running"]
    args = [a for k in picks for a in ("-k", f"bad/{k}")]
    proc = subprocess.Popen(
        tile_argv("test", "--launcher", launcher, "--shards", "2", "-o", str(out), *args),
        cwd=root,
        env=tile_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # Round-robin over the plan (a, c, i, j): shard 0 runs a and i to the end; shard 1 runs c,
    # then hangs in j.
    wait_for(out / "events.jsonl", '"case_start","message":"bad/j_hang_running', proc, limit=180)
    wait_for(out / "events.jsonl", '"case_done","message":"bad/i_good', proc, limit=180)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    report = _report(out)
    assert report["run"]["status"] == "interrupted"
    status = {c["kernel"]: c["status"] for c in report["cases"]}
    assert status == {
        "bad/a_good": "success",
        "bad/c_good": "success",
        "bad/i_good": "success",
        "bad/j_hang_running": "interrupted",
    }
    assert report["failures"] == []  # a stopped runner is not a crash
    runners = [c for c in _commands(out) if c["phase"] == "runner"]
    assert len(runners) == 2  # the stopped shard was not restarted
    assert {c["status"] for c in runners} == {"success", "interrupted"}
    assert_schema_valid(out)
    if launcher == "slurm":  # no job of the run is left waiting or running
        live = subprocess.run(
            ["squeue", "--noheader", "--states=PENDING,RUNNING", "--format=%j"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        run_id = report["run"]["run_id"]
        assert not [name for name in live if name.startswith(f"tile-{run_id}")], live


def test_slurm_without_srun_is_a_usage_error(tile: TileRun, project: MakeProject) -> None:
    root = project(["good.py"], FAST)
    proc = tile("bench", "--launcher", "slurm", cwd=root, env={"PATH": "/nonexistent"})
    assert proc.returncode == 2, proc.stderr
    assert "srun not found" in proc.stderr
    assert "hint:" in proc.stderr
    assert not (root / ".tile").exists()  # refused before any run directory


def test_slurm_args_that_break_the_protocol_are_refused(
    tile: TileRun, project: MakeProject, tmp_path: Path
) -> None:
    root = project(["good.py"], FAST)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    srun = bin_dir / "srun"
    srun.write_text("#!/bin/sh\nexit 1\n")
    srun.chmod(0o755)
    proc = tile(
        "test", "--launcher", "slurm", "--slurm-arg=--pty", cwd=root, env={"PATH": str(bin_dir)}
    )
    assert proc.returncode == 2, proc.stderr
    assert "`--pty`" in proc.stderr
    assert not (root / ".tile").exists()


def test_zero_shards_is_a_usage_error(tile: TileRun, project: MakeProject) -> None:
    root = project(["good.py"], FAST)
    proc = tile("bench", "--shards", "0", cwd=root)
    assert proc.returncode == 2, proc.stderr
    assert "shards" in proc.stderr


# --- through real srun --------------------------------------------------------------------------

STD_PICKS = ["std/copy*", "std/scale*"]


@pytest.mark.slow
def test_slurm_shards_run_through_srun_like_a_local_run(
    tile: TileRun, tmp_path: Path, slurm_gres: str
) -> None:
    # tile-std, no project: the default workload. Tiny budgets keep it short.
    (tmp_path / "tile.toml").write_text(
        FAST + f'[launcher]\ngres = "{slurm_gres}"\ntime_limit = "10"\n'
    )
    args = [a for k in STD_PICKS for a in ("-k", k)]
    local = tile("bench", "--output-dir", str(tmp_path / "local"), *args, timeout=600)
    assert local.returncode == 0, local.stderr
    proc = tile(
        "bench",
        "--launcher",
        "slurm",
        "--shards",
        "2",
        "--output-dir",
        str(tmp_path / "slurm"),
        # A busy or broken queue fails the test instead of hanging it.
        "--slurm-arg=--immediate=120",
        *args,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    run = tmp_path / "slurm"
    report = _report(run)
    ids = [c["case_id"] for c in report["cases"]]
    local_ids = [c["case_id"] for c in _report(tmp_path / "local")["cases"]]
    assert len(ids) == len(set(ids)) == 4
    assert set(ids) == set(local_ids)
    assert all(c["status"] == "success" for c in report["cases"])

    commands = _commands(run)
    assert [c["phase"] for c in commands].count("plan") == 1
    runners = [c for c in commands if c["phase"] == "runner"]
    assert sorted(_shard_of(run, c) or "" for c in runners) == ["0/2", "1/2"]
    run_id = report["run"]["run_id"]
    for command in commands:
        args_ = command["args"]
        assert Path(args_[0]).name == "srun"
        assert "--ntasks=1" in args_ and "--input=0" in args_
        assert f"--gres={slurm_gres}" in args_
        assert args_[-4:] == ["--", args_[-3], "-m", "tile_runner"]
        assert args_[-5] == "--immediate=120"  # --slurm-arg comes last before the runner
        shard = _shard_of(run, command)
        name = f"tile-{run_id}.{shard.split('/')[0]}" if shard else f"tile-{run_id}-plan.0"
        assert f"--job-name={name}" in args_
        assert command["status"] == "success"

    job_ids = report["context"]["slurm_job_id"]
    if os.environ.get("SLURM_JOB_ID"):
        assert job_ids == os.environ["SLURM_JOB_ID"]
    else:  # one job each: the plan's, then shard 0's and shard 1's
        assert job_ids is not None
        parts = job_ids.split(",")
        assert len(parts) == 3 and len(set(parts)) == 3
        assert all(p.isdigit() for p in parts)
    assert_schema_valid(run)
