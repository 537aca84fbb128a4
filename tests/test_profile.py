"""`tile profile` end to end: real `tile` processes, real runners, real run directories.

On a CPU: the refusals (too many cases, no `ncu`, `--ncu` without a GPU) and a real
`--trace` with the sources beside it. On a GPU with Nsight Compute: `--ncu` on a tile-std case.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from support import FIXTURES, MakeProject, TileRun, assert_schema_valid

from tile_protocol import case_dirname

SCALE = "lw/scale[n=128]"
PALLAS = "lw/pallas_double[n=64]"


def _no_ncu_path(tmp_path: Path) -> str:
    """A PATH with the interpreter's directory and the system's, and no `ncu` on it."""
    dirs = [str(Path(sys.executable).parent), "/usr/bin", "/bin"]
    path = os.pathsep.join(d for d in dirs if shutil.which("ncu", path=d) is None)
    assert shutil.which("ncu", path=path) is None
    return path


def _no_runs(root: Path) -> bool:
    runs = root / ".tile" / "runs"
    return not runs.is_dir() or not any(runs.iterdir())


def _has_gpu() -> bool:
    return shutil.which("nvidia-smi") is not None


def test_more_cases_than_the_limit_are_refused_before_a_run_directory(
    tile: TileRun, project: MakeProject
) -> None:
    root = project(["lowering.py", "lowering_error.py"])  # five cases
    proc = tile("profile", "--trace", cwd=root)
    assert proc.returncode == 2, proc.stderr
    assert "at most 4 cases; the selection has 5" in proc.stderr
    assert "hint:" in proc.stderr and "--case" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert _no_runs(root)


def test_ncu_missing_is_refused_with_a_hint(
    tile: TileRun, project: MakeProject, tmp_path: Path
) -> None:
    root = project(["lowering.py"])
    proc = tile("profile", "--ncu", "--case", SCALE, cwd=root,
                env={"PATH": _no_ncu_path(tmp_path)})  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "needs Nsight Compute's `ncu`, which is not on PATH" in proc.stderr
    assert "hint:" in proc.stderr and "Traceback" not in proc.stderr
    assert _no_runs(root)


@pytest.mark.skipif(_has_gpu(), reason="the refusal is for a machine without a GPU")
def test_ncu_on_a_cpu_only_machine_is_refused(
    tile: TileRun, project: MakeProject, tmp_path: Path
) -> None:
    # An `ncu` that exists (it is never started): the refusal must come from the backend.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "ncu"
    fake.write_text("#!/bin/sh\necho 'this ncu must not run' >&2\nexit 9\n")
    fake.chmod(0o755)
    root = project(["lowering.py"])
    path = os.pathsep.join([str(bin_dir), _no_ncu_path(tmp_path)])
    proc = tile("profile", "--ncu", "--case", SCALE, cwd=root, env={"PATH": path})
    assert proc.returncode == 2, proc.stderr
    assert "`--ncu` needs an NVIDIA GPU; the runner's JAX backend is `cpu`" in proc.stderr
    assert "--trace" in proc.stderr  # the hint names what does work here
    assert "must not run" not in proc.stderr
    assert _no_runs(root)


@pytest.mark.slow
def test_trace_and_sources_land_in_a_run_directory_that_validates(
    tile: TileRun, project: MakeProject
) -> None:
    root = project(["lowering.py"])
    proc = tile("profile", "--trace", "--calls", "2", "--case", SCALE, "--case", PALLAS,
                "-o", "run", cwd=root)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    run = root / "run"
    assert run.name in proc.stderr  # the run directory is named
    report = json.loads((run / "report.json").read_text())
    assert report["run"]["run_id"].startswith("profile-")
    listed = {
        a["path"] for a in json.loads((run / "artifact_manifest.json").read_text())["artifacts"]
    }

    for case_id in (SCALE, PALLAS):
        folder = run / "outputs" / case_dirname(case_id)
        # The views `tile build` stores, and the file that defines the kernel.
        for name in ("hlo.txt", "stablehlo.mlir", "jaxpr.txt", "kernel_source.py"):
            assert (folder / name).is_file(), (case_id, name)
            assert f"{folder.relative_to(run).as_posix()}/{name}" in listed
        assert (folder / "kernel_source.py").read_text() == (FIXTURES / "lowering.py").read_text()
        traces = sorted((folder / "profile" / "trace").rglob("perfetto_trace.json.gz"))
        assert len(traces) == 1, case_id
        assert traces[0].relative_to(run).as_posix() in listed
        text = gzip.decompress(traces[0].read_bytes()).decode()
        assert f"tile {case_id} #0" in text and f"tile {case_id} #1" in text
        assert f"tile {case_id} #2" not in text  # --calls 2
    assert "pallas_call" in (run / "outputs" / case_dirname(PALLAS) / "jaxpr.txt").read_text()

    assert_schema_valid(run)


@pytest.mark.gpu
def test_ncu_profiles_a_tile_std_case(tile: TileRun, tmp_path: Path) -> None:
    if shutil.which("ncu") is None:
        pytest.skip("ncu is not on PATH")
    listed = tile("list", "--kernel", "std/copy", "--json")
    assert listed.returncode == 0, listed.stderr
    case = json.loads(listed.stdout.splitlines()[0])["case_id"]
    proc = tile("profile", "--ncu", "--case", case, "-o", "run", timeout=600)
    assert proc.returncode == 0, proc.stderr
    folder = tmp_path / "run" / "outputs" / case_dirname(case) / "profile"
    assert (folder / "ncu.ncu-rep").stat().st_size > 0
    kernels = json.loads((folder / "ncu.json").read_text())["kernels"]
    assert kernels, "no kernel profiled"
    first = kernels[0]["metrics"]
    assert first["time"] > 0 and first["dram_sol_pct"] > 0 and first["registers_per_thread"] > 0
    assert f"ncu: {case}" in proc.stdout
    manifest = json.loads((tmp_path / "run" / "artifact_manifest.json").read_text())
    rel = folder.relative_to(tmp_path / "run").as_posix()
    assert {f"{rel}/ncu.ncu-rep", f"{rel}/ncu.json"} <= {a["path"] for a in manifest["artifacts"]}
    assert_schema_valid(tmp_path / "run")
