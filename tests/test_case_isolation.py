"""No case leaks into the next (issue #24), with real kernels in a real runner: a kernel whose
forked child writes protocol lines into every descriptor cannot end or change the run, and a
kernel that changes the runner's process gets the blame while the cases after it run in the
state the run began with."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support import FIXTURES, MakeProject, TileRun, assert_schema_valid

FAST = "[bench]\nmax_time = 0.05\nmin_runs = 5\nwarmup_runs = 1\n[runner]\ncase_timeout = 60\n"


def _latest(root: Path) -> tuple[Path, dict[str, Any]]:
    run = root / ".tile" / "latest"
    return run, json.loads((run / "report.json").read_text())


def _events(run: Path, name: str) -> list[dict[str, Any]]:
    lines = (run / "events.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["event"] == name]


@pytest.mark.slow
@pytest.mark.parametrize("command", ["test", "bench"])
def test_a_forked_child_cannot_forge_the_runners_messages(
    command: str, tile: TileRun, project: MakeProject
) -> None:
    root = project(["forking.py"], FAST)
    library = root / "kernels" / "libforge.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(library), str(FIXTURES / "forge.c")],
                   check=True, capture_output=True)  # fmt: skip
    proc = tile(command, cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert "6 cases, 6 ok" in proc.stderr  # every case ran: no forged `done` ended the run
    assert "warning: lines the runner did not send reached its pipe" in proc.stderr
    run, report = _latest(root)
    assert report["run"]["status"] == "success"
    assert {c["status"] for c in report["cases"]} == {"success"}
    later = next(c for c in report["cases"] if c["kernel"] == "fork/f_good")
    if command == "bench":
        assert later["samples"] != [1.0]  # the forged result for it was not believed
    marks = (root / "fork-marks.txt").read_text().splitlines()
    # Python's fork: the child lost the protocol descriptor before it could write to it.
    assert "os.fork child: writer fd -1" in marks
    raw = [int(m.split()[-1]) for m in marks if m.startswith("raw fork child")]
    assert raw and all(pid > 0 for pid in raw)
    # The C-level fork's child wrote into the pipe: four lines per fork, each dropped as noise.
    noise = [e["message"] for e in _events(run, "protocol_noise")]
    assert len(noise) == 4 * len(raw), noise
    assert all("message the runner did not send" in m for m in noise)
    assert sum("does not carry the token" in m for m in noise) == 2 * len(raw)
    assert sum(bool(re.search(r"sequence number 1 does not follow \d+", m)) for m in noise) == len(
        raw
    )
    assert sum("comes from pid" in m for m in noise) == len(raw)
    assert_schema_valid(run)


# What each leak of fixtures/state_leaks.py changes: the kind and the names of its diffs.
LEAKS: dict[str, tuple[str, set[str]]] = {
    "x64": ("jax_config", {"jax_enable_x64"}),
    "device": ("default_device", {"jax_default_device"}),
    "chdir": ("cwd", {""}),
    "env": ("environment", {"TILE_LEAKED"}),
    "path": ("sys_path", {""}),
    "signal": ("signal_handlers", {"SIGUSR1"}),
    "thread": ("threads", {"leaky-worker"}),
    # Issue #39: the process state below Python's modules.
    "stdout": ("stdio", {"sys.stdout", "sys.stderr"}),  # one stream under two names
    "stderr": ("stdio", {"sys.stdout", "sys.stderr"}),
    "fd2": ("stdio", {"fd 2"}),
    "alarm": ("timers", {"ITIMER_REAL"}),
    "itimer": ("timers", {"ITIMER_VIRTUAL"}),
    "recursion": ("recursion_limit", {""}),
    "profile": ("trace_hooks", {"sys.setprofile"}),
    "trace": ("trace_hooks", {"threading.settrace"}),
    "warnings": ("warnings", {"filters"}),
    "umask": ("umask", {""}),
    "nofile": ("rlimits", {"RLIMIT_NOFILE"}),
    "setup": ("environment", {"TILE_MODULE_SETUP"}),  # a module's own setup: kept
}
CASES = 2 * len(LEAKS)


def _leak(i: int, what: str) -> str:
    return f"leak/{2 * i:02d}_{what}"


@pytest.mark.slow
def test_a_case_that_changes_the_process_is_named_and_the_next_is_not_blamed(
    tile: TileRun, project: MakeProject
) -> None:
    root = project(["state_leaks.py"], FAST)
    proc = tile("test", cwd=root)
    assert proc.returncode == 0, proc.stderr
    # Every probe ran in the state the run began with (and the runner survived them all).
    assert f"{CASES} cases, {CASES} ok" in proc.stderr
    run, report = _latest(root)
    assert report["run"]["status"] == "success" and report["failures"] == []
    assert [c["status"] for c in report["cases"]] == ["success"] * CASES  # every result kept
    findings = {
        f["title"].split("[")[0]: f for f in report["findings"] if f["category"] == "isolation"
    }
    assert set(findings) == {_leak(i, what) for i, what in enumerate(LEAKS)}
    changes = {c["case_id"].split("[")[0]: c for c in map(lambda e: e["fields"],
               _events(run, "state_change"))}  # fmt: skip
    for i, (what, (kind, names)) in enumerate(LEAKS.items()):
        leak = _leak(i, what)
        finding = findings[leak]
        diffs = changes[leak]["changes"]
        assert {d["kind"] for d in diffs} == {kind}, leak
        assert {d["name"] or "" for d in diffs} == names or kind == "sys_path", leak
        if what == "setup":  # kept, and the probe after it, which needs it, passed
            assert [(d["kept"], d["restored"]) for d in diffs] == [(True, False)]
            assert changes[leak]["restart"] is False and finding["severity"] == "info"
            assert any("(kept: set up by a module" in e for e in finding["evidence"])
            continue
        restored = what != "thread"
        assert all(d["restored"] is restored for d in diffs), leak
        assert changes[leak]["restart"] is not restored
        assert finding["severity"] == ("low" if restored else "medium")
        assert any(("(restored)" if restored else "(cannot be restored)") in e
                   for e in finding["evidence"])  # fmt: skip
    assert "/leaked/path" in " ".join(findings[_leak(4, "path")]["evidence"])
    evidence = {what: " ".join(findings[_leak(i, what)]["evidence"]) for i, what in
                enumerate(LEAKS)}  # fmt: skip
    assert "SIGALRM in" in evidence["alarm"] and "/dev/null" in evidence["fd2"]
    assert "interval timer `ITIMER_REAL`: disarmed -> SIGALRM in" in evidence["alarm"]
    assert "-> 0077 (restored)" in evidence["umask"]
    assert "error::UserWarning" in evidence["warnings"]
    assert "warning: leak/12_thread[n=8,dtype=float32] changed the runner's thread" in proc.stderr
    # The thread could not be stopped: a fresh runner took the cases after it. The thread
    # started when the first runner made the leak's inputs ahead, before the probe ahead of it
    # in the batch had run: that runner ended there, a second ran the probe and the leak, each
    # in its turn, and a third the cases after the leak.
    commands = (run / "commands" / "commands.jsonl").read_text().splitlines()
    # Each runner's final record (its first, written when it started, says `incomplete`).
    statuses = [json.loads(c)["status"] for c in commands]
    assert [s for s in statuses if s != "incomplete"] == ["success", "success", "success"]
    assert_schema_valid(run)


@pytest.mark.slow
def test_a_leak_in_a_round_ends_that_case_early_and_restarts_the_rest(
    tile: TileRun, project: MakeProject
) -> None:
    root = project(["state_leaks.py"], FAST.replace("[bench]\n", "[bench]\nrounds = 3\n"))
    proc = tile("bench", "-k", "_thread", "-k", "leak/00_x64", cwd=root)
    assert proc.returncode == 0, proc.stderr
    run, report = _latest(root)
    cases = {c["kernel"]: c for c in report["cases"]}
    leaked = cases["leak/12_thread"]
    assert leaked["status"] == "success" and leaked["samples"]
    assert leaked["round_sizes"] is None  # one round timed before its runner had to go
    for kernel in ("leak/00_x64", "leak/13_probe_thread"):
        assert cases[kernel]["status"] == "success"
        assert len(cases[kernel]["round_sizes"]) == 3, kernel
    # x64 was set (and put back) in every round of both runners: one finding says so.
    isolation = [f for f in report["findings"] if f["category"] == "isolation"]
    titles = sorted(f["title"].split("[")[0] for f in isolation)
    assert titles == ["leak/00_x64", "leak/12_thread"]
    assert_schema_valid(run)


def test_a_module_set_up_while_a_batch_makes_inputs_ahead_is_kept_in_the_same_runner(
    tile: TileRun, project: MakeProject
) -> None:
    # The first tuned tile-std bench on an H200: jax's Mosaic GPU was first imported while the
    # second case of a batch made its inputs ahead of its turn (its tunables asked whether the
    # GPU has wgmma), and the kept setup still restarted the runner at that case's turn.
    root = project(["state_leaks.py"], FAST)
    i = list(LEAKS).index("setup")
    probe_before, setup, probe_after = (
        f"leak/{2 * i - 1:02d}_",
        _leak(i, "setup"),
        f"leak/{2 * i + 1:02d}_",
    )
    proc = tile("test", "-k", probe_before, "-k", setup, "-k", probe_after, cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert "3 cases, 3 ok" in proc.stderr and "warning:" not in proc.stderr
    run, _ = _latest(root)
    (change,) = [e["fields"] for e in _events(run, "state_change")]
    assert change["case_id"].startswith(setup) and change["restart"] is False
    assert [(d["kept"], d["restored"]) for d in change["changes"]] == [(True, False)]
    commands = (run / "commands" / "commands.jsonl").read_text().splitlines()
    assert [s for s in (json.loads(c)["status"] for c in commands) if s != "incomplete"] == [
        "success"
    ]  # one runner did all three
