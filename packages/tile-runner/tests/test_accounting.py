"""Where a case's time goes: the accounting on every result, and the reference compiled once."""

from __future__ import annotations

import time
from typing import Any

import jax.numpy as jnp
import numpy as np
import pytest

import tile_protocol as proto
import tile_runner as tile
from tile_protocol import BenchSettings, Message
from tile_runner._case import next_round, run_case
from tile_runner._clock import Stopwatch
from tile_runner._context import CaseContext
from tile_runner._rounds import BenchRounds


def _triple_reference(x: Any) -> Any:
    return x * 3.0


@tile.kernel(
    "acct/triple",
    inputs=lambda case, key: (tile.normal(key, (512,), case.dtype),),
    reference=_triple_reference,
    bench=tile.axes(dtype=["float32", "bfloat16"]),
)
def triple(x: Any) -> Any:
    return x * 3


def _host_ref(x: Any) -> Any:
    # Host code: cannot be traced, so it runs as a plain function (and is not timed).
    return jnp.asarray(np.asarray(x, np.float64) * 3.0, jnp.float32)


@tile.kernel(
    "acct/host_ref",
    inputs=lambda case, key: (tile.normal(key, (64,), "float32"),),
    reference=_host_ref,
    bench=tile.axes(n=[1]),
)
def host_triple(x: Any) -> Any:
    return x * 3


def _context(command: str, sent: list[Message], **bench: Any) -> CaseContext:
    settings: dict[str, Any] = {"max_runs": 20, "max_time": 0.1, "warmup_runs": 1, **bench}
    return CaseContext(
        command=command,
        seed=0,
        bench=BenchSettings(**settings),
        tolerances={},
        timer="wall",
        peaks=None,
        send=sent.append,
        warn=lambda message, case_id: sent.append(proto.Log(level="warning", message=message)),
    )


def _results(command: str, kernel: str, **bench: Any) -> list[Message]:
    sent: list[Message] = []
    ctx = _context(command, sent, **bench)
    for case in tile.cases(kernel, "bench", backend="cpu"):
        run_case(ctx, tile.get_kernel(kernel), case)
    return sent


def _adds_up(a: proto.Accounting) -> None:
    parts = [a.inputs_s, a.compile_s, a.reference_compile_s, a.check_s, a.warmup_s]
    parts += [a.sample_s, a.reference_sample_s, a.other_s]
    assert all(p >= 0 for p in parts)
    assert sum(parts) == pytest.approx(a.total_s, rel=1e-9, abs=1e-12)


def test_every_bench_result_accounts_for_its_time() -> None:
    results = [m for m in _results("bench", "acct/triple") if isinstance(m, proto.BenchResult)]
    assert len(results) == 2
    for r in results:
        a = r.accounting
        assert a is not None
        _adds_up(a)
        for part in (a.inputs_s, a.compile_s, a.reference_compile_s, a.check_s, a.sample_s):
            assert part > 0
        assert a.reference_sample_s > 0 and a.warmup_s > 0
        # The samples are wall times of calls that the sampling part contains.
        assert sum(r.samples) <= a.sample_s
        assert r.reference is not None and sum(r.reference.samples) <= a.reference_sample_s
        p = r.phases
        assert a.compile_s >= (p.trace_s or 0) + (p.lower_s or 0) + (p.compile_s or 0)


_COMPILES: list[int] = []


def _count_compiles(event: str, *_: Any, **__: Any) -> None:
    if event == "/jax/core/compile/backend_compile_duration" and _COMPILES:
        _COMPILES[-1] += 1


def _triple_kernel(name: str) -> None:
    """A fresh kernel and reference (new function objects: nothing of theirs is cached)."""

    def reference(x: Any) -> Any:
        return x * 3.0

    @tile.kernel(
        name,
        inputs=lambda case, key: (tile.normal(key, (512,), case.dtype),),
        reference=reference,
        bench=tile.axes(dtype=["float32", "bfloat16"]),
    )
    def kernel(x: Any) -> Any:
        return x * 3


def test_the_reference_is_compiled_once_per_input_signature() -> None:
    import jax.monitoring

    jax.monitoring.register_event_duration_secs_listener(_count_compiles)
    _triple_kernel("acct/warm")
    _triple_kernel("acct/fresh")
    _results("bench", "acct/warm")  # compiles what the two share: inputs, the check's reductions
    counts: dict[str, int] = {}
    for case in tile.cases("acct/fresh", "bench", backend="cpu"):
        _COMPILES.append(0)
        sent: list[Message] = []
        run_case(_context("bench", sent), tile.get_kernel("acct/fresh"), case)
        counts[str(case.get("dtype"))] = _COMPILES.pop()
    # float32: the kernel, and one reference executable for the check and the timing.
    # bfloat16: the kernel, and the reference for bfloat16 inputs (timing); its check runs on
    # float32-upcast inputs, a signature already compiled for the float32 case.
    assert counts == {"float32": 2, "bfloat16": 2}


def test_test_results_carry_accounting_without_sampling() -> None:
    [result] = [m for m in _results("test", "acct/triple") if isinstance(m, proto.TestResult)][:1]
    a = result.accounting
    assert a is not None and result.check.passed
    _adds_up(a)
    assert a.sample_s == a.reference_sample_s == a.warmup_s == 0.0
    assert a.check_s > 0 and a.compile_s > 0


def test_a_reference_that_cannot_be_traced_still_checks_the_kernel() -> None:
    sent = _results("bench", "acct/host_ref")
    [result] = [m for m in sent if isinstance(m, proto.BenchResult)]
    assert result.check is not None and result.check.passed
    warnings = [m.message for m in sent if isinstance(m, proto.Log)]
    assert any("reference could not be compiled" in w for w in warnings)
    assert result.reference is None  # no speedup without a compiled reference


def test_rounds_count_only_their_own_time() -> None:
    sent: list[Message] = []
    ctx = _context("bench", sent, rounds=2, max_runs=10)
    case = tile.cases("acct/triple", "bench", backend="cpu")[0]
    t0 = time.perf_counter()
    first = run_case(ctx, tile.get_kernel("acct/triple"), case)
    t1 = time.perf_counter()
    assert isinstance(first, BenchRounds)
    time.sleep(0.3)  # other cases' rounds would run here: not this case's time
    t2 = time.perf_counter()
    assert next_round(ctx, first, last=True) == "passed"
    t3 = time.perf_counter()
    [result] = [m for m in sent if isinstance(m, proto.BenchResult)]
    assert result.accounting is not None
    _adds_up(result.accounting)
    assert result.accounting.total_s <= (t1 - t0) + (t3 - t2)
    assert result.accounting.inputs_s > 0 and result.round_sizes is not None


def test_stopwatch_splits_and_pauses() -> None:
    watch = Stopwatch()
    time.sleep(0.01)
    watch.lap("inputs")
    watch.add("sample", 0.005)  # measured inside the next stretch by someone else
    time.sleep(0.01)
    watch.mark()
    watch.pause()
    time.sleep(0.05)
    watch.resume()
    a = watch.accounting()
    _adds_up(a)
    assert a.inputs_s >= 0.01 and a.sample_s == 0.005
    assert a.other_s >= 0.005
    assert a.total_s < 0.05  # the paused stretch is not counted
