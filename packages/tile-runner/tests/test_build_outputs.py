"""Build outputs: the files under `outputs/<case-dir>/`, their Artifact messages, the views."""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import tile_runner as tile
from tile_protocol import (
    Artifact,
    BenchSettings,
    BuildResult,
    Failure,
    Inspect,
    Log,
    Message,
    case_dirname,
)
from tile_runner._build import (
    BUILD_FILES,
    Stages,
    cost_dict,
    lower_only,
    memory_dict,
    view_text,
)
from tile_runner._case import run_case
from tile_runner._context import CaseContext

FIXTURES = Path(__file__).parent / "fixtures"
HAVE_FLATBUFFERS = importlib.util.find_spec("flatbuffers") is not None
VIEW_FILES = set(BUILD_FILES.values())


def _inputs(case: Any, key: Any) -> tuple[Any, ...]:
    return (tile.normal(key, (case.n,), "float32"),)


@tile.kernel("bo/affine", inputs=_inputs, bench=tile.axes(n=[64]))
def affine(x: Any) -> Any:
    return x * 2.0 + 1.0


def _add_one_on_host(a: Any) -> np.ndarray[Any, Any]:
    return np.asarray(a) + 1.0


@tile.kernel("bo/callback", inputs=_inputs, bench=tile.axes(n=[8]))
def callback(x: Any) -> Any:
    shape = jax.ShapeDtypeStruct(x.shape, x.dtype)
    return jax.pure_callback(_add_one_on_host, shape, x)


def _build(kernel: str, out: Path, command: str = "build", **kw: Any) -> list[Message]:
    sent: list[Message] = []
    ctx = CaseContext(
        command=command,
        seed=0,
        bench=BenchSettings(),
        tolerances={},
        timer="wall",
        peaks=None,
        send=sent.append,
        warn=lambda message, case_id: sent.append(
            Log(level="warning", message=message, case_id=case_id)
        ),
        output_dir=str(out),
        **kw,
    )
    for case in tile.cases(kernel, "bench", backend="cpu"):
        run_case(ctx, tile.get_kernel(kernel), case)
    return sent


def test_build_writes_each_view_and_announces_it(tmp_path: Path) -> None:
    sent = _build("bo/affine", tmp_path)
    artifacts = [m for m in sent if isinstance(m, Artifact)]
    [result] = [m for m in sent if isinstance(m, BuildResult)]
    assert result.ok and result.case_id == "bo/affine[n=64]"
    assert sent[-1] is result  # the files are announced before the case is done
    folder = f"outputs/{case_dirname(result.case_id)}"
    names = {a.path.removeprefix(folder + "/") for a in artifacts}
    assert names >= VIEW_FILES
    for a in artifacts:
        data = (tmp_path / a.path).read_bytes()
        assert a.path.startswith(folder + "/") and a.case_id == result.case_id
        assert a.sha256 == hashlib.sha256(data).hexdigest() and a.size_bytes == len(data)
    files = {p.name for p in (tmp_path / folder).iterdir()}
    assert files == names  # nothing else left behind (no temp files)
    kinds = {a.kind for a in artifacts}
    assert {"jaxpr", "stablehlo", "hlo", "cost_analysis", "memory_analysis"} <= kinds
    view = tmp_path / folder
    assert "mul" in (view / "jaxpr.txt").read_text()
    assert "stablehlo.multiply" in (view / "stablehlo.mlir").read_text()
    assert "HloModule" in (view / "hlo.txt").read_text()
    cost = json.loads((view / "cost_analysis.json").read_text())
    assert cost["flops"] > 0
    memory = json.loads((view / "memory_analysis.json").read_text())
    assert memory["argument_size_in_bytes"] == 64 * 4
    assert memory["output_size_in_bytes"] == 64 * 4


@pytest.mark.skipif(not HAVE_FLATBUFFERS, reason="jax.export serialization needs flatbuffers")
def test_export_round_trips(tmp_path: Path) -> None:
    sent = _build("bo/affine", tmp_path)
    [result] = [m for m in sent if isinstance(m, BuildResult)]
    assert result.error is None
    [export] = [m for m in sent if isinstance(m, Artifact) and m.kind == "export"]
    exported = jax.export.deserialize(bytearray((tmp_path / export.path).read_bytes()))
    x = jnp.arange(64, dtype=jnp.float32)
    np.testing.assert_allclose(exported.call(x), x * 2.0 + 1.0)  # pyright: ignore[reportUnknownMemberType]


def test_a_kernel_that_cannot_be_exported_still_builds(tmp_path: Path) -> None:
    sent = _build("bo/callback", tmp_path)
    [result] = [m for m in sent if isinstance(m, BuildResult)]
    assert result.ok
    assert result.error is not None and result.error.startswith("no jax.export artifact: ")
    assert not any(isinstance(m, Artifact) and m.kind == "export" for m in sent)
    assert not any(isinstance(m, Failure) for m in sent)
    [log] = [m for m in sent if isinstance(m, Log)]
    assert log.message == result.error and log.case_id == result.case_id
    folder = tmp_path / "outputs" / case_dirname(result.case_id)
    assert {p.name for p in folder.iterdir()} == VIEW_FILES


def test_without_output_dir_build_writes_nothing(tmp_path: Path) -> None:
    sent: list[Message] = []
    ctx = CaseContext(
        command="build", seed=0, bench=BenchSettings(), tolerances={}, timer="wall",
        peaks=None, send=sent.append, warn=lambda m, c: None,
    )  # fmt: skip
    [case] = tile.cases("bo/affine", "bench", backend="cpu")
    assert run_case(ctx, tile.get_kernel("bo/affine"), case) == "passed"
    assert [type(m) for m in sent] == [BuildResult]


def test_inspect_views_match_the_build_files(tmp_path: Path) -> None:
    sent = _build("bo/affine", tmp_path, command="inspect")
    views = {m.kind: m.text for m in sent if isinstance(m, Inspect)}
    assert list(views) == ["jaxpr", "stablehlo", "hlo", "cost", "memory"]
    assert json.loads(views["memory"])["argument_size_in_bytes"] == 64 * 4
    assert json.loads(views["cost"])["flops"] > 0
    assert not (tmp_path / "outputs").exists()  # inspect writes no files


def _jax_flag(name: str) -> object:
    """A jax flag's value (jax declares its flags at run time, out of the type checker's sight)."""
    return getattr(jax.config, name)


def test_lower_only_drops_source_locations_and_restores_the_config(tmp_path: Path) -> None:
    source = tmp_path / "user_kernel.py"
    source.write_text("def f(x):\n    return x * 2\n")
    spec = importlib.util.spec_from_file_location("user_kernel_for_locations", source)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    f = module.f

    before = _jax_flag("jax_traceback_in_locations_limit")
    # Lowered normally first: a cached lowering must not leak its locations into ours.
    assert str(source) in jax.jit(f).lower(jnp.ones(4)).as_text(debug_info=True)  # pyright: ignore[reportUnknownMemberType]
    stages = lower_only(f, (jnp.ones(4),))
    assert _jax_flag("jax_traceback_in_locations_limit") == before
    assert stages.compiled is None
    text = stages.lowered.as_text(debug_info=True)
    assert str(source) not in text and "module @jit_f " in text
    assert "stablehlo.multiply" in view_text("stablehlo", stages)
    with pytest.raises(ValueError, match="compiled"):
        view_text("hlo", stages)
    with pytest.raises(ValueError, match="unknown inspect kind"):
        view_text("llvm", stages)  # pyright: ignore[reportArgumentType]


class _NoAnalysis:
    """A compiled object whose backend offers no analyses (as some plugins do)."""

    def cost_analysis(self) -> Any:
        raise NotImplementedError("no cost analysis here")

    def memory_analysis(self) -> Any:
        return None


class _Analyses:
    """Analyses with the shapes older jax versions and odd backends return."""

    def cost_analysis(self) -> Any:
        return [{"flops": 3.0, "optimal_seconds": float("nan"), "bytes accessed": 8.0}]

    def memory_analysis(self) -> Any:
        class Stats:
            argument_size_in_bytes = 16
            serialized_buffer_assignment_proto = b"\x00\x01"

            def method(self) -> int:
                return 1

        return Stats()


def test_unavailable_analyses_are_null_and_values_are_json() -> None:
    assert cost_dict(_NoAnalysis()) is None
    assert memory_dict(_NoAnalysis()) is None
    stages = Stages(traced=None, lowered=None, compiled=_NoAnalysis())
    assert view_text("memory", stages) == "null\n"
    assert cost_dict(_Analyses()) == {"bytes accessed": 8.0, "flops": 3.0, "optimal_seconds": None}
    assert memory_dict(_Analyses()) == {"argument_size_in_bytes": 16}


def test_runner_build_stream_one_failure_others_built(runner: Any, tmp_path: Path) -> None:
    out = runner(
        {
            "command": "build",
            "paths": [str(FIXTURES / "good_kernels.py")],
            "plugins": [],
            "kernels": ["fx/scale", "fx/bad_kernel", "fx/static"],
            "output_dir": str(tmp_path),
        }
    )
    assert out.returncode == 1, out.stderr
    [failure] = out.of(Failure)
    assert failure.case_id == "fx/bad_kernel" and failure.phase == "compile"
    assert "kernel exploded while tracing" in failure.message
    built = out.by_case(BuildResult)
    assert set(built) == {
        "fx/scale[shape=64x64,dtype=float32]",
        "fx/static[causal=true]",
        "fx/static[causal=false]",
    }
    for case_id in built:
        folder = tmp_path / "outputs" / case_dirname(case_id)
        assert {p.name for p in folder.iterdir()} >= VIEW_FILES
    announced = {a.path for a in out.of(Artifact)}
    on_disk = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()}
    assert announced == on_disk
    assert not (tmp_path / "outputs" / case_dirname("fx/bad_kernel")).exists()
