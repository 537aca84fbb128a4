"""Wherever a case is shown, so is the configuration it ran with and, for a captured case,
the program it came from (issue 34): the live screen, the tables, summary.md; a project
names its cases file once in tile.toml; a baseline pooled from runs of different
configurations says so on each row instead of mixing them."""

from __future__ import annotations

import json
from pathlib import Path

from support import MakeProject, TileRun

FAST = "[history]\nenabled = false\n[bench]\nmax_time = 0.1\nmin_runs = 5\nwarmup_runs = 1\n"
CASE = "fx/reps[n=512]"
DEFAULT = "reps=8,variant=right (default)"
CASES = (
    '{"schema_name": "tile.cases", "schema_version": 1, "cases": [{"kernel": "fx/reps", '
    '"params": {"n": "512"}, "captured": "mymodel:example"}]}'
)


def test_the_project_cases_file_runs_marked_as_captured_and_the_screen_names_the_config(
    tile: TileRun, project: MakeProject, tmp_path: Path
) -> None:
    root = project(["tunable.py"], FAST + 'cases = "cases.json"\n')
    (root / "cases.json").write_text(CASES)
    out = tmp_path / "run"
    # Run from below the project: the key's path hangs off tile.toml, not the working
    # directory.
    (root / "sub").mkdir()
    proc = tile("bench", "-o", str(out), cwd=root / "sub")
    assert proc.returncode == 0, proc.stderr
    assert "1 cases from" in proc.stderr and "(`[bench] cases`)" in proc.stderr
    # The live screen (plain lines in a pipe) says what the case runs with as it runs.
    assert f"sampling {CASE} with {DEFAULT}" in proc.stderr, proc.stderr
    # The table and summary.md mark the captured case with where it came from.
    [head] = [line for line in proc.stdout.splitlines() if line.strip().startswith("case")]
    assert head.split()[:4] == ["case", "captured", "from", "config"], proc.stdout
    row = next(line for line in proc.stdout.splitlines() if "[n=512]" in line)
    assert "mymodel:example" in row and DEFAULT in row
    summary = (out / "summary.md").read_text()
    assert "| case | captured from | config | status |" in summary
    assert f"| `{CASE}` | `mymodel:example` | `{DEFAULT}` |" in summary
    [case] = json.loads((out / "report.json").read_text())["cases"]
    assert case["captured"] == "mymodel:example"
    # `tile test` reads the key too, and its table and summary.md mark the case alike.
    checked = tile("test", "-o", str(tmp_path / "test"), cwd=root)
    assert checked.returncode == 0, checked.stderr
    row = next(line for line in checked.stdout.splitlines() if CASE in line)
    assert "mymodel:example" in row and DEFAULT in row, checked.stdout
    summary = (tmp_path / "test" / "summary.md").read_text()
    assert f"| `{CASE}` | `mymodel:example` | `{DEFAULT}` | success |" in summary, summary


def test_a_bad_project_cases_file_is_refused_naming_the_key(
    tile: TileRun, project: MakeProject
) -> None:
    root = project(["tunable.py"], FAST + 'cases = "cases.json"\n')
    for text, said in (
        (None, "cannot read the cases file"),
        ("{not json", "is not valid"),
        ('{"schema_name": "tile.tuning", "cases": []}', "not `tile.cases` version 1"),
    ):
        if text is not None:
            (root / "cases.json").write_text(text)
        proc = tile("bench", cwd=root)
        assert proc.returncode == 2, proc.stderr
        assert "`[bench] cases` (set in " in proc.stderr and said in proc.stderr, proc.stderr
        assert "hint:" in proc.stderr and "Traceback" not in proc.stderr
        assert not (root / ".tile" / "runs").exists()  # nothing ran


def test_a_baseline_pooled_from_two_configurations_says_so_on_the_row(
    tile: TileRun, project: MakeProject, tmp_path: Path
) -> None:
    root = project(["tunable.py"], FAST)
    runs = [tmp_path / name for name in ("one", "eight", "eight-again")]
    for run, reps in zip(runs, ("1", "8", "8"), strict=True):
        proc = tile("bench", "--kernel", "fx/reps", "--tunable", f"reps={reps}", "-o", str(run),
                    cwd=root)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
    saved = tile("baseline", "save", *map(str, runs), "--dir", str(tmp_path / "b"), cwd=root)
    assert saved.returncode == 0, saved.stderr
    assert f"warning: `{CASE}` ran other configurations in 1 of the runs" in saved.stderr
    [case] = json.loads((tmp_path / "b" / "cpu.json").read_text())["cases"]
    assert case["other_configs"] == [{"reps": "1", "variant": "right"}]
    assert len(case["run_sizes"]) == 2
    note = "baseline pooled only reps=8,variant=right: 1 run of reps=1,variant=right left out"
    compared = tile("compare", str(tmp_path / "b"), str(runs[-1]), cwd=root)
    assert note in " ".join(compared.stdout.split()), compared.stdout
    doc = tile("compare", str(tmp_path / "b"), str(runs[-1]), "--format", "markdown", cwd=root)
    assert note in doc.stdout


def _tuning(path: Path, reps: str) -> None:
    """The project's tuning file at `path`, naming `reps` for fx/reps[n=512] on this CPU."""
    import jax

    import tile_runner as tile
    from tile_protocol import TuningEntry, TuningFile, encode_tuning
    from tile_runner._tuning import Tunables

    axes = tile.axes(reps=[1, 8, 64], variant=["right", "wrong"])
    entry = TuningEntry(
        kernel="fx/reps",
        case_id=CASE,
        signature=Tunables.declare("fx/reps", axes, None, None).signature,
        device_kind="cpu",
        jax_version=jax.__version__,
        values={"reps": reps, "variant": "right"},
    )
    path.parent.mkdir(parents=True)
    path.write_bytes(encode_tuning(TuningFile(device_kind="cpu", entries=[entry])))


def test_campaign_tables_show_the_configuration_and_where_a_variant_ran_another(
    tile: TileRun, project: MakeProject
) -> None:
    root = project(["tunable.py"], FAST + '[profiles.alt.tune]\ndir = "tuning-alt"\n')
    _tuning(root / "tuning-alt" / "cpu.json", "1")
    (root / "campaigns").mkdir()
    (root / "campaigns" / "cfg.toml").write_text(
        "[select]\nkernels = ['fx/reps']\n[variants.base]\n[variants.alt]\nprofile = 'alt'\n"
    )
    proc = tile("campaign", "run", "cfg", cwd=root)
    assert proc.returncode == 0, proc.stderr
    # The config column is the baseline variant's; a variant that ran another says so.
    row = next(line for line in proc.stdout.splitlines() if line.strip().startswith(CASE))
    assert DEFAULT in row and "· reps=1,variant=right (project tuning)" in row, proc.stdout
    camp = root / ".tile" / "campaigns" / "cfg"
    summary = (camp / "summary.md").read_text()
    assert f"| `{CASE}` | `{DEFAULT}` |" in summary, summary
    assert "· reps=1,variant=right (project tuning)" in summary
    [table] = json.loads((camp / "campaign.json").read_text())["table"]
    assert [c["config"]["values"]["reps"] for c in table["cells"]] == ["8", "1"]


def test_a_campaign_plans_the_project_cases_file(tile: TileRun, project: MakeProject) -> None:
    root = project(["tunable.py"], FAST + 'cases = "cases.json"\n')
    (root / "cases.json").write_text(CASES)
    (root / "campaigns").mkdir()
    (root / "campaigns" / "all.toml").write_text("[variants.base]\n")
    proc = tile("campaign", "plan", "all", "--json", cwd=root)
    assert proc.returncode == 0, proc.stderr
    [unit] = json.loads(proc.stdout)["units"]
    assert unit["case_ids"] == [CASE]  # not fx/crashy_config's declared case


def test_the_history_shows_each_runs_configuration_and_where_it_changed(
    tile: TileRun, project: MakeProject
) -> None:
    root = project(["tunable.py"], FAST.replace("enabled = false", "enabled = true"))
    # 8 times the work: a step the history must find. Three runs a level: with two, one run
    # slowed by a loaded CI machine can make a level's scatter too wide for the step.
    for reps in ("1", "1", "1", "8", "8", "8"):
        proc = tile("bench", "--kernel", "fx/reps", "--tunable", f"reps={reps}", cwd=root)
        assert proc.returncode == 0, proc.stderr
    one, eight = (f"reps={n},variant=right (--tunable)" for n in ("1", "8"))
    changed = "configuration changed: reps=1 -> reps=8"
    shown = tile("history", "show", "-v", cwd=root)
    assert shown.returncode == 0, shown.stderr
    # The summary's step is marked, and a note says where the values changed.
    [row] = [line for line in shown.stdout.splitlines() if "(config changed)" in line]
    assert row.strip().startswith(CASE) and " wall " in row, shown.stdout
    assert f"note: {CASE} on cpu (" in shown.stdout and changed in shown.stdout
    assert f"\n{CASE}\n" in shown.stdout  # the commit table's title, `[n=512]` and all
    # Each run's point names its configuration; the fourth, where it changed, says so.
    points = [line for line in shown.stdout.splitlines() if "(--tunable)" in line]
    assert [one in p for p in points] == [True] * 3 + [False] * 3, shown.stdout
    assert [eight in p for p in points] == [False] * 3 + [True] * 3
    assert [changed in p for p in points] == [False, False, False, True, False, False]
    found = tile("history", "regressions", cwd=root)
    assert found.returncode == 1, found.stdout + found.stderr
    [row] = [line for line in found.stdout.splitlines() if CASE in line]
    assert changed in row, found.stdout
    assert "1 regression(s)" in found.stderr and "1 at a configuration change" in found.stderr
