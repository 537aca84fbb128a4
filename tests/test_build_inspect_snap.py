"""`tile build`, `tile inspect`, `tile snap` end to end: real `tile` processes in real projects."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest
from support import MakeProject, TileRun, assert_schema_valid

from tile_cli.runs._snap import normalize_stablehlo, render_snapshot, snapshot_case_id
from tile_protocol import case_dirname

SCALE = "lw/scale[n=128]"
GOOD_CASES = [
    "lw/scale[n=128]",
    "lw/scale[n=256]",
    "lw/pallas_double[n=64]",
    "lw/host_callback[n=16]",
]
BROKEN = "lw/no_lowering[n=32]"
VIEWS = {"jaxpr.txt", "stablehlo.mlir", "hlo.txt", "cost_analysis.json", "memory_analysis.json"}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---------------------------------------------------------------- tile build


@pytest.mark.slow
def test_build_stores_every_view_and_one_bad_kernel_fails_alone(
    tile: TileRun, project: MakeProject
) -> None:
    root = project(["lowering.py", "lowering_error.py"])
    proc = tile("build", "-o", "run", cwd=root)
    assert proc.returncode == 1, proc.stderr  # a case failed to lower: 1, not 3
    assert f"✗ {BROKEN} [compile, failed] ValueError" in proc.stderr
    for case_id in GOOD_CASES:
        assert case_id in proc.stdout
    run = root / "run"

    manifest = json.loads((run / "artifact_manifest.json").read_text())
    listed = {a["path"]: a for a in manifest["artifacts"]}
    for case_id in GOOD_CASES:
        folder = run / "outputs" / case_dirname(case_id)
        names = {p.name for p in folder.iterdir()}
        assert names >= VIEWS, case_id
        for path in folder.iterdir():
            entry = listed[path.relative_to(run).as_posix()]
            assert entry["sha256"] == _sha256(path)
            assert entry["size_bytes"] == path.stat().st_size
            assert entry["kind"] == "output" and entry["path_type"] == "artifact_relative"
            assert entry["description"].endswith(f" of {case_id}")
        memory = json.loads((folder / "memory_analysis.json").read_text())
        assert memory["argument_size_in_bytes"] > 0
    assert not (run / "outputs" / case_dirname(BROKEN)).exists()

    # The exported kernels have export.bin; the host callback cannot be exported but builds.
    callback = run / "outputs" / case_dirname("lw/host_callback[n=16]")
    assert not (callback / "export.bin").exists()
    assert "no jax.export artifact" in proc.stderr
    report = json.loads((run / "report.json").read_text())
    status = {c["case_id"]: c["status"] for c in report["cases"]}
    assert status == {**dict.fromkeys(GOOD_CASES, "success"), BROKEN: "failed"}
    assert report["run"]["status"] == "partial"
    [failure] = report["failures"]
    assert failure["case_id"] == BROKEN and failure["phase"] == "compile"
    built = next(c for c in report["cases"] if c["case_id"] == SCALE)
    assert built["phases"]["compile_s"] > 0 and built["phases"]["lower_s"] > 0

    assert_schema_valid(root / "run")


@pytest.mark.slow
def test_build_of_good_kernels_exits_0(tile: TileRun, project: MakeProject) -> None:
    root = project(["lowering.py", "lowering_error.py"])
    proc = tile("build", "-k", "scale", "-o", "run", cwd=root)
    assert proc.returncode == 0, proc.stderr
    outputs = {p.name for p in (root / "run" / "outputs").iterdir()}
    assert outputs == {case_dirname("lw/scale[n=128]"), case_dirname("lw/scale[n=256]")}
    assert_schema_valid(root / "run")


# ---------------------------------------------------------------- tile inspect


@pytest.mark.slow
def test_inspect_prints_each_kind(tile: TileRun, project: MakeProject) -> None:
    root = project(["lowering.py"])
    proc = tile("inspect", SCALE, "--kind", "all", cwd=root)
    assert proc.returncode == 0, proc.stderr
    sections = dict(re.findall(r"==> (\w+) <==\n(.*?)(?=\n==> |\Z)", proc.stdout, re.S))
    assert list(sections) == ["jaxpr", "stablehlo", "hlo", "cost", "memory"]
    assert "mul a 2.0" in sections["jaxpr"]
    assert "stablehlo.multiply" in sections["stablehlo"]
    assert sections["hlo"].startswith("HloModule jit_scale")
    assert json.loads(sections["cost"])["flops"] > 0
    assert json.loads(sections["memory"])["argument_size_in_bytes"] == 128 * 4

    one = tile("inspect", SCALE, "--kind", "stablehlo", cwd=root)
    assert one.returncode == 0, one.stderr
    assert one.stdout.startswith("module @jit_scale") and "==>" not in one.stdout

    kinds = tile("inspect", "--list-kinds", cwd=root)
    assert kinds.stdout.split() == ["jaxpr", "stablehlo", "hlo", "cost", "memory", "all"]


@pytest.mark.slow
def test_inspect_errors(tile: TileRun, project: MakeProject) -> None:
    root = project(["lowering.py", "lowering_error.py"])
    missing = tile("inspect", "lw/scale[n=12]", cwd=root)
    assert missing.returncode == 2
    assert "no case `lw/scale[n=12]`" in missing.stderr
    assert "did you mean `lw/scale[n=128]`" in missing.stderr
    assert "Traceback" not in missing.stderr

    bad_kind = tile("inspect", SCALE, "--kind", "hlx", cwd=root)
    assert bad_kind.returncode == 2 and "did you mean `hlo`" in bad_kind.stderr

    broken = tile("inspect", BROKEN, cwd=root)
    assert broken.returncode == 1
    assert "Only interpret mode is supported" in broken.stderr


# ---------------------------------------------------------------- tile snap


@pytest.mark.slow
def test_snap_check_update_cycle(tile: TileRun, project: MakeProject, tmp_path: Path) -> None:
    root = project(["lowering.py"])
    snaps = root / "snapshots"

    record = tile("snap", cwd=root)
    assert record.returncode == 0, record.stderr
    assert record.stderr.count("new snapshot") == len(GOOD_CASES)
    files = sorted(p.name for p in snaps.iterdir())
    assert files == sorted(case_dirname(c) + ".mlir" for c in GOOD_CASES)
    scale_snap = snaps / (case_dirname(SCALE) + ".mlir")
    assert snapshot_case_id(scale_snap) == SCALE
    assert "loc(" not in scale_snap.read_text()

    # Unchanged code passes twice: here, and in a copy of the project elsewhere on disk.
    again = tile("snap", "--check", cwd=root)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "4 unchanged" in again.stderr
    moved = shutil.copytree(root, tmp_path / "moved" / "elsewhere")
    elsewhere = tile("snap", "--check", cwd=moved)
    assert elsewhere.returncode == 0, elsewhere.stdout + elsewhere.stderr

    # A kernel change, a snapshot whose case is gone, and one that went missing.
    kernels = root / "kernels" / "lowering.py"
    kernels.write_text(kernels.read_text().replace("return x * 2.0 + 1.0", "return x * 3.0 + 1.0"))
    stale = snaps / "lw_gone-00000000.mlir"
    stale.write_text(render_snapshot("lw/gone", "module @jit_gone {\n}\n"))
    lost = snaps / (case_dirname("lw/host_callback[n=16]") + ".mlir")
    lost.unlink()
    before = scale_snap.read_text()

    changed = tile("snap", "--check", cwd=root)
    assert changed.returncode == 1
    name = f"snapshots/{scale_snap.name}"
    assert f"--- a/{name}\n+++ b/{name}\n" in changed.stdout
    assert "-    %cst = stablehlo.constant dense<2.000000e+00>" in changed.stdout
    assert "+    %cst = stablehlo.constant dense<3.000000e+00>" in changed.stdout
    assert "lw_gone-00000000.mlir (case `lw/gone` no longer exists)" in changed.stderr
    assert f"missing snapshot snapshots/{lost.name}" in changed.stderr
    assert "2 changed, 1 new, 1 stale" in changed.stderr and "tile snap --update" in changed.stderr
    assert not lost.exists()  # --check writes nothing

    plain = tile("snap", cwd=root)  # adds the new one, shows the diff, accepts no change
    assert plain.returncode == 1
    assert "dense<3.000000e+00>" in plain.stdout
    assert lost.exists() and scale_snap.read_text() == before and stale.exists()

    update = tile("snap", "--update", cwd=root)
    assert update.returncode == 0, update.stderr
    assert "dense<3.000000e+00>" in scale_snap.read_text()
    assert not stale.exists()
    final = tile("snap", "--check", cwd=root)
    assert final.returncode == 0, final.stdout + final.stderr


@pytest.mark.slow
def test_snap_fails_on_a_kernel_that_does_not_lower(tile: TileRun, project: MakeProject) -> None:
    root = project(["lowering_error.py"])
    proc = tile("snap", "--update", cwd=root)
    assert proc.returncode == 1
    assert BROKEN in proc.stderr and "1 failed to lower" in proc.stderr
    usage = tile("snap", "--check", "--update", cwd=root)
    assert usage.returncode == 2


# ---------------------------------------------------------------- normalization (no runner)

DEBUG_TEXT = """\
#loc1 = loc("x")
module @jit_scale_17 attributes {mhlo.num_partitions = 1 : i32} {
  func.func public @main(%arg0: tensor<8xf32> {jax.arg_info = "x", mhlo.sharding = "{replicated}"} loc("x")) -> (tensor<8xf32> {jax.result_info = "result"}) {
    %cst = stablehlo.constant dense<2.0> : tensor<f32> loc(#loc8)
    %0 = stablehlo.custom_call @xla_ffi_python_cpu_callback(%arg0) {backend_config = "140230", mhlo.backend_config = {index = 3 : ui64}} : (tensor<8xf32>) -> tensor<8xf32> loc(callsite(#loc6 at #loc5))
    %1 = stablehlo.custom_call @foo(%0) {backend_config = "keep loc(this) and index = 3 : ui64"} : (tensor<8xf32>) -> tensor<8xf32> loc("a(b)"("/home/u/k.py":4:11 to :18))
    return %1 : tensor<8xf32> loc(#loc8)   \n\
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
#loc2 = loc("/home/u/k.py":7:6 to :16)
#loc8 = loc("jit(scale)"(#loc5))


"""


def test_normalize_strips_run_to_run_noise_only() -> None:
    text = normalize_stablehlo(DEBUG_TEXT)
    assert text == (
        "module @jit_scale attributes {mhlo.num_partitions = 1 : i32} {\n"
        '  func.func public @main(%arg0: tensor<8xf32> {mhlo.sharding = "{replicated}"})'
        " -> (tensor<8xf32>) {\n"
        "    %cst = stablehlo.constant dense<2.0> : tensor<f32>\n"
        "    %0 = stablehlo.custom_call @xla_ffi_python_cpu_callback(%arg0) "
        '{backend_config = "N", mhlo.backend_config = {index = N : ui64}} '
        ": (tensor<8xf32>) -> tensor<8xf32>\n"
        '    %1 = stablehlo.custom_call @foo(%0) {backend_config = "keep loc(this) and index'
        ' = 3 : ui64"} : (tensor<8xf32>) -> tensor<8xf32>\n'
        "    return %1 : tensor<8xf32>\n"
        "  }\n"
        "}\n"
    )
    assert normalize_stablehlo(text) == text  # idempotent
