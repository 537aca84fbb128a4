"""`tile tune` a user can trust (issue 34): a budgeted tune still writes what it decided, a
SIGTERM saves the run directory, results stay in the project unless the user cache is asked
for, and every case shows the configuration it ran with and where it came from."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

from support import MakeProject, TileRun, tile_argv, tile_env, wait_for

FAST = (
    "[bench]\nmax_time = 0.1\nmin_runs = 5\nwarmup_runs = 1\n"
    "[tune]\nmin_runs = 3\nmax_time = 0.02\n"
)


def _entries(path: Path) -> dict[str, dict[str, Any]]:
    doc = json.loads(path.read_text())
    return {e["case_id"]: e for e in doc["entries"]}


def test_a_budget_spent_mid_tune_still_writes_the_decision_and_names_the_case(
    tile: TileRun, project: MakeProject, tmp_path: Path
) -> None:
    root = project(["tunable_slow.py"], FAST)
    out = tmp_path / "run"
    # Seven configurations compile together (ahead of their turns), so rung 0 lasts as long
    # as its slowest tracing: one of 7 s outlasts the 6 s budget, on any number of cores.
    proc = tile("tune", "--kernel", "fx/slow_trace", "--budget", "6", "-o", str(out), cwd=root,
                env={"FX_TRACE_S": "7", "FX_TRACE_ONLY_K": "1"})  # fmt: skip
    assert "--budget 6 s spent after rung 0" in proc.stderr, proc.stderr
    assert proc.returncode == 0, proc.stderr
    entry = _entries(root / "tuning" / "cpu.json")["fx/slow_trace[n=64]"]
    assert entry["values"]["k"] in {str(k) for k in range(1, 8)}
    assert "not tuned to the end: fx/slow_trace[n=64]: decided on rung 0's timings" in proc.stderr
    report = json.loads((out / "report.json").read_text())
    [cut] = [f for f in report["findings"] if "not tuned to the end" in f["title"]]
    assert cut["evidence"][0].startswith("fx/slow_trace[n=64]: decided on rung 0")


def test_sigterm_saves_the_tune_run_directory(tmp_path: Path, project: MakeProject) -> None:
    root = project(["tunable_slow.py"], FAST)
    out = tmp_path / "run"
    proc = subprocess.Popen(
        tile_argv("tune", "--kernel", "fx/slow_trace", "-o", str(out)),
        cwd=root,
        env=tile_env({"FX_TRACE_S": "30"}),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for(out / "events.jsonl", "fx/slow_trace[n=64]{k=1}", proc, limit=120)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 143, stderr
    assert "Traceback" not in stderr, stderr
    report = json.loads((out / "report.json").read_text())
    assert report["run"]["status"] == "interrupted"
    assert (out / "artifact_manifest.json").exists()


def test_tune_keeps_to_the_project_unless_the_user_cache_is_asked_for(
    tile: TileRun, project: MakeProject, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    env = {"TILE_CACHE_DIR": str(cache)}
    root = project(["tunable.py"], FAST)
    assert tile("tune", "--kernel", "fx/reps", cwd=root, env=env).returncode == 0
    assert (root / "tuning" / "cpu.json").exists()
    assert not (cache / "tuning").exists()  # another project's bench is not changed by it
    shared = tile("tune", "--kernel", "fx/reps", "--user-cache", cwd=root, env=env)
    assert shared.returncode == 0, shared.stderr
    assert _entries(cache / "tuning" / "cpu.json")["fx/reps[n=512]"]["values"]["reps"] == "1"

    other = project(["tunable.py"], FAST, name="other")
    for flags, source in (((), "default"), (("--user-cache",), "user_cache")):
        out = tmp_path / f"bench-{source}"
        proc = tile("bench", "--kernel", "fx/reps", *flags, "-o", str(out), cwd=other, env=env)
        assert proc.returncode == 0, proc.stderr
        [case] = json.loads((out / "report.json").read_text())["cases"]
        assert case["config"]["source"] == source
        label = {"default": "(default)", "user_cache": "(user cache)"}[source]
        assert label in proc.stdout  # the terminal table's config column
        assert label in (out / "summary.md").read_text()


def _shipping_project(root: Path, device_kind: str, case_id: str = "fx/reps[n=512]") -> Path:
    """A project whose kernel package `shipkit` ships `tuning/<device>.json` for fx/reps
    (an entry for `case_id`: the bench's only case, unless told otherwise)."""
    import tile_runner as tile
    from tile_protocol import TuningEntry, TuningFile, encode_tuning
    from tile_runner._tuning import Tunables

    package = root / "shipkit"
    (package / "tuning").mkdir(parents=True)
    source = (Path(__file__).parent / "fixtures" / "tunable.py").read_text()
    (package / "__init__.py").write_text(source)
    axes = tile.axes(reps=[1, 8, 64], variant=["right", "wrong"])
    entry = TuningEntry(
        kernel="fx/reps",
        case_id=case_id,
        signature=Tunables.declare("fx/reps", axes, None, None).signature,
        device_kind=device_kind,
        jax_version="0.0.1",  # a package's tuning holds on any JAX version
        values={"reps": "1", "variant": "right"},
    )
    doc = TuningFile(device_kind=device_kind, entries=[entry])
    (package / "tuning" / "shipped.json").write_bytes(encode_tuning(doc))
    (root / "tile.toml").write_text('[project]\nmodules = ["shipkit"]\n' + FAST)
    return root


def test_a_package_ships_tuning_and_every_view_names_the_source(
    tile: TileRun, tmp_path: Path
) -> None:
    root = _shipping_project(tmp_path / "ships", "cpu")
    shipped, override = tmp_path / "shipped", tmp_path / "override"
    proc = tile("bench", "--kernel", "fx/reps", "-o", str(shipped), cwd=root)
    assert proc.returncode == 0, proc.stderr
    [case] = json.loads((shipped / "report.json").read_text())["cases"]
    assert case["config"]["source"] == "shipped"
    assert case["config"]["values"] == {"reps": "1", "variant": "right"}
    # Used on another JAX version than it was tuned with, and marked `*` for it.
    assert "made with jax 0.0.1" in case["config"]["note"]
    assert "reps=1,variant=right (shipped*)" in proc.stdout
    assert "reps=1,variant=right (shipped*)" in (shipped / "summary.md").read_text()
    report = tile("report", str(shipped), "-o", str(tmp_path / "r.html"), cwd=root)
    assert report.returncode == 0, report.stderr
    assert "reps=1,variant=right (shipped*)" in (tmp_path / "r.html").read_text()

    proc = tile("bench", "--kernel", "fx/reps", "--tunable", "reps=8", "-o", str(override),
                cwd=root)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "reps=8,variant=right (--tunable)" in proc.stdout
    # The reason column wraps wherever the table runs out of width (a loaded machine adds a
    # noise-floor sentence before this one), so the words are read with whitespace folded.
    compared = tile("compare", str(shipped), str(override), cwd=root)
    assert "configuration changed: reps=1 -> reps=8" in " ".join(compared.stdout.split()), (
        compared.stdout
    )
    doc = tile("compare", str(shipped), str(override), "--format", "json", cwd=root)
    [row] = json.loads(doc.stdout)["rows"]
    assert row["baseline_config"]["reps"] == "1" and row["current_config"]["reps"] == "8"


def test_a_device_without_shipped_tuning_runs_the_default_and_says_so(
    tile: TileRun, tmp_path: Path
) -> None:
    root = _shipping_project(tmp_path / "elsewhere", "NVIDIA H200")
    out = tmp_path / "run"
    proc = tile("bench", "--kernel", "fx/reps", "-o", str(out), cwd=root)
    assert proc.returncode == 0, proc.stderr
    [case] = json.loads((out / "report.json").read_text())["cases"]
    assert case["config"]["source"] == "default"
    assert case["config"]["values"]["reps"] == "8"
    assert "ships tuning for NVIDIA H200, none for cpu" in case["config"]["note"]
    assert "reps=8,variant=right (default*)" in proc.stdout
    assert "* fx/reps[n=512]: its package ships tuning for NVIDIA H200" in proc.stderr


def test_a_case_the_tuning_shipped_for_this_device_lacks_says_just_that(
    tile: TileRun, tmp_path: Path
) -> None:
    # It said "ships tuning for NVIDIA H100, none for NVIDIA H100" on an H100 (bwd cases).
    root = _shipping_project(tmp_path / "other-case", "cpu", case_id="fx/reps[n=1024]")
    out = tmp_path / "run"
    proc = tile("bench", "--kernel", "fx/reps", "-o", str(out), cwd=root)
    assert proc.returncode == 0, proc.stderr
    [case] = json.loads((out / "report.json").read_text())["cases"]
    assert case["config"]["source"] == "default"
    assert case["config"]["note"] == (
        "its package's tuning for cpu has no entry for it: the default runs (`tile tune` it here)"
    )


def test_a_tuning_file_edited_out_of_the_tunables_is_a_finding_then_a_refusal_to_tune(
    tile: TileRun, project: MakeProject, tmp_path: Path
) -> None:
    root = project(["tunable.py"], FAST)
    assert tile("tune", "--kernel", "fx/reps", cwd=root).returncode == 0
    path = root / "tuning" / "cpu.json"
    path.write_text(path.read_text().replace('"reps": "1"', '"reps": "3"'))
    out = tmp_path / "run"
    proc = tile("bench", "--kernel", "fx/reps", "-o", str(out), cwd=root)
    assert proc.returncode == 0, proc.stderr  # measured with the default, nothing lost
    assert "not used: reps=3 is not among its values (1, 8, 64)" in proc.stderr
    report = json.loads((out / "report.json").read_text())
    [case] = report["cases"]
    assert case["config"]["source"] == "default" and case["status"] == "success"
    [finding] = [f for f in report["findings"] if f["category"] == "tuning"]
    assert "reps=3 is not among its values" in finding["evidence"][0]

    path.write_text("{not json")
    runs = root / ".tile" / "runs"
    before = sorted(runs.iterdir()) if runs.exists() else []
    refused = tile("tune", "--kernel", "fx/reps", cwd=root)
    assert refused.returncode == 2, refused.stderr
    assert f"tuning file `{path}` cannot be read" in refused.stderr
    assert "hint:" in refused.stderr and "Traceback" not in refused.stderr
    assert (sorted(runs.iterdir()) if runs.exists() else []) == before  # nothing started


def test_two_entries_for_one_case_are_a_finding_not_the_last_winning(
    tile: TileRun, project: MakeProject, tmp_path: Path
) -> None:
    """Issue 39, item 11: a hand-edited tuning file with two entries for one case ran the last
    one, unsaid. Neither is used now (which one was meant cannot be told): a warning and a
    finding name the file and the case, and the case runs its default."""
    root = project(["tunable.py"], FAST)
    assert tile("tune", "--kernel", "fx/reps", cwd=root).returncode == 0
    path = root / "tuning" / "cpu.json"
    doc = json.loads(path.read_text())
    [entry] = doc["entries"]
    other = "64" if entry["values"]["reps"] != "64" else "1"
    doc["entries"].append({**entry, "values": {**entry["values"], "reps": other}})
    path.write_text(json.dumps(doc))
    out = tmp_path / "run"
    proc = tile("bench", "--kernel", "fx/reps", "-o", str(out), cwd=root)
    assert proc.returncode == 0, proc.stderr  # measured with the default, nothing lost
    said = f"tuning file `{path}` has 2 entries for case `{entry['case_id']}`"
    assert said in proc.stderr, proc.stderr
    report = json.loads((out / "report.json").read_text())
    [case] = report["cases"]
    assert case["config"]["source"] == "default" and case["status"] == "success"
    [finding] = [f for f in report["findings"] if f["category"] == "tuning"]
    assert said in finding["evidence"][0] and "not used" in finding["evidence"][0]
