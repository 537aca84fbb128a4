"""`RunRequest.profile` (protocol 1.12) in a real runner: the calls of a built case are made,
counted by a host callback that writes one line per call."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

from tile_protocol import Artifact, BuildResult, Failure, case_dirname

_KERNEL = """
import os

import jax
import numpy as np

import tile_runner as tile


def _inputs(case, key):
    return (tile.normal(key, (8,), "float32"),)


@tile.kernel("pc/counted", inputs=_inputs)
def counted(x):
    def note(a):
        with open(os.environ["PROFILE_CALLS_LOG"], "a") as fh:
            fh.write("call\\n")
        return np.asarray(a)

    return jax.pure_callback(note, jax.ShapeDtypeStruct(x.shape, x.dtype), x) + 1.0
"""
CASE = "pc/counted"


def _build(runner: Any, tmp_path: Path, profile: dict[str, Any], output_dir: Path | None):
    module = tmp_path / "counted.py"
    module.write_text(_KERNEL)
    log = tmp_path / "calls.log"
    log.unlink(missing_ok=True)
    request: dict[str, Any] = {"command": "build", "paths": [str(module)], "plugins": [],
                               "profile": profile}  # fmt: skip
    if output_dir is not None:
        request["output_dir"] = str(output_dir)
    out = runner(request, env=runner.env(PROFILE_CALLS_LOG=str(log)))
    calls = len(log.read_text().splitlines()) if log.is_file() else 0
    return out, calls


def test_the_runner_under_ncu_makes_its_calls_without_a_run_directory(
    runner: Any, tmp_path: Path
) -> None:
    # How the host asks the runner it starts under ncu: no output directory, a profiler range
    # (a no-op without a CUDA driver), `calls` calls after one warm-up.
    out, calls = _build(runner, tmp_path, {"calls": 4, "ncu_range": True, "source": False}, None)
    assert out.returncode == 0, out.stderr
    assert not out.of(Failure) and set(out.by_case(BuildResult)) == {CASE}
    assert calls == 1 + 4
    assert not out.of(Artifact)


def test_a_trace_names_each_call_and_is_announced(runner: Any, tmp_path: Path) -> None:
    run = tmp_path / "run"
    out, calls = _build(runner, tmp_path, {"calls": 2, "trace": True}, run)
    assert out.returncode == 0, out.stderr
    assert calls == 1 + 2
    folder = run / "outputs" / case_dirname(CASE)
    announced = {a.path: a for a in out.of(Artifact)}
    on_disk = {p.relative_to(run).as_posix() for p in run.rglob("*") if p.is_file()}
    assert set(announced) == on_disk  # every file the runner wrote is announced
    [perfetto] = (folder / "profile" / "trace").rglob("perfetto_trace.json.gz")
    assert announced[perfetto.relative_to(run).as_posix()].kind == "trace"
    text = gzip.decompress(perfetto.read_bytes()).decode()
    assert f"tile {CASE} #0" in text and f"tile {CASE} #1" in text
    source = announced[f"outputs/{case_dirname(CASE)}/kernel_source.py"]
    assert source.kind == "kernel_source" and source.case_id == CASE
    assert (folder / "kernel_source.py").read_text() == _KERNEL
