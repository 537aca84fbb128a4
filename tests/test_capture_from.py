"""Real shapes (issue 34, item 2): `tile tune --from MODULE:FUNCTION` traces a user's model,
tunes and benches every tile-std kernel call it makes at the model's own shapes, saves the
cases for `tile bench --cases`; a target that gives no case is one clear usage error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support import MakeProject, TileRun

MODEL = "two_layer_model:example"
CAPTURED = [
    "std/rmsnorm[shape=8x32,dtype=float32]",
    "std/layernorm[shape=8x32,dtype=float32]",
    "std/matmul[shape=8x32x32,dtype=float32]",
    "std/attention[shape=1x2x8x16,dtype=float32,causal=true]",
]
FAST = (
    "[bench]\nmax_time = 0.05\nmin_runs = 3\nwarmup_runs = 1\n"
    "[tune]\nmin_runs = 2\nmax_time = 0.01\nrungs = 1\neta = 8\n"
)

TUNING = '{"schema_name": "tile.tuning", "schema_version": 1, "device_kind": "cpu", "entries": []}'


def _cases(run_dir: Path) -> list[dict[str, Any]]:
    return json.loads((run_dir / "report.json").read_text())["cases"]


@pytest.mark.slow
def test_a_two_layer_model_is_captured_tuned_and_benched(
    tile: TileRun, project: MakeProject, tmp_path: Path
) -> None:
    root = project(["two_layer_model.py"], FAST)
    saved = tmp_path / "model-cases.json"
    # Every kernel the model calls has `num_warps`: held at 4, the rest of each space is tuned
    # (a quarter to a half of it: this test is about capture, not the search).
    tuned = tile("tune", "--from", MODEL, "--save-cases", str(saved), "-o", str(tmp_path / "t"),
                 "--tunable", "num_warps=4", cwd=root, timeout=900)  # fmt: skip
    assert tuned.returncode == 0, tuned.stderr
    # One winner per kernel call of the model; the two layers' calls are the same cases.
    # (The winner lines `CASE: {values} ...` follow each case's table of configurations.)
    winners = [line.split(": ")[0] for line in tuned.stdout.splitlines() if ": {" in line]
    assert sorted(winners) == sorted(CAPTURED), tuned.stdout
    entries = json.loads((root / "tuning" / "cpu.json").read_text())["entries"]
    assert sorted(e["case_id"] for e in entries) == sorted(CAPTURED)
    assert all(e["values"]["num_warps"] == "4" for e in entries)
    timed = _cases(tmp_path / "t")
    assert {c["captured"] for c in timed} == {MODEL}
    doc = json.loads(saved.read_text())
    assert doc["schema_name"] == "tile.cases" and len(doc["cases"]) == 4
    assert {c["captured"] for c in doc["cases"]} == {MODEL}

    # The saved cases bench with the winners the tune wrote, still marked as captured.
    out = tmp_path / "b"
    bench = tile("bench", "--cases", str(saved), "-o", str(out), cwd=root, timeout=900)
    assert bench.returncode == 0, bench.stderr
    benched = _cases(out)
    assert sorted(c["case_id"] for c in benched) == sorted(CAPTURED)
    assert all(c["captured"] == MODEL and c["config"]["source"] == "tuned" for c in benched)


@pytest.mark.parametrize(
    ("target", "said"),
    [
        ("no_such_model:example", "`--from no_such_model:example`: cannot import `no_such_model`"),
        ("two_layer_model:broken", "`--from two_layer_model:broken` raised while traced at "),
        ("two_layer_model:plain_jax", "the program called no registered kernel (registered: "),
    ],
)
def test_a_from_target_that_gives_no_case_is_a_usage_error(
    tile: TileRun, project: MakeProject, tmp_path: Path, target: str, said: str
) -> None:
    root = project(["two_layer_model.py"], FAST)
    tuning = root / "tuning" / "cpu.json"
    tuning.parent.mkdir()
    tuning.write_text(TUNING)
    for command in ("tune", "bench"):
        out = tmp_path / f"{command}-run"
        proc = tile(command, "--from", target, "-o", str(out), cwd=root)
        assert proc.returncode == 2, proc.stderr
        errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and said in errors[0], proc.stderr
        assert "hint:" in proc.stderr and "Traceback" not in proc.stderr
        # Refused before anything ran: no run directory, the tuning file as it was.
        assert not out.exists()
        assert tuning.read_text() == TUNING


def test_a_cases_file_that_cannot_be_used_is_a_usage_error(
    tile: TileRun, project: MakeProject, tmp_path: Path
) -> None:
    root = project(["two_layer_model.py"], FAST)
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema_name": "tile.cases", "schema_version": 1, "cases": [{"kernel": 3}]}')
    other = tmp_path / "other.json"
    other.write_text(TUNING)
    for args, said in (
        (("--cases", str(tmp_path / "missing.json")), f"cannot read the cases file {tmp_path}"),
        (("--cases", str(bad)), f"the cases file {bad} is not valid"),
        (("--cases", str(other)), f"the cases file {other} is not valid"),
        (("--from", MODEL, "--cases", str(bad)), "`--from` and `--cases` both name the cases"),
        (("--save-cases", str(bad)), "`--save-cases` saves what `--from` captures"),
    ):
        proc = tile("bench", *args, cwd=root)
        assert proc.returncode == 2, proc.stderr
        assert said in proc.stderr and "Traceback" not in proc.stderr


def test_tile_list_shows_where_each_captured_case_came_from(
    tile: TileRun, project: MakeProject
) -> None:
    root = project(["two_layer_model.py"], FAST)
    proc = tile("list", "--from", MODEL, "-k", "norm", "--json", cwd=root)
    assert proc.returncode == 0, proc.stderr
    listed = [json.loads(line) for line in proc.stdout.splitlines()]
    listed = [c for c in listed if c.get("suite") == "bench"]  # test cases, kernels follow
    assert [(c["case_id"], c["captured"]) for c in listed] == [
        (CAPTURED[0], MODEL),
        (CAPTURED[1], MODEL),
    ]


def test_a_campaign_selects_from_a_cases_file(tile: TileRun, project: MakeProject) -> None:
    root = project(["two_layer_model.py"], FAST)
    case = {"kernel": "std/rmsnorm", "params": {"shape": "8x32", "dtype": "float32"},
            "captured": MODEL}  # fmt: skip
    doc = {"schema_name": "tile.cases", "schema_version": 1, "cases": [case]}
    (root / "model-cases.json").write_text(json.dumps(doc))
    (root / "campaigns").mkdir()
    (root / "campaigns" / "model.toml").write_text(
        "[select]\ncases = 'model-cases.json'\n[variants.warm]\n"
    )
    proc = tile("campaign", "run", "model", cwd=root)
    assert proc.returncode == 0, proc.stderr
    camp = root / ".tile" / "campaigns" / "model"
    [unit] = json.loads((camp / "campaign.json").read_text())["units"]
    [benched] = _cases(camp / unit["attempts"][0]["path"])
    assert (benched["case_id"], benched["captured"]) == (CAPTURED[0], MODEL)
