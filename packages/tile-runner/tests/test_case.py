"""One case in process: test, build and inspect commands, work sources, skips."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import tile_protocol as proto
import tile_runner as tile
from tile_protocol import BenchSettings, BuildResult, Failure, Inspect, Message
from tile_runner._case import CaseContext, run_case

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module", autouse=True)
def _fixture_kernels() -> None:
    assert tile.discover(paths=[str(FIXTURES / "good_kernels.py")], plugins=[]) == []


def _run(command: str, kernel: str, suite: str = "test", **kw: Any) -> list[tuple[Message, str]]:
    sent: list[Message] = []
    ctx = CaseContext(
        command=command,
        seed=0,
        bench=BenchSettings(max_runs=3, max_time=0.05, warmup_runs=0),
        tolerances=kw.pop("tolerances", {}),
        timer="wall",
        peaks=None,
        send=sent.append,
        warn=lambda message, case_id: None,
        **kw,
    )
    out: list[tuple[Message, str]] = []
    for case in tile.cases(kernel, suite, backend="cpu"):  # type: ignore[arg-type]
        before = len(sent)
        outcome = run_case(ctx, tile.get_kernel(kernel), case)
        out.extend((m, outcome) for m in sent[before:])
    return out


def test_test_command_checks_every_case() -> None:
    results = _run("test", "fx/softmax")
    assert len(results) == 2
    for message, outcome in results:
        assert isinstance(message, proto.TestResult)
        assert message.check.passed and outcome == "passed"
        assert message.seed == 0
    bf16 = next(m for m, _ in results if "bfloat16" in m.case_id)  # type: ignore[union-attr]
    assert bf16.check.tol == 2e-2  # the kernel's own tolerance


def test_request_tolerance_overrides_kernel() -> None:
    results = _run("test", "fx/softmax", tolerances={"bfloat16": 1e-9})
    outcomes = {m.case_id: o for m, o in results}  # type: ignore[union-attr]
    assert outcomes["fx/softmax[shape=8x128,dtype=bfloat16]"] == "failed"
    assert outcomes["fx/softmax[shape=8x128,dtype=float32]"] == "passed"


def test_no_reference_passes_with_message() -> None:
    [(message, outcome)] = _run("test", "fx/noref")
    assert isinstance(message, proto.TestResult)
    assert outcome == "passed"
    assert message.check.message == "no reference"


def test_wrong_kernel_fails_test() -> None:
    [(message, outcome)] = _run("test", "fx/wrong")
    assert isinstance(message, proto.TestResult)
    assert outcome == "failed"
    assert message.check.rel_l2_err is not None and message.check.rel_l2_err > 0.2


def test_build_reports_phases() -> None:
    [(message, outcome)] = _run("build", "fx/static", suite="bench")[:1]
    assert isinstance(message, BuildResult)
    assert message.ok and outcome == "passed"
    assert message.phases.lower_s is not None and message.phases.compile_s is not None


def test_inspect_sends_each_view() -> None:
    messages = _run("inspect", "fx/noref", suite="bench")
    kinds = [m.kind for m, _ in messages if isinstance(m, Inspect)]
    assert kinds == ["jaxpr", "stablehlo", "hlo", "cost", "memory"]
    texts = {m.kind: m.text for m, _ in messages if isinstance(m, Inspect)}
    assert "add" in texts["jaxpr"]
    assert "stablehlo" in texts["stablehlo"] or "func.func" in texts["stablehlo"]
    [(one, _)] = _run("inspect", "fx/noref", suite="bench", inspect_kind="hlo")
    assert isinstance(one, Inspect) and one.kind == "hlo"


def test_failures_and_skips_in_process() -> None:
    [(failure, outcome)] = _run("test", "fx/bad_inputs", suite="bench")
    assert isinstance(failure, Failure) and failure.phase == "inputs" and outcome == "failed"
    [(skip, outcome)] = _run("test", "fx/skips")
    assert isinstance(skip, Failure) and skip.status == "skipped" and outcome == "skipped"
    assert skip.message == "not on this backend"
