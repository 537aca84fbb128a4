"""`tile list` shows what a kernel offers, not only its bench cases: its test cases, the modes
it declares and its tunables with their values and default (issue 40), as a table and as
JSON Lines."""

from __future__ import annotations

import json
from typing import Any

from support import MakeProject, TileRun


def test_list_shows_test_cases_modes_and_tunables(tile: TileRun, project: MakeProject) -> None:
    root = project(["tunable.py"])
    selection = ("--plugin", "tile-std", "--kernel", "fx/reps", "--kernel", "std/softmax")
    proc = tile("list", *selection, cwd=root)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    # std/softmax's test cases are not its bench cases: they are listed under its bench cases.
    assert "std/softmax[shape=2x3x64,dtype=float32]" in out.split("test cases:")[1]
    table = out.split("\nkernels", 1)[1]  # the table after the case lists
    rows = {line.split()[0]: line for line in table.splitlines() if "/" in line}
    assert "fwd, bwd, fwd_bwd" in rows["std/softmax"]
    assert "block_rows: auto*, 1, 2, 4, 8" in rows["std/softmax"]
    # Its backward keeps its own tiling: the tunables are said to change the other two only.
    assert "(fwd, fwd_bwd only)" in table and "only)" not in rows["fx/reps"]
    assert "reps: 1, 8*, 64" in rows["fx/reps"]  # the declared default, marked
    assert "variant: right*, wrong" in out
    assert "3 bench cases, 7 test cases" in proc.stderr

    lines = tile("list", *selection, "--json", cwd=root)
    assert lines.returncode == 0, lines.stderr
    docs: list[dict[str, Any]] = [json.loads(line) for line in lines.stdout.splitlines()]
    assert docs[0]["type"] == "case" and docs[0]["suite"] == "bench"  # bench cases first
    suites = [(d["suite"], d["kernel"]) for d in docs if d["type"] == "case"]
    assert suites.count(("test", "std/softmax")) == 6 and suites.count(("bench", "fx/reps")) == 1
    kernels = {d["kernel"]: d for d in docs if d["type"] == "kernel"}
    assert kernels["fx/reps"]["modes"] == ["fwd"]
    assert kernels["fx/reps"]["tunables"] == [
        {"name": "reps", "values": ["1", "8", "64"], "default": "8"},
        {"name": "variant", "values": ["right", "wrong"], "default": "right"},
    ]
    assert kernels["std/softmax"]["modes"] == ["fwd", "bwd", "fwd_bwd"]
    assert kernels["std/softmax"]["tuned_modes"] == ["fwd", "fwd_bwd"]
    assert kernels["fx/reps"]["tuned_modes"] == ["fwd"]  # every mode it has
    assert (kernels["std/softmax"]["bench_cases"], kernels["std/softmax"]["test_cases"]) == (2, 6)
