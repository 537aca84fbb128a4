"""`tile tune` with real runners: constraints, pruning, a wrong and a crashing configuration,
the tuning file, and bench running what the tune chose."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support import MakeProject, TileRun, assert_schema_valid, make_project, run_tile

FAST = (
    "[bench]\nmax_time = 0.1\nmin_runs = 5\nwarmup_runs = 1\n"
    "[tune]\nmin_runs = 3\nmax_time = 0.02\n"
)


@dataclass(frozen=True)
class Tuned:
    """A project after `tile tune --kernel fx/reps`, made once for the tests that start there."""

    root: Path
    proc: subprocess.CompletedProcess[str]
    out: Path  # the tune's run directory

    def copy(self, to: Path) -> Path:
        """A project of its own, tuned, for a test that changes it."""
        return shutil.copytree(self.root, to)


@pytest.fixture(scope="module")
def tuned(tmp_path_factory: pytest.TempPathFactory) -> Tuned:
    base = tmp_path_factory.mktemp("tuned")
    root = make_project(base / "proj", ["tunable.py"], FAST)
    out = base / "tune-run"
    return Tuned(root, run_tile("tune", "--kernel", "fx/reps", "-o", str(out), cwd=root), out)


def _tuning(root: Path) -> dict[str, dict[str, object]]:
    [path] = (root / "tuning").glob("*.json")
    doc = json.loads(path.read_text())
    assert doc["schema_name"] == "tile.tuning"
    return {e["case_id"]: e for e in doc["entries"]}


def test_dry_run_counts_configurations_and_constraints(tile: TileRun, project: MakeProject) -> None:
    root = project(["tunable.py"], FAST)
    proc = tile("tune", "--kernel", "fx/reps", "--dry-run", cwd=root)
    assert proc.returncode == 0, proc.stderr
    # 3 reps x 2 variants, of which the constraint rules out the 2 with 64 reps at n=512.
    assert "1 cases, 4 configurations (2 ruled out by constraints)" in proc.stdout
    assert "fx/reps[n=512]: 4 configurations" in proc.stdout
    assert not (root / ".tile").exists() or not list((root / ".tile").rglob("report.json"))


def test_tune_picks_the_fastest_correct_configuration_and_bench_uses_it(
    tile: TileRun, tuned: Tuned, tmp_path: Path
) -> None:
    proc, out = tuned.proc, tuned.out
    assert proc.returncode == 0, proc.stderr
    root = tuned.copy(tmp_path / "proj")  # its tuning file is edited below
    entry = _tuning(root)["fx/reps[n=512]"]
    # The wrong variant is never chosen, however fast; 1 rep does the least work.
    assert entry["values"] == {"reps": "1", "variant": "right"} and entry["held"] is None
    assert entry["decided_by"] in ("faster", "tie_default", "tie_simplest")
    report = json.loads((out / "report.json").read_text())
    by_id = {c["case_id"]: c for c in report["cases"]}
    assert by_id["fx/reps[n=512]{reps=1,variant=wrong}"]["status"] == "failed"  # checked first
    assert by_id["fx/reps[n=512]{reps=64,variant=right}"]["status"] == "skipped"
    assert any("64 reps only pay off" in f["message"] for f in report["failures"])
    # The tune's own finding (its winner) first; tile's findings about the run after it.
    finding, *others = report["findings"]
    assert finding["category"] == "tuning" and "{reps=1,variant=right}" in finding["title"]
    assert "correctness" in {f["category"] for f in others}  # the wrong variant
    assert_schema_valid(out)
    # Rung 0 and the finalists' measurement in one runner, which kept its executables.
    assert _runners_started(out) == 1
    # Every configuration tried, in a table on stdout and in tune.md (issue 40): the winner
    # marked, the wrong variant and the ruled-out ones said as such.
    rows = {line.split()[1] if line.split()[0] == "★" else line.split()[0]: line
            for line in proc.stdout.splitlines() if "{reps=" in line}  # fmt: skip
    assert rows["{reps=1,variant=right}"].split()[0] == "★"
    assert "winner" in rows["{reps=1,variant=right}"]
    assert "ok" in rows["{reps=8,variant=right}"].split()
    assert "runner-up" in rows["{reps=8,variant=right}"]
    assert "wrong output" in rows["{reps=1,variant=wrong}"]
    assert "ruled out: 64 reps only pay off" in rows["{reps=64,variant=right}"]
    table = (out / "tune.md").read_text()
    assert "| **`{reps=1,variant=right}`** |" in table and "| `{reps=8,variant=wrong}` |" in table
    assert "tune.md" in (out / "summary.md").read_text()

    bench = tile("bench", "--kernel", "fx/reps", "-o", str(tmp_path / "b1"), cwd=root)
    assert bench.returncode == 0, bench.stderr
    [case] = json.loads((tmp_path / "b1" / "report.json").read_text())["cases"]
    assert case["config"]["source"] == "tuned"
    assert case["config"]["values"] == {"reps": "1", "variant": "right"}

    override = tile("bench", "--kernel", "fx/reps", "--tunable", "reps=8",
                    "-o", str(tmp_path / "b2"), cwd=root)  # fmt: skip
    assert override.returncode == 0, override.stderr
    [case] = json.loads((tmp_path / "b2" / "report.json").read_text())["cases"]
    assert case["config"] == {
        "values": {"reps": "8", "variant": "right"},
        "source": "override",
        "signature": case["config"]["signature"],
        "note": None,
    }

    # The tuning file names the CPU model it was tuned on; on another model the entry is not
    # used, and the row says why (issue 40: every CPU's kind is `cpu`).
    [path] = (root / "tuning").glob("*.json")
    doc = json.loads(path.read_text())
    model = report["device"]["model"]
    assert model and doc["entries"][0]["device_model"] == model
    doc["entries"][0]["device_model"] = "Other CPU 9000, 128 cores"
    path.write_text(json.dumps(doc))
    other = tile("bench", "--kernel", "fx/reps", "-o", str(tmp_path / "b3"), cwd=root)
    assert other.returncode == 0, other.stderr
    [case] = json.loads((tmp_path / "b3" / "report.json").read_text())["cases"]
    assert case["config"]["source"] == "default"
    assert f"tuned it on Other CPU 9000, 128 cores, not {model}" in case["config"]["note"]


def test_a_changed_tunable_set_invalidates_the_entry(
    tile: TileRun, tuned: Tuned, tmp_path: Path
) -> None:
    assert tuned.proc.returncode == 0, tuned.proc.stderr
    root = tuned.copy(tmp_path / "proj")
    assert _tuning(root)["fx/reps[n=512]"]["values"] == {"reps": "1", "variant": "right"}
    module = root / "kernels" / "tunable.py"
    module.write_text(module.read_text().replace("reps=[1, 8, 64]", "reps=[1, 8, 32, 64]"))
    bench = tile("bench", "--kernel", "fx/reps", "-o", str(tmp_path / "b"), cwd=root)
    assert bench.returncode == 0, bench.stderr
    [case] = json.loads((tmp_path / "b" / "report.json").read_text())["cases"]
    assert case["config"]["source"] == "default"
    assert case["config"]["values"]["reps"] == "8"


def _tune_ok(tile: TileRun, root: Path, kernel: str, out: Path) -> tuple[str, dict[str, Any]]:
    """`tile tune --kernel KERNEL -o OUT`, which must succeed: its stdout and report."""
    proc = tile("tune", "--kernel", kernel, "-o", str(out), cwd=root)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, json.loads((out / "report.json").read_text())


def test_a_configuration_that_kills_its_runner_does_not_end_the_tune(
    tile: TileRun, project: MakeProject, tmp_path: Path
) -> None:
    root = project(["tunable.py"], FAST)
    stdout, report = _tune_ok(tile, root, "fx/crashy_config", tmp_path / "crashy")
    assert _tuning(root)["fx/crashy_config[n=256]"]["values"] == {"mode": "ok"}
    crashed = [
        f for f in report["failures"] if f["case_id"] == "fx/crashy_config[n=256]{mode=crash}"
    ]
    assert crashed and crashed[0]["exception_type"] == "RunnerCrash"
    crash_row = next(line for line in stdout.splitlines() if "{mode=crash}" in line)
    assert "failed:" in crash_row


def _runners_started(run_dir: Path) -> int:
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    return sum(e["event"] == "runner_started" for e in events)


def test_isolate_gives_every_timed_configuration_a_runner_of_its_own(
    tile: TileRun, project: MakeProject, tmp_path: Path
) -> None:
    # `[runner] isolate` is how a user keeps a configuration that corrupts its process away
    # from the others; tune's sessions used to ignore it and time a rung in one runner.
    root = project(["tunable.py"], FAST)
    out = tmp_path / "isolated"
    argv = ("tune", "--kernel", "fx/crashy_config", "-o", str(out), "runner.isolate=true")
    proc = tile(*argv, cwd=root)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    timed = [e["message"] for e in events if e["event"] == "case_start"]
    assert {"fx/crashy_config[n=256]{mode=ok}", "fx/crashy_config[n=256]{mode=crash}"} <= set(timed)
    # Each configuration timed in a runner of its own, after a plan runner (without isolate:
    # the runner the crash killed, then one fresh runner for the rest).
    assert _runners_started(out) >= len(timed) + 1
    assert _tuning(root)["fx/crashy_config[n=256]"]["values"] == {"mode": "ok"}


def test_a_configuration_that_kills_its_runner_in_a_later_rung_leaves_the_rest_timed(
    tile: TileRun, project: MakeProject, tmp_path: Path
) -> None:
    # Rung 0 is a few calls, the finalists' measurement 400: `crash_late` kills the runner
    # that kept its executable from rung 0 midway through the final rung, where it comes
    # first; `plain`, which the dead runner did not reach, is timed by a fresh one.
    config = (
        "[bench]\nmin_runs = 400\nmax_runs = 400\nmax_time = 60\nwarmup_runs = 1\n"
        "[tune]\nmin_runs = 3\nmax_time = 0.001\n"
    )
    root = project(["tunable.py"], config)
    out = tmp_path / "late"
    _, report = _tune_ok(tile, root, "fx/late_crash", out)
    assert _tuning(root)["fx/late_crash[n=256]"]["values"] == {"mode": "plain"}
    by_id = {c["case_id"]: c for c in report["cases"]}
    # Not its rung-0 result: a configuration that crashed in the final is no finalist.
    assert by_id["fx/late_crash[n=256]{mode=crash_late}"]["status"] == "failed"
    [crash] = [f for f in report["failures"] if f["case_id"].endswith("{mode=crash_late}")]
    assert crash["exception_type"] == "RunnerCrash"
    assert by_id["fx/late_crash[n=256]{mode=plain}"]["stats"]["n"] == 400
    assert _runners_started(out) == 2  # the one that kept its executables, then the fresh one
    assert_schema_valid(out)


def test_bad_tunable_override_is_a_clear_error(
    tile: TileRun, project: MakeProject, tmp_path: Path
) -> None:
    root = project(["tunable.py"], FAST)
    proc = tile("bench", "--kernel", "fx/reps", "--tunable", "reps", cwd=root)
    assert proc.returncode == 2
    assert "bad tunable override" in proc.stderr and "hint:" in proc.stderr
    out = tmp_path / "outside"
    outside = tile("bench", "--kernel", "fx/reps", "--tunable", "reps=3", "-o", str(out), cwd=root)
    assert outside.returncode == 2
    assert (
        "error: kernel `fx/reps`: `--tunable` reps=3 is not among its values (1, 8, 64)\nhint: "
        in outside.stderr
    )
    # The first runner refused it: a CPU run's second process has nothing to time again.
    assert _runners_started(out) == 1
    report = json.loads((out / "report.json").read_text())
    assert report["run"]["status"] == "invalid" and report["cases"] == []


def test_a_tunable_held_fixed_tunes_the_others_around_it(
    tile: TileRun, project: MakeProject, tmp_path: Path
) -> None:
    root = project(["tunable.py"], FAST)
    out = tmp_path / "run"
    proc = tile("tune", "--kernel", "fx/reps", "--tunable", "reps=8", "-o", str(out), cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert "tile tune: 1 cases, 2 configurations with reps=8 held (0 ruled out" in proc.stderr
    report = json.loads((out / "report.json").read_text())
    assert sorted(c["case_id"] for c in report["cases"]) == [
        "fx/reps[n=512]{reps=8,variant=right}",
        "fx/reps[n=512]{reps=8,variant=wrong}",
    ]
    entry = _tuning(root)["fx/reps[n=512]"]
    assert entry["values"] == {"reps": "8", "variant": "right"} and entry["held"] == {"reps": "8"}
    # bench runs the winner, and says it is the fastest with reps=8, not of every value.
    out = tmp_path / "bench"
    bench = tile("bench", "--kernel", "fx/reps", "--processes", "1", "-o", str(out), cwd=root)
    assert bench.returncode == 0, bench.stderr
    [case] = json.loads((out / "report.json").read_text())["cases"]
    assert (
        case["config"]["source"] == "tuned" and case["config"]["note"] == "tuned with reps=8 held"
    )
    refused = tile("tune", "--kernel", "fx/reps", "--tunable", "reps=3", "--dry-run", cwd=root)
    assert refused.returncode == 2 and "reps=3 is not among its values" in refused.stderr
    # A value the constraint rules out everywhere leaves nothing to tune, and says so.
    none_left = tile("tune", "--kernel", "fx/reps", "--tunable", "reps=64", cwd=root)
    assert none_left.returncode == 3
    said = "fx/reps[n=512]: no configuration with reps=64 allowed by the constraint"
    assert said in none_left.stdout + none_left.stderr


def test_zero_rungs_measure_every_configuration_and_the_pruned_winner_is_checked_against_them(
    tile: TileRun, tuned: Tuned, tmp_path: Path
) -> None:
    """`tune.rungs=0` is the exhaustive sweep of issue #34: no rung prunes, every correct
    configuration gets the [bench] measurement; benchmarks/tune_vs_exhaustive.py then judges
    the pruned tune's winner by it."""
    assert tuned.proc.returncode == 0, tuned.proc.stderr
    root = tuned.copy(tmp_path / "proj")
    [tuning] = (root / "tuning").glob("*.json")
    out = tmp_path / "exhaustive"
    proc = tile("tune", "--kernel", "fx/reps", "tune.rungs=0", "tune.dir=exhaustive",
                "-o", str(out), cwd=root)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "pruned after rung" not in proc.stdout
    report = json.loads((out / "report.json").read_text())
    timed = {c["case_id"]: c["stats"]["n"] for c in report["cases"] if c["status"] == "success"}
    assert set(timed) == {
        "fx/reps[n=512]{reps=1,variant=right}",
        "fx/reps[n=512]{reps=8,variant=right}",
    }
    assert min(timed.values()) >= 5  # [bench] min_runs: the full measurement, not a rung's
    script = Path(__file__).parents[1] / "benchmarks" / "tune_vs_exhaustive.py"
    judged = subprocess.run([sys.executable, str(script), str(tuning), str(out)],
                            capture_output=True, text=True, check=False)  # fmt: skip
    assert judged.returncode == 0, judged.stdout + judged.stderr
    assert "winners within the exhaustive best's CI: 1/1" in judged.stdout
    # A winner the sweep measured slower than the best's CI is called out, with exit 1.
    doc = json.loads(tuning.read_text())
    doc["entries"][0]["values"] = {"reps": "8", "variant": "right"}
    tuning.write_text(json.dumps(doc))
    slower = subprocess.run([sys.executable, str(script), str(tuning), str(out)],
                            capture_output=True, text=True, check=False)  # fmt: skip
    assert slower.returncode == 1 and "SLOWER" in slower.stdout
