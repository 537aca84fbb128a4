"""`tile compare`, `tile baseline save` and `tile bench --compare` end to end, on real CPU runs.

The kernel waits on the host (a `pure_callback` that sleeps 20 ms) instead of computing: on a
shared 2-core VM the speed of compute kernels moves 10-50% between runs (benchmarks/
compare_false_alarms.py measures how the verdicts cope with that), while such a wait moves by
about 1% (a 4 ms one still moved 5%: the callback's own ~1 ms of CPU time wanders). So these
tests check the wiring, the verdicts and the exit codes without flaking. The reference waits as
long as the unchanged kernel, a steady drift control; `E2E_WAIT_MS=30` makes the kernel 1.5x
slower.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support import assert_schema_valid, tile_argv, tile_env

import tile_harness as th
from tile_artifacts.compare import BasisSetting
from tile_config import CompareConfig

pytestmark = pytest.mark.slow

KERNELS = """\
import os
import time

import jax
import numpy as np

import tile_runner as tile

WAIT_S = float(os.environ.get("E2E_WAIT_MS", "20")) / 1000
REF_WAIT_S = 0.020


def _wait_then(x, seconds):
    def host(value):
        time.sleep(seconds)
        return np.asarray(value)

    return jax.pure_callback(host, jax.ShapeDtypeStruct(x.shape, x.dtype), x)


@tile.kernel(
    "e2e/wait",
    inputs=lambda case, key: (tile.normal(key, (case.n,), "float32"),),
    reference=lambda x: _wait_then(x, REF_WAIT_S) * 2.0 + 1.0,
    bench=tile.axes(n=[256]),
)
def wait(x):
    return _wait_then(x, WAIT_S) * 2.0 + 1.0
"""
TOML = '[project]\npaths = ["kernels"]\n\n[bench]\nwarmup_runs = 2\nmin_runs = 10\nmax_time = 0.6\n'
CASE = "e2e/wait[n=256]"
Done = subprocess.CompletedProcess[str]


def _tile(root: Path, *args: str, env: dict[str, str] | None = None) -> Done:
    """Run `tile ARGS` in `root`; any exit code is returned."""
    return subprocess.run(
        tile_argv(*args), cwd=root, env=tile_env(env), capture_output=True, text=True, timeout=300
    )


@dataclass(frozen=True)
class Project:
    """A project measured once per module: the runs every test below compares."""

    root: Path
    again: Done  # `bench --compare baselines` of the same code
    slower: Done  # `bench --compare baselines` with the kernel 1.5x slower

    def tile(self, *args: str) -> Done:
        """Run `tile ARGS` in the project."""
        return _tile(self.root, *args)


def _rows(path: Path) -> dict[str, dict[str, Any]]:
    return {row["case_id"]: row for row in json.loads(path.read_text())["rows"]}


def _judged(
    proj: Project,
    base: str,
    cur: str,
    *,
    basis: BasisSetting = "auto",
    fail_on_inconclusive: bool = False,
) -> tuple[int, dict[str, dict[str, Any]]]:
    """What `tile compare BASE CUR` decides, in process (`judge_paths`, which the command
    calls): its exit code and rows as written by `-o`. The tests above run the command as a
    real process: its table, `-o`, formats, flags against config, exit codes and errors."""
    config = CompareConfig(basis=basis, fail_on_inconclusive=fail_on_inconclusive)
    doc, outcome = th.judge_paths(proj.root / base, proj.root / cur, config)
    return outcome.code, {row.case_id: row.model_dump(mode="json") for row in doc.rows}


@pytest.fixture(scope="module")
def proj(tmp_path_factory: pytest.TempPathFactory) -> Project:
    root = tmp_path_factory.mktemp("compare") / "proj"
    (root / "kernels").mkdir(parents=True)
    (root / "kernels" / "e2e_kernels.py").write_text(KERNELS)
    (root / "tile.toml").write_text(TOML)
    first = _tile(root, "bench", "-o", "runs/a")
    assert first.returncode == 0, first.stderr
    saved = _tile(root, "baseline", "save", "runs/a", "--dir", "baselines", "--label", "main")
    assert saved.returncode == 0, saved.stderr
    assert saved.stdout.strip() == str(Path("baselines") / "cpu.json")
    # A second baseline for another device sits beside it; `--compare baselines` must skip it.
    other = json.loads((root / "baselines" / "cpu.json").read_text())
    other["device"]["device_kind"] = "NVIDIA H200"
    (root / "baselines" / "nvidia-h200.json").write_text(json.dumps(other))
    again = _tile(root, "bench", "-o", "runs/a2", "--compare", "baselines")
    slower = _tile(
        root, "bench", "-o", "runs/b", "--compare", "baselines", env={"E2E_WAIT_MS": "30"}
    )
    few = _tile(root, "bench", "-o", "runs/few", "--min-runs", "3", "--max-runs", "3")
    assert few.returncode == 0, few.stderr
    return Project(root, again=again, slower=slower)


def test_same_code_measured_twice_is_neutral_and_exits_0(proj: Project) -> None:
    assert proj.again.returncode == 0, proj.again.stdout + proj.again.stderr
    doc = json.loads((proj.root / "runs" / "a2" / "comparisons.json").read_text())
    # the baseline was picked by device: cpu.json, not the H200 file beside it
    assert Path(doc["baseline"]["report_path"]).name == "cpu.json"
    assert doc["baseline"]["label"].endswith("cpu.json")
    assert {row["judgement"] for row in doc["rows"]} <= {"neutral", "inconclusive"}
    assert doc["summary"]["regression_count"] == 0
    assert CASE in proj.again.stdout  # the comparison table follows the bench table
    direct = proj.tile("compare", "runs/a", "runs/a2", "-o", "aa.json")
    assert direct.returncode == 0, direct.stdout + direct.stderr
    assert _rows(proj.root / "aa.json")[CASE]["judgement"] in ("neutral", "inconclusive")
    # The directory `--compare baselines` takes works for `tile compare` too, either side
    # (issue 40): the file of the run's device, not the H200 one beside it.
    for sides in (("baselines", "runs/a2"), ("runs/a2", "baselines")):
        by_dir = proj.tile("compare", *sides, "-o", "dir.json")
        assert by_dir.returncode == 0, by_dir.stdout + by_dir.stderr
        doc = json.loads((proj.root / "dir.json").read_text())
        paths = (doc["baseline"]["report_path"], doc["current"]["report_path"])
        assert [Path(p).name for p in paths].count("cpu.json") == 1


def test_a_kernel_one_and_a_half_times_slower_is_a_regression_exit_1(proj: Project) -> None:
    assert proj.slower.returncode == 1, proj.slower.stdout + proj.slower.stderr
    assert "regression" in proj.slower.stdout
    proc = proj.tile("compare", "runs/a", "runs/b", "-o", "ab.json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    row = _rows(proj.root / "ab.json")[CASE]
    assert row["judgement"] == "regression"
    assert 1.3 < row["ratio"] < 1.7 and row["ratio_ci_low"] > 1.02
    assert row["p_value"] < 0.05
    table = [line for line in proc.stdout.splitlines() if CASE in line]
    assert len(table) == 1 and "regression" in table[0]


def test_compare_writes_a_file_only_when_asked(proj: Project) -> None:
    before = sorted(p.name for p in proj.root.iterdir())
    proc = proj.tile("compare", "runs/a", "runs/b")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "regression" in proc.stdout and "wrote" not in proc.stderr
    assert sorted(p.name for p in proj.root.iterdir()) == before
    # A file where the directory should be: no one can write there, root included.
    nowhere = proj.tile("compare", "runs/a", "runs/b", "-o", "runs/a/report.json/c.json")
    assert nowhere.returncode == 2, nowhere.stdout + nowhere.stderr
    assert "error: cannot write `runs/a/report.json/c.json`" in nowhere.stderr
    assert "hint:" in nowhere.stderr


def test_a_baseline_from_another_device_is_not_comparable_and_exits_4(proj: Project) -> None:
    proc = proj.tile("compare", "baselines/nvidia-h200.json", "runs/a2", "-o", "dev.json")
    # Nothing could be judged: a gate that checked nothing must not pass.
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "exit 4: no case could be compared against `baselines/nvidia-h200.json`" in proc.stderr
    row = _rows(proj.root / "dev.json")[CASE]
    assert row["judgement"] == "not_comparable"
    assert row["reason"] == "device kind differs: `NVIDIA H200` vs `cpu`"
    assert row["ratio"] is None


@pytest.mark.parametrize("damage", ["corrupt", "schema_version"])
def test_an_unusable_baseline_exits_2_naming_the_file(proj: Project, damage: str) -> None:
    bad = proj.root / f"bad-{damage}.json"
    if damage == "corrupt":
        bad.write_text('{"schema_name": "tile.baseline", "cases": [')
    else:
        doc = json.loads((proj.root / "baselines" / "cpu.json").read_text())
        doc["schema_version"] = 2
        bad.write_text(json.dumps(doc))
    for args in (
        ["compare", bad.name, "runs/a"],
        ["bench", "-o", f"runs/x-{damage}", "--compare", bad.name],
    ):
        proc = proj.tile(*args)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert bad.name in proc.stderr, proc.stderr
    missing = proj.tile("compare", "nowhere.json", "runs/a")
    assert missing.returncode == 2 and "nowhere.json" in missing.stderr


def test_markdown_is_one_table_regressions_first(proj: Project) -> None:
    proc = proj.tile("compare", "runs/a", "runs/b", "--format", "markdown", "-o", "md.json")
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert lines[0].startswith("**time_s: 1 regression(s), 0 improvement(s)")
    table = [i for i, line in enumerate(lines) if line.startswith("|")]
    assert table == list(range(table[0], len(lines)))  # one contiguous block, at the end
    assert sum(line.startswith("|---") for line in lines) == 1
    assert f"`{CASE}`" in lines[table[2]] and "regression" in lines[table[2]]


def test_fail_on_inconclusive_exits_4(proj: Project) -> None:
    # 3 samples a side are too few to judge: inconclusive whatever the machine does.
    code, rows = _judged(proj, "runs/a", "runs/few")
    assert code == 0, rows
    row = rows[CASE]
    assert row["judgement"] == "inconclusive"
    assert row["reason"].startswith("too few samples")
    strict = proj.tile("compare", "runs/a", "runs/few", "--fail-on-inconclusive", "-o", "f4.json")
    assert strict.returncode == 4, strict.stdout + strict.stderr
    # a regression outranks inconclusive rows: still 1
    assert _judged(proj, "runs/a", "runs/b", fail_on_inconclusive=True)[0] == 1


def test_basis_relative_absolute_and_config_default(proj: Project) -> None:
    # `bench --compare` judged its case relative to the reference timed interleaved with it.
    doc = json.loads((proj.root / "runs" / "b" / "comparisons.json").read_text())
    assert doc["thresholds"]["basis"] == "auto"
    assert doc["rows"][0]["basis"] == "relative"
    report = json.loads((proj.root / "runs" / "b" / "report.json").read_text())
    reference = report["cases"][0]["reference"]
    assert reference["interleaved"] is True
    assert len(reference["samples"]) == len(report["cases"][0]["samples"])
    for basis in ("relative", "absolute"):
        proc = proj.tile("compare", "runs/a", "runs/b", "--basis", basis, "-o", f"{basis}.json")
        assert proc.returncode == 1, proc.stdout + proc.stderr
        row = _rows(proj.root / f"{basis}.json")[CASE]
        assert row["basis"] == basis and row["judgement"] == "regression"
        assert ("relative to its reference, timed interleaved" in row["reason"]) == (
            basis == "relative"
        )
        assert 1.3 < row["ratio"] < 1.7
        assert row["current_value"] > 0.025  # the absolute medians either way
        table = [line for line in proc.stdout.splitlines() if CASE in line]
        assert len(table) == 1 and f" {basis} " in table[0]
    # `[compare]` (here from the environment) sets the default; the flag wins over it.
    env = {"TILE_COMPARE_BASIS": "absolute", "TILE_COMPARE_FAIL_ON_INCONCLUSIVE": "true"}
    by_env = _tile(proj.root, "compare", "runs/a", "runs/few", "-o", "env.json", env=env)
    assert by_env.returncode == 4, by_env.stdout + by_env.stderr
    assert _rows(proj.root / "env.json")[CASE]["basis"] == "absolute"
    by_flag = _tile(
        proj.root,
        *("compare", "runs/a", "runs/few", "-o", "flag.json"),
        *("--basis", "relative", "--no-fail-on-inconclusive"),
        env=env,
    )
    assert by_flag.returncode == 0, by_flag.stdout + by_flag.stderr
    assert _rows(proj.root / "flag.json")[CASE]["basis"] == "relative"
    bad = _tile(proj.root, "compare", "runs/a", "runs/b", env={"TILE_COMPARE_BASIS": "ratio"})
    assert bad.returncode == 2 and "TILE_COMPARE_BASIS" in bad.stderr


def test_a_baseline_from_before_interleaving(proj: Project) -> None:
    # A baseline written before tile timed references interleaved has no such key.
    old = json.loads((proj.root / "baselines" / "cpu.json").read_text())
    for case in old["cases"]:
        del case["reference_interleaved"]
    (proj.root / "old-baseline.json").write_text(json.dumps(old))
    assert_schema_valid(proj.root / "old-baseline.json")
    code, rows = _judged(proj, "old-baseline.json", "runs/b")
    assert code == 1, rows
    assert rows[CASE]["basis"] == "absolute"
    code, rows = _judged(proj, "old-baseline.json", "runs/b", basis="relative")
    assert code == 4, rows  # nothing could be judged
    row = rows[CASE]
    assert row["judgement"] == "not_comparable" and row["basis"] is None
    assert "no reference samples timed interleaved in baseline" in row["reason"]


def test_pinned_runs_record_the_core_and_judge_with_the_block_bootstrap(proj: Project) -> None:
    pinned = {"TILE_RUNNER_PIN_CPU": "1"}
    base = _tile(proj.root, "bench", "-o", "runs/pa", env=pinned)
    assert base.returncode == 0, base.stderr
    report = json.loads((proj.root / "runs" / "pa" / "report.json").read_text())
    assert isinstance(report["context"]["pinned_cpu"], int)
    slower = _tile(proj.root, "bench", "-o", "runs/pb", env={**pinned, "E2E_WAIT_MS": "30"})
    assert slower.returncode == 0, slower.stderr
    code, rows = _judged(proj, "runs/pa", "runs/pb")
    assert code == 1, rows
    row = rows[CASE]
    assert row["judgement"] == "regression" and row["basis"] == "relative"
    assert row["reason"].endswith("block bootstrap CI")
    # An unpinned run on one side: the ordinary relative rule.
    _, rows = _judged(proj, "runs/a", "runs/pb")
    assert "block bootstrap" not in rows[CASE]["reason"], rows
    saved = proj.tile("baseline", "save", "runs/pa", "--dir", "pinned-baselines")
    assert saved.returncode == 0, saved.stderr
    assert (
        json.loads((proj.root / "pinned-baselines" / "cpu.json").read_text())["pinned_cpu"]
        == (report["context"]["pinned_cpu"])
    )


def test_runs_in_rounds_are_judged_on_the_scatter_between_rounds(proj: Project) -> None:
    rounds = {"TILE_BENCH_ROUNDS": "4"}
    for name, env in (("ra", rounds), ("rb", rounds), ("rslow", {**rounds, "E2E_WAIT_MS": "30"})):
        done = _tile(proj.root, "bench", "-o", f"runs/{name}", env=env)
        assert done.returncode == 0, done.stderr
    case = json.loads((proj.root / "runs" / "ra" / "report.json").read_text())["cases"][0]
    assert len(case["round_sizes"]) == 4 and sum(case["round_sizes"]) == case["stats"]["n"]
    code, rows = _judged(proj, "runs/ra", "runs/rb")
    assert code == 0, rows
    row = rows[CASE]
    assert row["judgement"] in ("neutral", "inconclusive")
    assert row["reason"].endswith("CI from 4 and 4 rounds")
    code, rows = _judged(proj, "runs/ra", "runs/rslow")
    assert code == 1, rows
    row = rows[CASE]
    assert row["judgement"] == "regression" and row["reason"].endswith("4 and 4 rounds")
    # A baseline keeps the rounds; against a run in one go the ordinary rule applies.
    saved = proj.tile("baseline", "save", "runs/ra", "--dir", "round-baselines")
    assert saved.returncode == 0, saved.stderr
    baseline = json.loads((proj.root / "round-baselines" / "cpu.json").read_text())
    assert baseline["cases"][0]["round_sizes"] == case["round_sizes"]
    _, rows = _judged(proj, "runs/a", "runs/rb")
    assert "rounds" not in rows[CASE]["reason"], rows


def test_a_baseline_pooled_from_several_runs_judges_against_their_spread(proj: Project) -> None:
    saved = proj.tile("baseline", "save", "runs/a", "runs/a2", "--dir", "pooled")
    assert saved.returncode == 0, saved.stderr
    pooled = json.loads((proj.root / "pooled" / "cpu.json").read_text())
    reports = [
        json.loads((proj.root / "runs" / r / "report.json").read_text()) for r in ["a", "a2"]
    ]
    assert pooled["run_ids"] == [r["run"]["run_id"] for r in reports]
    [case] = pooled["cases"]
    assert case["run_sizes"] == [len(r["cases"][0]["samples"]) for r in reports]
    assert case["stats"]["n"] == sum(case["run_sizes"])
    # Two pooled runs leave the t test one degree of freedom (t = 12.7 at 95%): a 1.5x change
    # is within its reach only when the two runs agree to ~3%, which a loaded machine breaks
    # (p = 0.058 once). A 3x slowdown needs them within ~12%.
    slower = _tile(proj.root, "bench", "-o", "runs/b3", env={"E2E_WAIT_MS": "60"})
    assert slower.returncode == 0, slower.stderr
    code, rows = _judged(proj, "pooled/cpu.json", "runs/b3")
    assert code == 1, rows
    row = rows[CASE]
    assert row["judgement"] == "regression"
    assert row["reason"].endswith("CI from the spread of 2 and 1 runner processes")
    # Runs of another device cannot be pooled: exit 2, naming both kinds.
    other = proj.root / "runs" / "other"
    other.mkdir(exist_ok=True)
    report = json.loads((proj.root / "runs" / "a" / "report.json").read_text())
    report["device"]["device_kind"] = "NVIDIA H200"
    (other / "report.json").write_text(json.dumps(report))
    mixed = proj.tile("baseline", "save", "runs/a", "runs/other", "--dir", "pooled-bad")
    assert mixed.returncode == 2, mixed.stdout + mixed.stderr
    assert "different devices" in mixed.stderr and "NVIDIA H200" in mixed.stderr
    assert not (proj.root / "pooled-bad").exists()
