"""Campaigns end to end: real `tile` processes, real runners on the CPU, real run directories.

A campaign's plan lists the cases with a real runner; `tile campaign run` starts one real
`tile bench` per unit; the kill test sends SIGKILL to a running campaign and resumes it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from support import MakeProject, TileRun, assert_schema_valid, tile_argv, tile_env, wait_for

import tile_artifacts as ta

FAST = "[bench]\nmax_time = 0.05\nmin_runs = 5\nwarmup_runs = 1\n[runner]\ncase_timeout = 60\n"
SCALE = ["fx/scale[n=256,dtype=float32]", "fx/scale[n=1024,dtype=float32]"]
SQUARE = "fx/square[n=512,dtype=float32]"


def _campaign(root: Path, name: str, text: str) -> None:
    (root / "campaigns").mkdir(exist_ok=True)
    (root / "campaigns" / f"{name}.toml").write_text(text)


def _json(path: Path) -> Any:
    return json.loads(path.read_text())


def _plan(tile: TileRun, root: Path, name: str, *args: str) -> dict[str, Any]:
    proc = tile("campaign", "plan", name, "--json", *args, cwd=root)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _sets(args: list[str]) -> dict[str, str]:
    pairs = [args[i + 1] for i, a in enumerate(args) if a == "--set"]
    return dict(p.split("=", 1) for p in pairs)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _no_traceback(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "error:" in proc.stderr and "hint:" in proc.stderr, proc.stderr


# ---------------------------------------------------------------- plans


def test_plan_is_variants_x_perturbations_x_machines(tile: TileRun, project: MakeProject) -> None:
    root = project(
        ["good.py"], FAST + '[runner.env]\nXLA_FLAGS = "--xla_backend_optimization_level=1"\n'
    )
    _campaign(
        root,
        "grid",
        f"""
[select]
kernels = "fx/scale, fx/squ*"
filters = ["float32"]

[variants.warm]
[variants.cold]
bench = {{ cold = true }}

[perturb.XLA_FLAGS]
base = ""
dump = "--xla_dump_hlo_as_text"

[machines.here]
[machines.two]
shards = 2
python = "{sys.executable}"
""",
    )
    # -X importtime lists every module the real `tile` process imports: never jax nor numpy.
    proc = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "tile_cli",
            "campaign",
            "plan",
            "grid",
            "--json",
        ],
        cwd=root,
        env=tile_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    imported = {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if "|" in line}
    assert "tile_harness.campaign._plan" in imported
    assert not {m for m in imported if m.split(".")[0] in ("jax", "jaxlib", "numpy")}
    plan = json.loads(proc.stdout)
    ids = [u["unit_id"] for u in plan["units"]]
    assert ids == [
        f"{v}+{p}@{m}" for v in ("warm", "cold") for p in ("base", "dump") for m in ("here", "two")
    ]
    assert plan["baseline_variant"] == "warm+base"
    assert [(s["kind"], s["selector"], s["case_count"]) for s in plan["selectors"]] == [
        ("kernel", "fx/scale", 2),
        ("kernel", "fx/squ*", 1),
        ("filter", "float32", 3),
    ]
    assert plan["selectors"][0]["where"] == "campaigns/grid.toml:3"
    unit = next(u for u in plan["units"] if u["unit_id"] == "cold+dump@two")
    assert unit["case_ids"] == [*SCALE, SQUARE]  # fx/wrong is not selected
    args = unit["args"]
    assert args[0] == "bench"
    assert [args[i + 1] for i, a in enumerate(args) if a == "--case"] == unit["case_ids"]
    assert _sets(args) == {
        "launcher.shards": "2",
        "runner.python": sys.executable,
        "bench.cold": "true",
        # The perturbed flag is added to the flags the unit has without it.
        "runner.env.XLA_FLAGS": "--xla_backend_optimization_level=1 --xla_dump_hlo_as_text",
    }
    assert unit["shards"] == 2
    base = next(u for u in plan["units"] if u["unit_id"] == "warm+base@here")
    assert _sets(base["args"]) == {"runner.env.XLA_FLAGS": "--xla_backend_optimization_level=1"}
    assert plan["budget"]["case_runs"] == 8 * 3
    assert not (root / ".tile" / "campaigns").exists()  # a plan runs and writes nothing


@pytest.mark.slow
def test_estimates_come_from_earlier_runs_and_budget_is_enforced(
    tile: TileRun, project: MakeProject
) -> None:
    root = project(["good.py"], FAST)
    bench = tile("bench", "--kernel", "fx/scale", cwd=root)
    assert bench.returncode == 0, bench.stderr
    earlier = _json(root / ".tile" / "latest" / "report.json")
    totals = {c["case_id"]: c["accounting"]["total_s"] for c in earlier["cases"]}
    _campaign(
        root,
        "est",
        """
[select]
kernels = ["fx/scale", "fx/square"]

[variants.warm]
[variants.cold]
bench = { cold = true }

[budget]
max_cases = 4
""",
    )
    over = tile("campaign", "plan", "est", cwd=root)
    assert over.returncode == 2, over.stderr
    _no_traceback(over)
    assert "6 case runs are over `budget.max_cases` = 4 (campaigns/est.toml:10)" in over.stderr
    assert "top units:" in over.stderr and "top cases:" in over.stderr
    assert "--over-budget" in over.stderr

    plan = _plan(tile, root, "est", "--over-budget")
    assert plan["budget"]["over"] is True
    warm, cold = plan["units"]
    by_case = {c["case_id"]: c for c in warm["cases"]}
    for case_id in SCALE:  # the same settings as the earlier run: its own time
        assert by_case[case_id]["basis"] == "seen"
        assert by_case[case_id]["seconds"] == pytest.approx(totals[case_id])
    assert by_case[SQUARE]["basis"] == "guess"  # never run: the mean of the seen ones
    assert by_case[SQUARE]["seconds"] == pytest.approx(sum(totals.values()) / 2)
    assert {c["basis"] for c in cold["cases"]} == {"seen_other_settings", "guess"}
    assert warm["estimate"]["start_s"] == pytest.approx(earlier["timing"]["runner_start_s"])
    assert warm["estimate"]["total_s"] == pytest.approx(
        sum(warm["estimate"][k] for k in ("start_s", "cases_s", "overhead_s"))
    )
    assert "median total_s of its last 5 runs" in plan["estimate_method"]

    # Over the wall-time budget is refused the same way.
    (root / "campaigns" / "est.toml").write_text(
        (root / "campaigns" / "est.toml").read_text().replace("max_cases = 4", 'wall_time = "1s"')
    )
    slow = tile("campaign", "run", "est", cwd=root)
    assert slow.returncode == 2, slow.stderr
    assert "over `budget.wall_time` = 1.00 s (campaigns/est.toml:10)" in slow.stderr
    assert not (root / ".tile" / "campaigns" / "est").exists()


@pytest.mark.slow
def test_bad_campaigns_fail_with_file_and_line(tile: TileRun, project: MakeProject) -> None:
    root = project(["good.py"], FAST + "[profiles.quick.bench]\nmax_time = 0.01\n")
    _campaign(root, "typo", "[select]\nkernels = ['fx/scale']\n[variants.a]\nbench = {runz = 3}\n")
    _campaign(root, "nokernel", "[select]\nkernels = ['fx/scale', 'fx/nope*']\n")
    _campaign(root, "nofilter", "[select]\nkernels = ['fx/scale']\nfilters = ['bfloat16']\n")
    _campaign(
        root, "noprofile", "[variants.a]\nprofile = 'quick'\n[variants.b]\nprofile = 'qick'\n"
    )
    _campaign(root, "inverted", "[variants.a]\nbench = { min_runs = 50, max_runs = 10 }\n")

    cases = {
        "typo": "campaigns/typo.toml:4: unknown key `variants.a.bench.runz`",
        "nokernel": "campaigns/nokernel.toml:2: `select.kernels[1]` = `fx/nope*` matches no kernel",
        "nofilter": "campaigns/nofilter.toml:3: `select.filters[0]` = `bfloat16` matches no case "
        "of the selected kernels",
        "noprofile": "unit `b@local` of campaign `noprofile` (variant at campaigns/noprofile.toml:3) cannot be "
        "configured: unknown profile `qick`",
        "inverted": "`bench.min_runs` = 50 must be <= `bench.max_runs` = 10",
        "missing": "no campaign `missing`",
    }
    for name, says in cases.items():
        proc = tile("campaign", "plan", name, cwd=root)
        assert proc.returncode == 2, (name, proc.stderr)
        _no_traceback(proc)
        assert says in proc.stderr, (name, proc.stderr)
    nokernel = tile("campaign", "run", "nokernel", cwd=root)
    assert "kernels here: fx/scale, fx/wrong, fx/square" in nokernel.stderr


# ---------------------------------------------------------------- runs


def _orphans_gone(marker: str, limit: float) -> None:
    """Wait until no process has `marker` in its command line (children left by a SIGKILL)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        alive: list[str] = []
        for proc in Path("/proc").iterdir():
            try:
                cmdline = (proc / "cmdline").read_bytes() if proc.name.isdigit() else b""
            except OSError:
                continue
            if marker.encode() in cmdline:
                alive.append(proc.name)
        if not alive:
            return
        time.sleep(0.1)  # polling other processes' exit, not synchronizing threads
    raise AssertionError(f"processes for {marker} still running")


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc and PDEATHSIG")
def test_sigkill_mid_campaign_loses_nothing_and_resume_redoes_only_the_rest(
    tile: TileRun, project: MakeProject
) -> None:
    root = project(["good.py"], FAST)
    _campaign(
        root,
        "three",
        "[select]\nkernels = ['fx/square']\n"
        "[variants.a]\n[variants.b]\nbench = { max_time = 0.06 }\n"
        "[variants.c]\nbench = { max_time = 0.07 }\n",
    )
    camp = root / ".tile" / "campaigns" / "three"
    proc = subprocess.Popen(
        tile_argv("campaign", "run", "three"),
        cwd=root,
        env=tile_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        # Unit a is finished once b's attempt has started its runner; kill the campaign then.
        wait_for(
            camp / "units" / "b@local" / "attempt-1" / "events.jsonl", "runner_started", proc, 300
        )
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    # Its child `tile bench` got SIGTERM from the kernel (PDEATHSIG) and finalizes on its own.
    _orphans_gone(str(camp), 120)
    a_manifest = camp / "units" / "a@local" / "attempt-1" / "artifact_manifest.json"
    a_sha = _sha(a_manifest)
    killed = _json(camp / "units" / "b@local" / "attempt-1" / "report.json")
    assert killed["run"]["status"] == "interrupted"
    assert_schema_valid(camp)  # the last checkpoint stands

    again = tile("campaign", "run", "three", cwd=root)
    assert again.returncode == 0, again.stderr
    assert "[1/3] a@local: done in attempt 1, skipped" in again.stderr
    assert "[2/3] b@local: attempt 2" in again.stderr
    assert "[3/3] c@local: attempt 1" in again.stderr
    assert sorted(p.name for p in (camp / "units" / "a@local").iterdir()) == [
        "attempt-1",
        "attempt-1.log",
    ]
    assert _sha(a_manifest) == a_sha  # not redone, not touched
    report = _json(camp / "campaign.json")
    units = {u["unit_id"]: u for u in report["units"]}
    assert {k: u["result_attempt"] for k, u in units.items()} == {
        "a@local": 1,
        "b@local": 2,
        "c@local": 1,
    }
    first_b = units["b@local"]["attempts"][0]
    assert (first_b["status"], first_b["done"], first_b["complete"]) == ("interrupted", False, True)
    assert (camp / first_b["path"] / "report.json").is_file()  # the killed attempt is kept
    assert report["run"]["status"] == "success"
    assert report["accounting"]["units_measured"] == 3
    for unit in units.values():
        assert unit["estimate"]["total_s"] > 0 and unit["actual"]["total_s"] > 0
    assert_schema_valid(camp)


@pytest.mark.slow
def test_smoke_run_compares_variants_and_schema_check_catches_damage(
    tile: TileRun, project: MakeProject
) -> None:
    root = project(["good.py"], FAST)
    _campaign(
        root,
        "wc",
        "[select]\nkernels = ['fx/scale', 'fx/square']\n"
        "[variants.warm]\n[variants.cold]\nbench = { cold = true }\n"
        "[machines.one]\n[machines.pair]\nlauncher = 'local'\nshards = 2\n"
        "[smoke]\nbench = { max_runs = 8 }\n",
    )
    proc = tile("campaign", "run", "wc", "--smoke", cwd=root)
    assert proc.returncode == 0, proc.stderr
    camp = root / ".tile" / "campaigns" / "wc-smoke"
    report = _json(camp / "campaign.json")
    assert report["smoke"] is True and report["baseline_variant"] == "warm"
    # `.tile/latest` is the campaign, not its last unit; commands that take one run refuse
    # it and name the units' runs instead of silently taking a variant (issue 40).
    assert (root / ".tile" / "latest").resolve() == camp.resolve()
    for command in (("baseline", "save"), ("report",)):
        refused = tile(*command, cwd=root)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert "is a campaign directory, not one run" in refused.stderr
        assert "units/warm@one/attempt-1" in refused.stderr and "Traceback" not in refused.stderr
    ids = [u["unit_id"] for u in report["units"]]
    assert ids == ["warm@one", "warm@pair", "cold@one", "cold@pair"]
    for unit in report["units"]:
        run = camp / unit["attempts"][0]["path"]
        cases = [c["case_id"] for c in _json(run / "report.json")["cases"]]
        assert cases == [SCALE[0], SQUARE]  # one case per kernel
        settings = _json(run / "config" / "resolved_tool.json")
        assert settings["bench.max_runs"] == {"value": 8, "origin": "cli"}
        assert settings["bench.max_time"] == {"value": 0.05, "origin": "cli"}
        assert settings["bench.cold"]["value"] is (unit["variant"] == "cold")
        # Machine `pair` runs through the local launcher's shards: a plan runner, two shards.
        events = map(json.loads, (run / "events.jsonl").read_text().splitlines())
        shards = [e["fields"]["shard"] for e in events if e["event"] == "runner_started"]
        assert sorted(map(str, shards)) == (
            ["0/2", "1/2", "None"] if unit["machine"] == "pair" else ["None"]
        )
    rows = {(r["machine"], r["case_id"]): r["cells"] for r in report["table"]}
    assert list(rows) == [(m, c) for m in ("one", "pair") for c in (SCALE[0], SQUARE)]
    for cells in rows.values():
        warm, cold = cells
        assert (warm["variant"], warm["judgement"], cold["variant"]) == ("warm", None, "cold")
        assert cold["judgement"] in ("improvement", "neutral", "regression", "inconclusive")
        assert cold["ratio"] is not None and cold["reason"].endswith("warm against cold, as asked")
    paths = [ref["path"] for ref in report["comparisons"]]
    assert paths == ["comparisons/cold-vs-warm@one.json", "comparisons/cold-vs-warm@pair.json"]
    doc = _json(camp / paths[0])
    assert doc["schema_name"] == "tile.comparison"
    assert {r["basis"] for r in doc["rows"]} == {"absolute"}
    assert "| case | machine | `warm` | `cold` |" in (camp / "summary.md").read_text()
    assert "variants against `warm`" in proc.stdout
    assert_schema_valid(camp)
    _schema_check_catches_damage(tile, camp, root / "damaged")


def _schema_check_catches_damage(tile: TileRun, camp: Path, copies: Path) -> None:
    """Each kind of damage to a copy of the campaign directory `camp` fails `tile schema-check`
    with a message that names the file: the first through the command (exit 1, no traceback),
    the others through what it runs and prints (check_path's problems), in process."""

    def damaged(how: str) -> Path:
        copy = copies / how
        shutil.copytree(camp, copy, symlinks=True)
        return copy

    unit = "units/warm@one/attempt-1"
    copy = damaged("unit-report")
    (copy / unit / "report.json").write_text("{}")
    proc = tile("schema-check", str(copy), cwd=copy.parent)
    assert proc.returncode == 1, proc.stdout
    assert "Traceback" not in proc.stderr
    assert f"{unit}/report.json: " in proc.stdout and "sha256 differs" in proc.stdout, proc.stdout
    copy = damaged("campaign-json")
    (copy / "campaign.json").write_text('{"schema_name": "tile.campaign"')
    _fails(copy, "campaign.json:1: not valid JSON")
    copy = damaged("stray-attempt")
    (copy / "units" / "warm@one" / "attempt-9").mkdir()
    _fails(copy, "units/warm@one/attempt-9: not recorded in campaign.json")
    copy = damaged("no-plan")
    (copy / "plan.json").unlink()
    _fails(copy, "plan.json: required file is missing")
    copy = damaged("unit-manifest")
    manifest = copy / unit / "artifact_manifest.json"
    manifest.write_text(manifest.read_text().replace('"notes": []', '"notes": ["edited"]'))
    _fails(copy, f"{unit}/artifact_manifest.json: sha256 differs from the one campaign.json")


def _fails(path: Path, *says: str) -> None:
    """`tile schema-check PATH`'s lines, each problem as the command prints it, say `says`."""
    printed = "\n".join(str(problem) for problem in ta.check.check_path(path))
    assert printed, path  # a problem, so the command exits 1
    for text in says:
        assert text in printed, (text, printed)


@pytest.mark.slow
def test_a_campaign_through_slurm(tile: TileRun, project: MakeProject, slurm_gres: str) -> None:
    root = project(["good.py"], FAST)
    _campaign(
        root,
        "cluster",
        f"[select]\nkernels = ['fx/square']\n[machines.debug]\nlauncher = 'slurm'\n"
        f"gres = '{slurm_gres}'\ntime_limit = '10'\n",
    )
    proc = tile("campaign", "run", "cluster", cwd=root, timeout=600)
    assert proc.returncode == 0, proc.stderr
    camp = root / ".tile" / "campaigns" / "cluster"
    report = _json(camp / "campaign.json")
    (unit,) = report["units"]
    assert unit["unit_id"] == "default@debug" and unit["status"] == "success"
    run = camp / unit["attempts"][0]["path"]
    unit_report = _json(run / "report.json")
    assert [c["case_id"] for c in unit_report["cases"]] == [SQUARE]
    assert unit_report["context"]["slurm_job_id"]
    lines = (run / "commands" / "commands.jsonl").read_text().splitlines()
    commands = [json.loads(line) for line in lines]
    assert all(Path(c["args"][0]).name == "srun" for c in commands)
    assert any(f"--gres={slurm_gres}" in c["args"] for c in commands) or slurm_gres == "none"
    assert_schema_valid(camp)


# ---------------------------------------------------------------- pieces


def test_bench_runs_exact_case_ids_and_sets_any_key(tile: TileRun, project: MakeProject) -> None:
    root = project(["good.py"], FAST)
    proc = tile(
        "bench",
        "--case",
        SQUARE,
        "--set",
        "bench.max_runs=7",
        "--set",
        "runner.env.TILE_TEST_MARK=yes",
        cwd=root,
    )
    assert proc.returncode == 0, proc.stderr
    run = root / ".tile" / "latest"
    assert [c["case_id"] for c in _json(run / "report.json")["cases"]] == [SQUARE]
    settings = _json(run / "config" / "resolved_tool.json")
    assert settings["bench.max_runs"] == {"value": 7, "origin": "cli"}
    assert settings["runner.env.TILE_TEST_MARK"] == {"value": "yes", "origin": "cli"}
    for bad, says in (("nope", "bad `--set nope`"), ("bench.nope=1", "unknown key `bench.nope`")):
        refused = tile("bench", "--set", bad, cwd=root)
        assert refused.returncode == 2, refused.stderr
        _no_traceback(refused)
        assert says in refused.stderr


def test_a_variant_that_sets_a_secret_completes_and_stays_complete(
    tile: TileRun, project: MakeProject
) -> None:
    # The unit's run directory hides the value (`runner.env.HF_TOKEN=<redacted>`), the plan
    # holds it plain: the attempt must still count as made with the plan's arguments.
    secret = "hf_notarealtoken42"
    root = project(["good.py"], FAST)
    _campaign(root, "sec", f"[select]\nkernels = ['fx/scale']\nfilters = ['n=256']\n"
                           f'[variants.tok]\nenv = {{ HF_TOKEN = "{secret}" }}\n')  # fmt: skip
    for _ in range(2):  # the second run finds the result and runs nothing
        proc = tile("campaign", "run", "sec", cwd=root)
        assert proc.returncode == 0, proc.stderr
    camp = root / ".tile" / "campaigns" / "sec"
    (unit,) = _json(camp / "campaign.json")["units"]
    assert [a["matches_plan"] for a in unit["attempts"]] == [True]
    assert unit["result_attempt"] == 1
    argv = _json(camp / unit["attempts"][0]["path"] / "report.json")["context"]["argv"]
    assert "runner.env.HF_TOKEN=<redacted>" in argv
    for path in camp.rglob("*"):
        assert not path.is_file() or secret.encode() not in path.read_bytes(), path


def test_tile_init_sample_campaign_plans(tile: TileRun, tmp_path: Path) -> None:
    from tile_cli.project._init import init_project

    root = tmp_path / "my-kernels"
    init_project("my-kernels", root)
    env = {"PYTHONPATH": str(root / "src")}  # the project, importable without installing it
    proc = tile("campaign", "plan", "example", "--smoke", "--json", cwd=root, env=env)
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert [u["unit_id"] for u in plan["units"]] == ["warm@local", "cold@local"]
    assert all(c.startswith("my_kernels/scale_bias[") for c in plan["units"][0]["case_ids"])
    listed = tile("campaign", "list", cwd=root, env=env)
    assert listed.stdout.split() == ["example", "campaigns/example.toml"]
