"""Cases made ready ahead of their turn: compiled in batches, then timed with nothing compiling."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax.monitoring
import pytest

import tile_protocol as proto
import tile_runner as tile
from tile_protocol import BenchResult, BenchSettings, CaseStart, Message, Progress, StateChange
from tile_runner._ahead import prepare
from tile_runner._case import run_case
from tile_runner._context import CaseContext

FIXTURES = Path(__file__).parent / "fixtures"


def _request(kernel: str) -> dict[str, Any]:
    return {
        "command": "bench",
        "paths": [str(FIXTURES / "ahead_kernels.py")],
        "plugins": [],
        "kernels": [kernel],
        "bench": {"warmup_runs": 1, "min_runs": 3, "max_runs": 5, "max_time": 0.05},
        "compile_ahead": True,
    }


def test_a_batch_compiles_before_any_of_its_cases_runs(tmp_path: Path, runner: Any) -> None:
    log = tmp_path / "events.log"
    run = runner(_request("ah/log"), env=runner.env(TILE_AHEAD_LOG=str(log)))
    assert run.returncode == 0, run.stderr[-3000:]
    events = log.read_text().splitlines()
    first_run = next(i for i, e in enumerate(events) if e.startswith("run"))
    # Every case's inputs and kernel are made before the first case runs (its check).
    assert sorted(e for e in events[:first_run]) == sorted(
        [f"inputs {n}" for n in (1, 2, 3, 4)] + [f"trace {n}" for n in (1, 2, 3, 4)]
    )
    assert not any(e.startswith(("trace", "inputs")) for e in events[first_run:])
    # Then one case at a time, in plan order.
    ran = [int(e.split()[1]) for e in events[first_run:]]
    assert ran == sorted(ran)
    results = run.of(BenchResult)
    assert [r.params["n"] for r in results] == ["1", "2", "3", "4"]
    for r in results:
        a = r.accounting
        assert a is not None and a.compile_s > 0 and a.inputs_s > 0
        parts = [a.inputs_s, a.compile_s, a.reference_compile_s, a.check_s, a.warmup_s,
                 a.sample_s, a.reference_sample_s, a.other_s]  # fmt: skip
        assert sum(parts) == pytest.approx(a.total_s, rel=1e-9, abs=1e-12)
    assert len(run.of(CaseStart)) == 4


def test_a_batch_says_its_steps_unasked(tmp_path: Path, runner: Any) -> None:
    # No case is in flight while a batch is made ready: each step is said (`progress` is not
    # asked), so that the CLI bounds the silence by the case timeout; a case's own turn is not.
    log = tmp_path / "events.log"
    run = runner(_request("ah/log"), env=runner.env(TILE_AHEAD_LOG=str(log)))
    assert run.returncode == 0, run.stderr[-3000:]
    first_start = next(i for i, m in enumerate(run.messages) if isinstance(m, CaseStart))
    steps = [(p.step, p.case_id.split("[")[1], p.done, p.total) for p in run.of(Progress)]
    ids = [f"n={n}]" for n in (1, 2, 3, 4)]
    # Each case's compilations awaited in plan order, with how many cases' ended.
    assert steps == [("inputs", i, None, None) for i in ids] + [
        ("compile", i, k, 4) for k, i in enumerate(ids)
    ] + [("compile", ids[-1], 4, 4)]
    assert not [m for m in run.messages[first_start:] if isinstance(m, Progress)]


def test_kernels_compile_beside_the_inputs_until_the_cache_answers(
    tmp_path: Path, runner: Any
) -> None:
    # Each case's inputs after the first take 0.5 s: time for the cases before to compile.
    request = {**_request("ah/cached"), "jax_cache_dir": str(tmp_path / "cache")}
    orders: list[list[str]] = []
    for name in ("cold", "warm"):
        log = tmp_path / f"{name}.log"
        run = runner(request, env=runner.env(TILE_AHEAD_LOG=str(log), TILE_AHEAD_PAUSE="0.5"))
        assert run.returncode == 0, run.stderr[-3000:]
        events = log.read_text().splitlines()
        orders.append(events[: events.index("made 4") + 1])  # until the last inputs are made
    cold, warm = orders
    # Cold: every kernel but the last compiles (is traced) while later inputs are made.
    assert {"trace 1", "trace 2", "trace 3"} <= set(cold)
    # Warm: the first kernel came from the cache, so the later ones wait for the last inputs.
    assert "trace 1" in warm and "trace 3" not in warm


def test_a_runner_asked_not_to_compiles_each_case_in_its_turn(tmp_path: Path, runner: Any) -> None:
    # How a runner restarted after a crash runs: the case that kills it is the one in flight.
    log = tmp_path / "events.log"
    request = {**_request("ah/log"), "compile_ahead": False}
    run = runner(request, env=runner.env(TILE_AHEAD_LOG=str(log)))
    assert run.returncode == 0, run.stderr[-3000:]
    events = [e for e in log.read_text().splitlines() if not e.startswith("run")]
    assert events == [f"{what} {n}" for n in (1, 2, 3, 4) for what in ("inputs", "trace")]
    text = log.read_text()
    assert text.index("run 1") < text.index("inputs 2")
    assert run.of(Progress) == []  # nothing said unasked in a case's turn


def _state_changes(tmp_path: Path, runner: Any, kernel: str) -> tuple[list[StateChange], int, str]:
    """The state changes a bench of `kernel` reported, its result count and its event log."""
    log = tmp_path / "events.log"
    run = runner(_request(kernel), env=runner.env(TILE_AHEAD_LOG=str(log)))
    assert run.returncode == 0, run.stderr[-3000:]
    return run.of(StateChange), len(run.of(BenchResult)), log.read_text() if log.exists() else ""


def test_state_changed_while_compiling_ahead_is_blamed_on_its_case(
    tmp_path: Path, runner: Any
) -> None:
    changes, results, _ = _state_changes(tmp_path, runner, "ah/flag")
    assert [(c.case_id, c.changes[0].name) for c in changes] == [
        ("ah/flag[n=2]", "TILE_AHEAD_TOUCHED")
    ]
    assert results == 3


def test_a_change_seen_while_earlier_cases_compile_is_blamed_in_the_cases_turns(
    tmp_path: Path, runner: Any
) -> None:
    # n=1's kernel, traced on the compile pool while n=2's inputs are made, sets a variable:
    # the guard sees it after n=2's inputs, which did not set it. The batch is made ready again,
    # each case in its turn, where the guard names n=1.
    changes, results, log = _state_changes(tmp_path, runner, "ah/race")
    assert "inputs 2 saw trace 1" in log  # it compiled while the inputs were made
    assert [(c.case_id, c.changes[0].name) for c in changes] == [
        ("ah/race[n=1]", "TILE_AHEAD_RACE")
    ]
    assert results == 2


_COMPILES: list[int] = []


def _count(event: str, *_: Any, **__: Any) -> None:
    if event == "/jax/core/compile/backend_compile_duration" and _COMPILES:
        _COMPILES[-1] += 1


def _two_dtypes(name: str) -> None:
    """A fresh kernel (new function objects: nothing of theirs is cached) in two dtypes."""

    def reference(x: Any) -> Any:
        return x * 5.0

    @tile.kernel(
        name,
        inputs=lambda case, key: (tile.normal(key, (384,), case.dtype),),
        reference=reference,
        bench=tile.axes(dtype=["float32", "bfloat16"]),
    )
    def kernel(x: Any) -> Any:
        return x * 5


def test_a_case_made_ready_compiles_nothing_in_its_turn() -> None:
    jax.monitoring.register_event_duration_secs_listener(_count)
    _two_dtypes("ah/ready")
    sent: list[Message] = []
    ctx = CaseContext(
        command="bench",
        seed=0,
        bench=BenchSettings(max_runs=10, max_time=0.05, warmup_runs=1),
        tolerances={},
        timer="wall",
        peaks=None,
        send=sent.append,
        warn=lambda message, case_id: sent.append(proto.Log(level="warning", message=message)),
    )
    kernel = tile.get_kernel("ah/ready")
    units = [(kernel, c, None, c.id) for c in tile.cases("ah/ready", "bench", backend="cpu")]
    _COMPILES.append(0)
    readies = prepare(ctx, units, budget=1 << 30)
    assert _COMPILES[-1] > 0 and all(r.error is None for r in readies)
    for (k, case, _, _), ready in zip(units, readies, strict=True):
        _COMPILES.append(0)
        assert run_case(ctx, k, case, None, ready) == "passed"
        assert _COMPILES[-1] == 0, f"{case.id} compiled {_COMPILES[-1]} programs in its turn"
    assert len([m for m in sent if isinstance(m, BenchResult)]) == 2


def test_a_batch_holds_inputs_up_to_its_budget() -> None:
    _two_dtypes("ah/budget")
    ctx = CaseContext(command="bench", seed=0, bench=BenchSettings(), tolerances={},
                      timer="wall", peaks=None, send=lambda m: None, warn=lambda m, c: None)  # fmt: skip
    kernel = tile.get_kernel("ah/budget")
    units = [(kernel, c, None, c.id) for c in tile.cases("ah/budget", "bench", backend="cpu")]
    # The first case's inputs (384 floats) already pass a 1-byte budget: a batch of one.
    assert len(prepare(ctx, units, budget=1, compile_=False)) == 1
    assert len(prepare(ctx, units, budget=1 << 20, compile_=False)) == 2
