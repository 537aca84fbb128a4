"""The GPU's rest between samplings (`tile_runner._rest`): how much is due, that sampling
waits it and records its own length, that a cool case leaves nothing due, and that a CPU run
never waits."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

import tile_protocol as proto
import tile_runner as tile
from tile_protocol import BenchSettings, Peaks, Work
from tile_runner import _rest, _rounds
from tile_runner._case import run_case
from tile_runner._compile import aot_compile
from tile_runner._context import CaseContext
from tile_runner._measure import SamplingTime, sample, time_compiled
from tile_runner._rest import HOT_PCT_FLOPS, REST_FACTOR, REST_MAX_S, DeviceRest, runs_hot
from tile_runner._timers import WallSampler


def test_the_rest_due_is_twice_the_last_sampling_less_what_passed_and_capped() -> None:
    rest = DeviceRest()
    assert rest.due(100.0) == 0.0  # nothing sampled yet
    rest.busy(10.0, 10.05)
    assert rest.due(10.05) == pytest.approx(REST_FACTOR * 0.05)
    assert rest.due(10.09) == pytest.approx(REST_FACTOR * 0.05 - 0.04)
    assert rest.due(10.5) == 0.0  # inputs and checks in between were rest enough
    rest.busy(20.0, 23.0)  # a long sampling: the cap
    assert rest.due(23.0) == pytest.approx(REST_MAX_S)


def _add_one(v: jax.Array) -> jax.Array:
    return v + 1


def _sampler() -> WallSampler:
    x = jnp.ones((8,), jnp.float32)
    return WallSampler(aot_compile(_add_one, (x,)).compiled, (x,), None)


def test_a_sampling_right_after_another_waits_its_rest_as_warm_up() -> None:
    # Each sampling lasts at least min_time, so the second is owed REST_FACTOR times that.
    settings = BenchSettings(
        warmup_runs=1, min_runs=1, max_runs=100_000, min_time=0.05, max_time=0.05, batch=1
    )
    rest, first, second = DeviceRest(), SamplingTime(), SamplingTime()
    a, b = _sampler(), _sampler()  # compiled first: a compile in between would count as rest
    sample(a, settings, spent=first, rest=rest)
    assert rest.ended is not None and rest.busy_s >= 0.05
    owed = min(REST_MAX_S, REST_FACTOR * rest.busy_s)
    sample(b, settings, spent=second, rest=rest)
    assert second.warmup_s >= owed * 0.9  # slept, less the moment between the two calls
    assert first.warmup_s < owed * 0.5  # the first owed nothing


def test_sampling_on_the_cpu_never_rests() -> None:
    assert jax.default_backend() == "cpu"
    x = jnp.ones((8,), jnp.float32)
    compiled = aot_compile(_add_one, (x,)).compiled
    settings = BenchSettings(warmup_runs=1, min_runs=2, max_runs=5, max_time=0.05)
    before = _rest.GPU_REST.ended
    time_compiled(compiled, (x,), settings, timer="wall")
    assert _rest.GPU_REST.ended == before is None


# 100 TFLOP/s and 1000 GB/s: a call of 1 ms runs at 10% of the flops peak with 1e11 flops.
_PEAKS = Peaks(bandwidth_gbps=1000.0, tflops={"default": 100.0})


def test_a_case_is_hot_at_the_flops_threshold_or_when_tile_cannot_tell() -> None:
    at = HOT_PCT_FLOPS / 100 * 100e12 * 1e-3  # flops that make 1 ms exactly the threshold
    assert runs_hot(Work(bytes=1e9, flops=at), 1e-3, _PEAKS, "float32")
    assert not runs_hot(Work(bytes=1e9, flops=at / 2), 1e-3, _PEAKS, "float32")
    assert not runs_hot(Work(bytes=1e9, flops=at), 2.1e-3, _PEAKS, "float32")  # slower: cooler
    assert runs_hot(Work(bytes=1e9), 1e-3, _PEAKS, "float32")  # no flops declared
    assert runs_hot(Work(bytes=1e9, flops=1.0), 1e-3, None, "float32")  # no peaks
    assert runs_hot(Work(bytes=1e9, flops=1.0), 1e-3, Peaks(bandwidth_gbps=1.0), "float32")


def test_a_cool_sampling_leaves_nothing_due() -> None:
    rest = DeviceRest()
    rest.busy(10.0, 10.05)
    rest.cooled()
    assert rest.ended == 10.05 and rest.due(10.05) == 0.0
    rest.busy(20.0, 20.05)  # the next hot sampling is owed its rest again
    assert rest.due(20.05) == pytest.approx(REST_FACTOR * 0.05)


def _flops_of(case: tile.Case) -> float:
    return 1e15 if case.get("heat") == "hot" else 1.0  # a petaflop a call: far over any peak


def _doubled(x: jax.Array) -> jax.Array:
    return x * 2.0


@tile.kernel(
    "rest/scaled",
    inputs=lambda case, key: (tile.normal(key, (256,), "float32"),),
    reference=_doubled,
    bench=tile.axes(heat=["cool", "hot"]),
    bytes=lambda case: 2048.0,
    flops=_flops_of,
)
def _scaled(x: jax.Array) -> jax.Array:
    return x * 2


@pytest.mark.parametrize(("heat", "owed"), [("cool", False), ("hot", True)])
def test_a_bench_case_that_ran_cool_tells_the_rest_and_a_hot_one_does_not(
    monkeypatch: pytest.MonkeyPatch, heat: str, owed: bool
) -> None:
    # The CPU never samples under the rest, so what a GPU's last sampling left stands in.
    rest = DeviceRest()
    rest.busy(0.0, 0.1)
    monkeypatch.setattr(_rounds, "GPU_REST", rest)
    sent: list[proto.Message] = []
    ctx = CaseContext(
        command="bench",
        seed=0,
        bench=BenchSettings(max_runs=5, max_time=0.05, warmup_runs=1),
        tolerances={},
        timer="wall",
        peaks=_PEAKS,
        send=sent.append,
        warn=lambda message, case_id: None,
    )
    (case,) = [
        c for c in tile.cases("rest/scaled", "bench", backend="cpu") if c.get("heat") == heat
    ]
    run_case(ctx, tile.get_kernel("rest/scaled"), case)
    assert any(isinstance(m, proto.BenchResult) for m in sent)
    assert (rest.busy_s > 0) is owed
