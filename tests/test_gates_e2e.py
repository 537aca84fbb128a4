"""Gates that cannot be green by accident, and output a person can read (real `tile` runs).

Every verdict asserted here is decided by something other than timing noise: a baseline of
another device, cases on one side only, a comparison of a run with itself, a noise floor of
1000%, a crash, a raised exception, a wrong kernel. The runs are real CPU runs of tiny kernels.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support import FIXTURES, assert_schema_valid, tile_argv, tile_env

KERNELS = """\
import tile_runner as tile


def _inputs(case, key):
    return (tile.normal(key, (case.n,), case.dtype),)


@tile.kernel(
    "gate/scale",
    inputs=_inputs,
    reference=lambda x: x * 2.0,
    bench=tile.axes(n=[256, 512], dtype=["float32"], mode=["elementwise_approximation"]),
)
def scale(x):
    return x * 2.0


@tile.kernel(
    "gate/a_kernel_whose_name_alone_takes_most_of_an_eighty_column_line",
    inputs=_inputs,
    reference=lambda x: x + 1.0,
    bench=tile.axes(n=[128], dtype=["float32"]),
)
def long_name(x):
    return x + 1.0
"""
TOML = (
    '[project]\npaths = ["kernels"]\n[bench]\nmax_time = 0.05\nmin_runs = 5\nwarmup_runs = 1\n'
    "[history]\nenabled = false\n"
)
SCALE = [
    "gate/scale[n=256,dtype=float32,mode=elementwise_approximation]",
    "gate/scale[n=512,dtype=float32,mode=elementwise_approximation]",
]
LONG = "gate/a_kernel_whose_name_alone_takes_most_of_an_eighty_column_line[n=128,dtype=float32]"
Done = subprocess.CompletedProcess[str]


@dataclass(frozen=True)
class Project:
    root: Path

    def tile(self, *args: str, columns: int = 240, env: dict[str, str] | None = None) -> Done:
        return subprocess.run(
            tile_argv(*args),
            cwd=self.root,
            env=tile_env({"COLUMNS": str(columns), **(env or {})}),
            capture_output=True,
            text=True,
            timeout=300,
        )

    def json(self, relpath: str) -> dict[str, Any]:
        return json.loads((self.root / relpath).read_text())


@pytest.fixture(scope="module")
def proj(tmp_path_factory: pytest.TempPathFactory) -> Project:
    root = tmp_path_factory.mktemp("gates") / "proj"
    (root / "kernels").mkdir(parents=True)
    (root / "kernels" / "gate_kernels.py").write_text(KERNELS)
    (root / "tile.toml").write_text(TOML)
    project = Project(root)
    done = project.tile("bench", "-o", "runs/main", "-v")
    assert done.returncode == 0, done.stdout + done.stderr
    saved = project.tile("baseline", "save", "runs/main", "--dir", "baselines")
    assert saved.returncode == 0, saved.stderr
    assert "baseline from run `bench-" in saved.stderr and "runs/main" in saved.stderr
    return project


def test_o_runs_become_latest_and_baseline_save_refuses_a_run_without_samples(
    proj: Project,
) -> None:
    latest = proj.root / ".tile" / "latest"
    ran = proj.tile("bench", "-k", "n=512", "-o", "runs/one")
    assert ran.returncode == 0, ran.stderr
    assert latest.resolve() == (proj.root / "runs" / "one").resolve()
    built = proj.tile("build", "-k", "gate/scale", "-o", "runs/built")
    assert built.returncode == 0, built.stderr
    assert latest.resolve() == (proj.root / "runs" / "built").resolve()
    # The trap: `baseline save` took the newest run, a build without a single sample.
    refused = proj.tile("baseline", "save", "--dir", "trap")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "error: run `build-" in refused.stderr and "has no bench samples" in refused.stderr
    assert "runs/built" in refused.stderr and "hint:" in refused.stderr
    assert not (proj.root / "trap").exists()
    # The CI step after it does not pass either: there is no baseline to compare against.
    gate = proj.tile("bench", "-k", "n=512", "--compare", "trap", "-o", "runs/gate")
    assert gate.returncode == 2, gate.stdout + gate.stderr
    assert "trap" in gate.stderr and "hint:" in gate.stderr
    assert_schema_valid(proj.root / "runs/gate")  # what it measured is kept


def test_baseline_saves_at_once_each_leave_a_whole_file(proj: Project) -> None:
    # Two CI jobs saving one device's baseline at the same moment: each writes a temp file of
    # its own and renames it, so the survivor is whole and no temp file is left.
    argv = tile_argv("baseline", "save", "runs/main", "--dir", "together")
    env = tile_env({"COLUMNS": "240"})
    jobs = [
        subprocess.Popen(argv, cwd=proj.root, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
        for _ in range(4)
    ]  # fmt: skip
    for job in jobs:
        out, err = job.communicate(timeout=300)
        assert job.returncode == 0, out + err
    assert sorted(p.name for p in (proj.root / "together").iterdir()) == ["cpu.json"]
    saved = proj.json("together/cpu.json")
    assert [c["case_id"] for c in saved["cases"]] == [
        c["case_id"] for c in proj.json("baselines/cpu.json")["cases"]
    ]


def _doctored_baseline(proj: Project, name: str, change: dict[str, object]) -> str:
    doc = proj.json("baselines/cpu.json")
    for key, value in change.items():
        if key == "rename":
            doc["cases"][1]["case_id"] = value
        elif key == "empty":
            for case in doc["cases"]:
                case["samples"] = []
        else:
            doc["device"][key] = value
    (proj.root / name).write_text(json.dumps(doc))
    return name


def test_a_baseline_with_nothing_to_judge_fails_the_gate_with_exit_4(proj: Project) -> None:
    empty = _doctored_baseline(proj, "empty.json", {"empty": True})
    for args in (
        ("compare", empty, "runs/main", "-o", "c-empty.json"),
        ("bench", "-k", "gate/scale", "--compare", empty, "-o", "runs/vs-empty"),
    ):
        proc = proj.tile(*args)
        assert proc.returncode == 4, (args, proc.stdout, proc.stderr)
        assert "no case could be compared" in proc.stderr
    summary = (proj.root / "runs" / "vs-empty" / "summary.md").read_text()
    lines = summary.splitlines()
    assert lines[2].startswith("**Result: ✗ failed (exit 4)** — no case could be compared")
    assert "**Status:** `partial`" in summary and "## Comparison" in summary
    report = proj.json("runs/vs-empty/report.json")
    assert report["summary"]["exit_code"] == 4 and report["run"]["status"] == "partial"
    assert_schema_valid(proj.root / "runs/vs-empty")


def test_cases_on_one_side_only_exit_4_unless_allowed(proj: Project) -> None:
    renamed = _doctored_baseline(proj, "renamed.json", {"rename": "gate/gone[n=1]"})
    # The run against its own samples: the one case both have is neutral, exactly.
    proc = proj.tile("compare", renamed, "runs/main", "-o", "c-renamed.json")
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "1 case of the baseline not in this run (`gate/gone[n=1]`)" in proc.stderr
    assert "without a baseline" in proc.stderr and "--allow-missing" in proc.stderr
    allowed = proj.tile("compare", renamed, "runs/main", "--allow-missing", "-o", "c-ok.json")
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    rows = {r["case_id"]: r for r in proj.json("c-ok.json")["rows"]}
    # The same samples on both sides: exactly no change. Its verdict is neutral, or
    # inconclusive when these few samples (max_time 0.05) scatter wider than the noise band:
    # seen once in a quiet full run; calibrating that verdict is issue 33's.
    row = rows[SCALE[0]]
    assert row["ratio"] == 1.0 and row["percent_change"] == 0.0, row
    assert row["judgement"] in ("neutral", "inconclusive"), row
    other = _doctored_baseline(proj, "h200.json", {"device_kind": "NVIDIA H200"})
    assert proj.tile("compare", other, "runs/main", "--allow-missing").returncode == 4


def test_a_filtered_bench_is_compared_on_the_cases_it_selected(proj: Project) -> None:
    # 1000% of noise floor: no timing can be a regression, the gate only sees coverage.
    proc = proj.tile(
        "bench", "-k", "n=256", "--compare", "baselines", "--noise-floor", "1000", "-o", "runs/f"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = proj.json("runs/f/comparisons.json")["rows"]
    assert [r["case_id"] for r in rows] == [SCALE[0]]
    summary = (proj.root / "runs" / "f" / "summary.md").read_text()
    assert summary.splitlines()[2] == "**Result: ✓ passed**"


@pytest.mark.parametrize("columns", [80, 100, 120])
def test_tables_fit_the_width_and_never_cut_a_case_id(proj: Project, columns: int) -> None:
    bench = proj.tile("bench", "-o", f"runs/w{columns}", "-v", columns=columns)
    assert bench.returncode == 0, bench.stderr
    compare = proj.tile("compare", "runs/main", f"runs/w{columns}", "--noise-floor", "1000",
                        "-o", f"w{columns}.json", columns=columns)  # fmt: skip
    assert compare.returncode == 0, compare.stdout + compare.stderr
    for out in (bench.stdout, compare.stdout):
        lines = out.splitlines()
        assert all(line == line.rstrip() for line in lines), "trailing spaces in piped output"
        too_wide = [line for line in lines if len(line) > columns]
        # Only a case id longer than the console itself may be: alone on its line, whole.
        assert all(line.strip() == LONG for line in too_wide), too_wide
        assert "…" not in out
    for case_id in SCALE:
        kernel, params = case_id.split("[", 1)
        assert kernel in bench.stdout and f"[{params}" in bench.stdout  # title + row
        assert case_id in compare.stdout
    assert LONG in compare.stdout
    accounting = bench.stdout[bench.stdout.index("time accounting") :]
    assert all(case_id in accounting for case_id in [*SCALE, LONG])


def test_unmet_precision_is_flagged_with_what_to_do(proj: Project) -> None:
    proc = proj.tile("bench", "-k", "gate/scale", "--target-precision", "1e-9", "-o", "runs/p")
    assert proc.returncode == 0, proc.stderr
    rows = [line for line in proc.stdout.splitlines() if "mode=elementwise" in line]
    assert len(rows) == 2 and all("⚠" in row for row in rows)
    assert "2 of 2 cases missed the ±1e-07% target precision" in proc.stderr
    assert "--rounds 5" in proc.stderr and "TILE_RUNNER_PIN_CPU=1" in proc.stderr
    summary = (proj.root / "runs" / "p" / "summary.md").read_text()
    # Said once, by the finding that names each case's CI, with the same advice as stderr.
    assert summary.count("2 cases did not reach the target precision") == 1
    assert "cases missed the" not in summary and summary.count("⚠") >= 2
    assert "--rounds 5" in summary and "TILE_RUNNER_PIN_CPU=1" in summary


def test_a_bad_axis_value_is_one_usage_error(proj: Project) -> None:
    for command in ("list", "bench"):
        proc = proj.tile(command, "-a", "n=abc")
        assert proc.returncode == 2, (command, proc.stdout, proc.stderr)
        errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and "'abc'" in errors[0], proc.stderr
        assert "hint:" in proc.stderr and "Traceback" not in proc.stderr and "✗" not in proc.stderr


@pytest.fixture(scope="module")
def crashy(tmp_path_factory: pytest.TempPathFactory) -> Project:
    root = tmp_path_factory.mktemp("crashy") / "proj"
    (root / "kernels").mkdir(parents=True)
    for name in ("crashy.py", "good.py"):
        (root / "kernels" / name).write_text((FIXTURES / name).read_text())
    (root / "tile.toml").write_text(TOML + "[runner]\ncase_timeout = 60\n")
    return Project(root)


def test_failures_say_what_happened_and_show_in_the_table(crashy: Project) -> None:
    proc = crashy.tile(
        "bench", "-k", "b_segfault", "-k", "e_raises", "-k", "fx/wrong", "-vv", "-o", "runs/x"
    )
    assert proc.returncode == 3, proc.stdout + proc.stderr
    # Every planned case has a row: the crash and the exception too.
    assert "crashed" in proc.stdout and "raised" in proc.stdout
    assert "SIGSEGV in native code" in proc.stderr
    # -vv: the kernel's own traceback, down to the line that raised.
    assert "Traceback (most recent call last)" in proc.stderr
    assert 'raise RuntimeError("kernel exploded on purpose")' in proc.stderr
    segv = crashy.tile("bench", "-k", "b_segfault", "-o", "runs/segv")
    assert segv.returncode == 3
    assert "SIGSEGV in native code" in segv.stderr and "a kernel raised" not in segv.stderr
    summary = (crashy.root / "runs" / "x" / "summary.md").read_text()
    assert summary.splitlines()[2].startswith("**Result: ✗ failed (exit 3)**")
    assert "## Failures" in summary and "RunnerCrash" in summary
    assert "- `fx/wrong[n=256,dtype=float32]` — wrong output:" in summary
