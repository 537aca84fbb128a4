"""The GPU's rest between samplings (`tile_runner._rest`): how much is due, that sampling
waits it and records its own length, and that a CPU run never waits."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from tile_protocol import BenchSettings
from tile_runner import _rest
from tile_runner._compile import aot_compile
from tile_runner._measure import SamplingTime, sample, time_compiled
from tile_runner._rest import REST_FACTOR, REST_MAX_S, DeviceRest
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
