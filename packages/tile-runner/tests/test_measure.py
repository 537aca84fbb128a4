"""Timing: `tile.measure`, adaptive sampling caps, cold runs, work, roofline, peaks, cupti."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

import tile_runner as tile
from tile_protocol import BenchSettings, Peaks, Stats, Work
from tile_runner import _timers
from tile_runner._compile import aot_compile, bind_static, cost_estimate
from tile_runner._measure import Measurement, sample, time_compiled
from tile_runner._peaks import builtin_peaks, cache_bytes, known_device
from tile_runner._roofline import flops_peak, roofline, throughput
from tile_runner._timers import WallSampler


def _tiny(x: jax.Array) -> jax.Array:
    return x + 1


def test_measure_in_process() -> None:
    x = jnp.ones((8,), jnp.float32)
    m = tile.measure(_tiny, x, max_time=0.05, max_runs=30, warmup=1)
    assert m.timer == ("cupti" if jax.default_backend() == "gpu" else "wall")
    assert 1 <= m.stats.n <= 30
    assert len(m.samples) == m.stats.n
    assert all(s > 0 for s in m.samples)
    assert m.stats.min <= m.stats.median <= m.stats.max
    assert m.stats.stop_reason in ("precision", "max_time", "max_runs")
    assert m.phases.compile_s is not None and m.phases.compile_s >= 0
    assert m.phases.compile_count is not None and m.phases.compile_count >= 1
    assert m.median == m.stats.median
    assert "median of" in str(m)


def test_a_measurement_reads_its_times_as_the_tables_do() -> None:
    # tile_protocol.format, as in `tile bench`'s table: 3 significant digits, unit after rounding.
    stats = Stats(
        n=412, min=1e-5, max=2e-5, mean=1.2e-5, median=1.2345e-5, stdev=1e-7, mad=1e-7,
        q1=1.2e-5, q3=1.25e-5, p5=1.1e-5, p95=1.3e-5, ci_low=1.2211e-5, ci_high=9.9996e-4,
        stop_reason="precision",
    )  # fmt: skip
    m = Measurement(samples=[1.2345e-5], stats=stats, timer="cupti")
    assert str(m) == "12.3 µs [12.2 µs, 1.00 ms] median of 412 (cupti, stopped by precision)"


def test_measure_batched_and_static_args() -> None:
    def upper_or_all(a: jax.Array, upper: bool) -> jax.Array:
        return jnp.triu(a) if upper else a

    x = jnp.ones((4, 4), jnp.float32)
    m = tile.measure(upper_or_all, x, True, timer="batched", max_runs=5)
    assert m.timer == "batched"
    assert m.stats.n <= 5


def test_unavailable_timer_raises_in_process() -> None:
    if jax.default_backend() != "gpu":
        with pytest.raises(tile.RunnerError, match="cupti"):
            tile.measure(_tiny, jnp.ones(2), timer="cupti")
    with pytest.raises(tile.RunnerError, match="unknown timer"):
        tile.measure(_tiny, jnp.ones(2), timer="sundial")


def test_sampling_stops_at_max_runs() -> None:
    x = jnp.ones((8,), jnp.float32)
    compiled = aot_compile(_tiny, (x,)).compiled
    settings = BenchSettings(
        warmup_runs=1, min_runs=2, max_runs=7, max_time=60.0, target_precision=1e-12, batch=3
    )
    samples, reason = sample(WallSampler(compiled, (x,), None), settings)
    assert reason == "max_runs"
    assert len(samples) == 7


def test_sampling_stops_at_max_time() -> None:
    x = jnp.ones((8,), jnp.float32)
    compiled = aot_compile(_tiny, (x,)).compiled
    settings = BenchSettings(
        warmup_runs=0,
        min_runs=1,
        max_runs=10_000_000,
        max_time=0.02,
        target_precision=1e-12,
        batch=1,
    )
    samples, reason = sample(WallSampler(compiled, (x,), None), settings)
    assert reason == "max_time"
    assert 1 <= len(samples) < 10_000_000


def test_cold_measure_records_mode() -> None:
    x = jnp.ones((16,), jnp.float32)
    m = tile.measure(_tiny, x, cold=True, max_runs=3, max_time=0.05, warmup=0)
    assert m.cold is True
    assert m.stats.n <= 3
    warm = tile.measure(_tiny, x, max_runs=3, warmup=0)
    assert warm.cold is False


def test_cold_samples_flush_the_configured_cache_size() -> None:
    # `[machine] l2_bytes` reaches the runner as `cache_bytes` and wins over the table.
    assert cache_bytes("gpu", "NVIDIA H200", 3 << 20) == 3 << 20
    assert cache_bytes("cpu", "cpu", 3 << 20) == 3 << 20
    x = jnp.ones((16,), jnp.float32)
    compiled = aot_compile(_tiny, (x,)).compiled
    settings = BenchSettings(
        warmup_runs=0, min_runs=2, max_runs=2, target_precision=0.01, cold=True, cache_bytes=5 << 18
    )
    timing = time_compiled(compiled, (x,), settings, timer="wall")
    assert timing.cold and len(timing.samples) == 2
    flushes = _timers._flushes  # pyright: ignore[reportPrivateUsage]
    assert flushes[5 << 18].nbytes == 2 * (5 << 18)  # made for these samples, and only so


def test_aot_compile_phases_and_static_binding() -> None:
    def scale(a: jax.Array, n: int) -> jax.Array:
        return a * n

    fn, dynamic = bind_static(scale, (jnp.ones(3), 4))
    assert len(dynamic) == 1
    compiled = aot_compile(fn, dynamic)
    assert np.allclose(np.asarray(compiled.compiled(*dynamic)), 4.0)
    phases = compiled.phases
    assert phases.trace_s is not None and phases.lower_s is not None
    assert phases.cache_hit is None  # no persistent cache in this process
    nbytes, flops = cost_estimate(compiled.compiled)
    assert nbytes is not None and nbytes > 0
    assert flops is not None and flops >= 3


def test_inputs_are_seeded_nonzero_and_typed() -> None:
    k1 = tile.case_key(7, "k[shape=4]")
    k2 = tile.case_key(7, "k[shape=4]")
    k3 = tile.case_key(8, "k[shape=4]")
    a = tile.normal(k1, (64,), "bfloat16")
    assert a.dtype == jnp.bfloat16
    assert np.array_equal(np.asarray(a), np.asarray(tile.normal(k2, (64,), "bfloat16")))
    assert not np.array_equal(np.asarray(a), np.asarray(tile.normal(k3, (64,), "bfloat16")))
    assert np.any(np.asarray(a, np.float32) != 0)
    u = np.asarray(tile.uniform(k1, (100,), "float32", -2.0, -1.0))
    assert u.min() >= -2.0 and u.max() < -1.0
    r = np.asarray(tile.randint(k1, (100,), 5, 9))
    assert r.dtype == np.int32 and r.min() >= 5 and r.max() < 9
    with pytest.raises(tile.RunnerError, match="floating"):
        tile.normal(k1, (2,), "int32")


def test_data_in_process(http_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path))
    entry = http_server.entry("inproc", b"hello data")
    path = tile.data("inproc", downloads={"inproc": entry})
    assert path.read_bytes() == b"hello data"
    with pytest.raises(tile.RunnerError, match="no download called `missing`"):
        tile.data("missing", downloads={"inproc": entry})


def test_throughput_and_roofline_arithmetic() -> None:
    peaks = Peaks(bandwidth_gbps=1000.0, tflops={"bfloat16": 100.0}, source="test")
    # 1e9 bytes and 1e12 flops in 10 ms: 100 GB/s, 100 TFLOP/s.
    work = Work(bytes=1e9, flops=1e12, source="declared")
    rates = throughput(work, 0.01)
    assert rates.gbps == pytest.approx(100.0)
    assert rates.tflops == pytest.approx(100.0)
    r = roofline(work, 0.01, peaks, "bfloat16")
    assert r.intensity == pytest.approx(1000.0)
    assert r.pct_peak_bw == pytest.approx(10.0)
    assert r.pct_peak_flops == pytest.approx(100.0)
    assert r.bound == "compute-bound"  # ridge = 100e12 / 1000e9 = 100 flop/byte < 1000
    assert r.peak_source == "test"
    mem = roofline(Work(bytes=1e9, flops=1e9), 0.002, peaks, None)
    assert mem.bound == "memory-bound"
    assert mem.pct_peak_bw == pytest.approx(50.0)
    tiny = roofline(Work(bytes=4096, flops=1024), 2e-6, peaks, "bfloat16")
    assert tiny.bound == "latency-bound"
    assert roofline(work, 0.01, None, "bfloat16").bound == "unknown"
    assert roofline(Work(bytes=1e9), 0.01, peaks, None).bound == "unknown"


def test_builtin_peaks_table() -> None:
    h200 = builtin_peaks("NVIDIA H200")
    assert h200 is not None and h200.bandwidth_gbps == 4800.0
    assert flops_peak(h200, "bfloat16") == pytest.approx(989.4)
    assert flops_peak(h200, "float32") == h200.tflops["float32"]
    assert flops_peak(h200, "float8_e4m3fn") == h200.tflops["float8"]
    pcie = known_device("NVIDIA H100 PCIe")
    assert pcie is not None and pcie.bandwidth_gbps == 2000.0
    sxm = known_device("NVIDIA H100 80GB HBM3")
    assert sxm is not None and sxm.bandwidth_gbps == 3350.0
    assert known_device("NVIDIA A100-SXM4-40GB") is not None
    assert builtin_peaks("cpu") is None
    assert cache_bytes("gpu", "NVIDIA H200") == 60 * 1024 * 1024
    assert cache_bytes("gpu", "Mystery GPU") == 64 * 1024 * 1024


@pytest.mark.gpu
def test_cupti_timer_on_gpu() -> None:
    x = jnp.ones((1 << 20,), jnp.float32)
    m = tile.measure(_tiny, x, timer="cupti", max_runs=50, max_time=0.5)
    assert m.timer == "cupti"
    assert 0 < m.stats.median < 1e-3
    cold = tile.measure(_tiny, x, timer="cupti", cold=True, max_runs=20, max_time=0.5)
    assert cold.timer == "cupti" and cold.cold


def _triple(x: jax.Array) -> jax.Array:
    return x * 3.0


@pytest.mark.gpu
def test_a_cupti_pair_detaches_once_and_the_next_case_attaches_again_on_gpu() -> None:
    from tile_runner._cupti import CuptiSampler, _Session  # pyright: ignore[reportPrivateUsage]

    x = jnp.ones((1 << 20,), jnp.float32)
    for _ in range(2):  # two cases in a row: the second attaches what the first detached
        pair = _timers.InterleavedSampler(
            CuptiSampler(_tiny, (x,), None), CuptiSampler(_triple, (x,), None)
        )
        pair.warmup(2)
        samples = pair.take(20)
        assert _Session.attached
        pair.close()
        assert not _Session.attached
        assert len(samples) == len(pair.reference_samples) == 20
        assert all(0 < s < 1e-3 for s in (*samples, *pair.reference_samples))


def _two_kernels(a: jax.Array, b: jax.Array) -> jax.Array:
    # A gemm, then a row softmax of its result: XLA on the H200 fuses a reduction with the
    # elementwise ops around it into one kernel, but not a softmax into the gemm's epilogue.
    return jax.nn.softmax((a @ b).astype(jnp.float32), axis=-1)


@pytest.mark.gpu
def test_cupti_breaks_a_case_down_by_kernel_on_gpu() -> None:
    a = jnp.ones((2048, 2048), jnp.bfloat16)
    m = tile.measure(_two_kernels, a, a, timer="cupti", max_runs=200, max_time=1.0)
    assert m.kernels is not None and len(m.kernels) >= 2
    # Every call's time is the sum of its kernels': the medians add up to about the case's.
    total = sum(k.stats.median for k in m.kernels)
    assert total == pytest.approx(m.stats.median, rel=0.05)
    assert all(k.origin is not None for k in m.kernels), [k.name for k in m.kernels]
    cold = tile.measure(_two_kernels, a, a, timer="cupti", cold=True, max_runs=20, max_time=0.5)
    assert cold.kernels is not None and {k.name for k in cold.kernels} == {
        k.name for k in m.kernels
    }


def _aliased_double(a: jax.Array) -> jax.Array:
    def kernel(x_ref: jax.Array, o_ref: jax.Array) -> None:
        o_ref[...] = x_ref[...] * 2

    return pl.pallas_call(  # the Triton lowering, as tile-std's kernels ask for it
        kernel,
        out_shape=jax.ShapeDtypeStruct(a.shape, a.dtype),
        input_output_aliases={0: 0},
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=1),
    )(a)


@pytest.mark.gpu
@pytest.mark.filterwarnings("ignore:The Pallas Triton backend is deprecated:DeprecationWarning")
def test_cupti_says_when_a_copy_outside_the_kernels_goes_untimed_on_gpu() -> None:
    # XLA copies the undonated input before the aliased call, as a memcpy CUPTI's kernel
    # records do not hold (H100: 18.4 us under cupti, 93.7 us batched; alias_probe.py).
    a = jnp.ones((1024, 1024), jnp.float32)
    with pytest.warns(RuntimeWarning, match="outside any kernel"):
        tile.measure(_aliased_double, a, timer="cupti", max_runs=20, max_time=0.3)


def _double(a: jax.Array) -> jax.Array:
    return a * 2


def _double_and_more(a: jax.Array) -> tuple[jax.Array, dict[str, jax.Array]]:
    return a * 2, {"b": a + 1}


def test_the_wall_timer_waits_on_every_output_it_is_given() -> None:
    # One array: its own block_until_ready (cheaper per call); several: every leaf.
    from tile_runner._jaxapi import block_until_ready

    x = jnp.arange(8.0)
    one = WallSampler(jax.jit(_double), [x], None)  # pyright: ignore[reportUnknownMemberType]
    one.warmup(1)
    assert one._ready is type(x).block_until_ready  # pyright: ignore[reportPrivateUsage]
    pair = WallSampler(jax.jit(_double_and_more), [x], None)  # pyright: ignore[reportUnknownMemberType]
    pair.warmup(1)
    assert pair._ready is block_until_ready  # pyright: ignore[reportPrivateUsage]
    for sampler in (one, pair):
        samples = sampler.take(5)
        assert len(samples) == 5 and all(s > 0 for s in samples)


class _Counting:
    """A sampler whose samples are its call numbers (1, 2, ...), each call `sleep_s` long."""

    def __init__(self, name: _timers.TimerName, sleep_s: float) -> None:
        self.name: _timers.TimerName = name
        self.sleep_s = sleep_s
        self.calls = 0

    def warmup(self, runs: int) -> None:
        self.calls += runs

    def take(self, n: int) -> list[float]:
        out: list[float] = []
        for _ in range(n):
            self.calls += 1
            time.sleep(self.sleep_s)
            out.append(float(self.calls))
        return out

    def close(self) -> None:
        pass

    def kernels(self) -> None:
        return None


def test_a_side_that_waited_out_a_long_turn_settles_before_it_is_timed() -> None:
    # A 20 ms kernel gets turns of one call, and so does its reference, whose first call after
    # such a wait is slow on a CPU (benchmarks/interleave_wake.py). Once each side's fastest
    # call is known (a few turns in, whatever the machine's load), the reference makes three
    # untimed calls before each turn: the samples kept are every fourth call.
    kernel, reference = _Counting("wall", 0.02), _Counting("wall", 0.0)
    pair = _timers.InterleavedSampler(kernel, reference)
    pair.take(3)
    k0, r0 = kernel.calls, reference.calls
    assert pair.take(3) == [k0 + 1.0, k0 + 2.0, k0 + 3.0]  # the kernel never settles
    assert reference.calls - r0 == 12
    assert pair.reference_samples[-3:] == [r0 + 4.0, r0 + 8.0, r0 + 12.0]
    # The other way round: a cheap kernel settles before each turn after the slow reference's.
    kernel, reference = _Counting("wall", 0.0), _Counting("wall", 0.02)
    pair = _timers.InterleavedSampler(kernel, reference)
    pair.take(3)
    k0, r0 = kernel.calls, reference.calls
    pair.take(4)
    assert reference.calls - r0 == 4
    settled = kernel.calls - k0 - 4
    assert settled > 0 and settled % 3 == 0
    # Only `wall` settles: a `batched` sample is many calls, a `cupti` one is device time.
    kernel, reference = _Counting("batched", 0.02), _Counting("batched", 0.0)
    pair = _timers.InterleavedSampler(kernel, reference)
    pair.take(5)
    assert pair.reference_samples == [1.0, 2.0, 3.0, 4.0, 5.0]


def test_sides_of_equal_cost_never_settle_however_long_their_turns() -> None:
    # The first settle rule decided from turn-averaged times, so a turn of many calls slowed by
    # load made equal sides settle (CI caught it in test_reference_is_timed_in_turns_with_the_
    # kernel). Deciding from each side's fastest call, 1 ms each way never settles once both
    # are known, nor after a turn that one stall made 30x slower.
    kernel, reference = _Counting("wall", 0.001), _Counting("wall", 0.001)
    pair = _timers.InterleavedSampler(kernel, reference)
    pair.take(12)
    apart = reference.calls - kernel.calls
    pair.take(12)
    assert reference.calls - kernel.calls == apart
    kernel.sleep_s = 0.03  # a loaded stretch on the kernel's side
    pair.take(2)
    assert reference.calls - kernel.calls == apart


def test_a_negative_target_precision_is_refused_not_taken_for_the_default() -> None:
    # 0 is the backend's target; a negative one is a mistake the stopping rule names.
    with pytest.raises(ValueError, match="target_precision must be a positive"):
        tile.measure(_tiny, jnp.ones(2), target_precision=-0.01, max_runs=20, warmup=0)
