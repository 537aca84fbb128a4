"""`--from MODULE:FUNCTION`: a program's kernel calls become cases at the program's own shapes,
found by tracing (nothing computed), and a request's `cases` plan exactly those."""

from __future__ import annotations

import importlib
import pickle
from pathlib import Path
from typing import Any

import jax.numpy as jnp
import pytest

import tile_runner as tile
from tile_protocol import BenchResult, CaseSpec, Failure, Plan
from tile_runner._capture import CaptureError, capture
from tile_runner._configure import with_default_config
from tile_runner._plan import make_plan

FIXTURES = Path(__file__).parent / "fixtures"
PROGRAM = FIXTURES / "captured_program.py"


@pytest.fixture
def importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(FIXTURES))  # pyright: ignore[reportUnknownMemberType]


def _spec(kernel: str, target: str, **params: str) -> CaseSpec:
    return CaseSpec(kernel=kernel, params=params, captured=target)


@pytest.mark.usefixtures("importable")
def test_each_kernel_call_is_the_case_its_inputs_reproduce() -> None:
    target = "captured_program:program"
    captured = capture(target, "cpu")
    # Twice the same scale call is one case; pair's shape (m, n, k) is no argument's shape;
    # the scale inside pair is part of pair's call; the default `flip` counts as passed.
    assert captured.cases == [
        _spec("fxc/scale", target, shape="8x16", dtype="float32", flip="true"),
        _spec("fxc/pair", target, shape="8x32x16", dtype="float32"),
        _spec("fxc/scale", target, shape="3x5", dtype="bfloat16", flip="false"),
    ]
    assert captured.unmatched == []


@pytest.mark.usefixtures("importable")
def test_a_program_that_runs_itself_is_captured_as_it_runs() -> None:
    cases = capture("captured_program:eager", "cpu").cases
    assert [(c.kernel, c.params["shape"]) for c in cases] == [
        ("fxc/scale", "2x6"),
        ("fxc/pair", "2x4x6"),
        ("fxc/scale", "3x5"),
    ]


@pytest.mark.usefixtures("importable")
@pytest.mark.parametrize(
    ("target", "error_type", "said"),
    [
        ("no_such_module:program", "CaptureImport", "cannot import `no_such_module`"),
        ("captured_program:nothing", "CaptureImport", "has no `nothing`"),
        ("captured_program", "CaptureImport", "not MODULE:FUNCTION"),
        ("captured_program:raises", "CaptureTrace", "RuntimeError: no weights at /nowhere"),
        ("captured_program:not_a_program", "CaptureTrace", "returned int, not `(fn, args)`"),
        ("captured_program:no_kernel", "CaptureNone", "called no registered kernel"),
        ("captured_program:unmatched", "CaptureNone", "`fxc/pair` with (float32[2,2,2]"),
    ],
)
def test_a_target_that_gives_no_case_says_why(target: str, error_type: str, said: str) -> None:
    with pytest.raises(CaptureError) as caught:
        capture(target, "cpu")
    assert caught.value.error_type == error_type
    assert said in str(caught.value)


def test_what_tile_kernel_returns_is_still_the_registered_kernel(importable: None) -> None:
    scale: Any = importlib.import_module("captured_program").scale
    definition = tile.get_kernel("fxc/scale")
    assert scale is not definition.fn and scale.__wrapped__ is definition.fn
    assert scale.__name__ == "scale" and scale.__doc__ == definition.fn.__doc__
    # A direct call (tile.check, tile.measure) still runs the kernel's declared default.
    # The declared default flips twice (reps=2), the function's own once (reps=1).
    bound: Any = with_default_config(scale)
    assert float(bound(jnp.ones(()), True)) == 1.0
    assert float(scale(jnp.ones(()), True)) == -1.0


def test_named_cases_are_planned_instead_of_the_declared_axes(importable: None) -> None:
    importlib.import_module("captured_program")

    specs = [
        _spec("fxc/scale", "m:f", shape="8x16", dtype="bfloat16", flip="true"),
        CaseSpec(kernel="fxc/gone", params={}),
    ]
    plan = make_plan("bench", "cpu", kernels=["fxc/*"], specs=specs)
    [(_, case)] = plan.cases  # fxc/pair has no named case: none of its declared ones runs
    assert case.id == "fxc/scale[shape=8x16,dtype=bfloat16,flip=true]"
    assert case.captured == "m:f" and case.shape == (8, 16) and case.flip is True
    assert pickle.loads(pickle.dumps(case)).captured == "m:f"
    [gone] = plan.failures
    assert gone.error_type == "UnknownKernel" and "`fxc/gone`" in gone.message
    bad = [CaseSpec(kernel="fxc/pair", params={"shape": "2x3x4"})]
    failed = make_plan("bench", "cpu", kernels=["fxc/pair"], specs=bad).failures
    assert "gives the axes shape; the kernel's are shape, dtype" in failed[0].message


def test_the_runner_captures_then_benches_what_it_captured(runner: Any) -> None:
    target = "captured_program:program"
    common = {"paths": [str(PROGRAM)], "plugins": [], "project_root": str(FIXTURES)}
    listed = runner({"command": "list", "capture": target, **common})
    planned = listed.of(Plan)[0].cases
    assert [c.captured for c in planned] == [target] * 3, listed.stderr
    specs = [CaseSpec(kernel=c.kernel, params=c.params, captured=c.captured) for c in planned]
    bench = {"min_runs": 2, "max_runs": 3, "max_time": 0.01, "warmup_runs": 0}
    run = runner({"command": "bench", "cases": [_wire(s) for s in specs],
                  "bench": bench, "filters": ["fxc/pair"], **common})  # fmt: skip
    [result] = run.of(BenchResult)
    assert result.case_id == "fxc/pair[shape=8x32x16,dtype=float32]", run.stderr
    assert result.captured == target and result.check is not None and result.check.passed
    failed = runner({"command": "list", "capture": "captured_program:raises", **common})
    [failure] = failed.of(Failure)
    assert failure.error_type == "CaptureTrace" and failure.phase == "plan"
    assert failed.of(Plan)[0].cases == []


def _wire(spec: CaseSpec) -> dict[str, Any]:
    import msgspec

    return msgspec.to_builtins(spec)
