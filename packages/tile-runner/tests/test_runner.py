"""The runner process end to end: real subprocesses speaking the protocol."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import tile_runner as tile
from tile_protocol import (
    BadLine,
    BenchResult,
    CacheEvent,
    CaseStart,
    Done,
    Failure,
    Hello,
    InputFile,
    Log,
    Plan,
    Progress,
    StreamDecoder,
)

FIXTURES = Path(__file__).parent / "fixtures"
GOOD = FIXTURES / "good_kernels.py"
DATA = b"\x01\x02\x03\x04tile fixture data"
SCALE = "fx/scale[shape=64x64,dtype=float32]"
WRONG = "fx/wrong[shape=64x64,dtype=float32]"
NOISY = "fx/noisy[shape=4x4,dtype=float32]"


def _bench_request(cache: Path, downloads: dict[str, Any], *, cold: bool) -> dict[str, Any]:
    return {
        "command": "bench",
        "paths": [str(GOOD), str(FIXTURES / "broken")],
        "modules": ["fxmod_kernels"],
        "project_root": str(FIXTURES / "proj"),
        "plugins": [],
        "jax_cache_dir": str(cache),
        "cache_explain": True,
        "downloads": downloads,
        "bench": {
            "warmup_runs": 1,
            "min_runs": 3,
            "max_runs": 20,
            "max_time": 0.05,
            "batch": 2,
            "cold": cold,
        },
    }


@pytest.fixture(scope="module")
def bench_runs(
    tmp_path_factory: pytest.TempPathFactory, http_server: Any, runner: Any
) -> tuple[Any, Any]:
    """Two bench runs over the fixtures sharing one compilation cache; the second is cold."""
    tmp = tmp_path_factory.mktemp("bench")
    downloads = {"fxdata": http_server.entry("fxdata", DATA)}
    env = runner.env(TILE_CACHE_DIR=str(tmp / "downloads"))
    first = runner(_bench_request(tmp / "jaxcache", downloads, cold=False), env=env)
    second = runner(_bench_request(tmp / "jaxcache", downloads, cold=True), env=env)
    return first, second


def test_stream_is_clean_despite_prints(bench_runs: tuple[Any, Any]) -> None:
    run, _ = bench_runs
    assert not [e for e in run.events if isinstance(e, BadLine)], run.stderr[-3000:]
    assert "print from kernel trace" in run.stderr
    assert "raw write to fd 1 from kernel" in run.stderr
    assert run.by_case(BenchResult)[NOISY].check.passed


def test_message_order(bench_runs: tuple[Any, Any]) -> None:
    run, _ = bench_runs
    assert isinstance(run.messages[0], Hello)
    assert isinstance(run.messages[-1], Done)
    hello = run.messages[0]
    assert hello.backend == "cpu"
    assert hello.jax_version
    assert "wall" in hello.timers
    assert hello.devices
    assert hello.devices[0].platform == "cpu"
    # Every CPU is kind `cpu`: its model and core count tell machines apart (issue 40).
    assert hello.devices[0].model == tile.cpu_model()
    plans = run.of(Plan)
    assert len(plans) == 1
    planned = [c.case_id for c in plans[0].cases]
    starts = run.of(CaseStart)
    assert [s.case_id for s in starts] == planned
    assert [s.index for s in starts] == list(range(len(planned)))
    # Every CaseStart is followed by exactly one result or failure for that case.
    kinds = (BenchResult, Failure, Log, InputFile, CacheEvent)
    after = [
        m for i, m in enumerate(run.messages[1:], 1) if isinstance(run.messages[i - 1], CaseStart)
    ]
    assert after and all(isinstance(m, kinds) for m in after)


def test_import_error_does_not_stop_discovery(bench_runs: tuple[Any, Any]) -> None:
    run, _ = bench_runs
    imports = [f for f in run.of(Failure) if f.phase == "import"]
    assert len(imports) == 1
    assert imports[0].case_id is None
    assert imports[0].error_type == "ImportError"
    assert "broken on purpose" in imports[0].message
    assert "broken_kernels.py" in imports[0].message
    results = run.by_case(BenchResult)
    assert SCALE in results
    assert "fxmod/add[shape=16]" in results  # imported by module name from project_root
    done = run.of(Done)[0]
    assert done.ok is False


def test_correct_kernel_has_speedup_and_work(bench_runs: tuple[Any, Any]) -> None:
    run, _ = bench_runs
    result = run.by_case(BenchResult)[SCALE]
    assert result.check is not None and result.check.passed
    assert result.reference is not None
    assert result.reference.speedup is not None and result.reference.speedup > 0
    assert result.timer == "wall"
    assert 3 <= result.stats.n <= 20
    assert len(result.samples) == result.stats.n
    assert result.stats.stop_reason in ("precision", "max_time", "max_runs")
    assert result.work.source == "declared"
    assert result.work.bytes == 2 * 64 * 64 * 4
    assert result.throughput.gbps == pytest.approx(result.work.bytes / result.stats.median / 1e9)
    assert result.roofline.bound == "unknown"  # no peaks for a CPU
    assert result.seed == 0
    assert result.params == {"shape": "64x64", "dtype": "float32"}
    assert result.phases.trace_s is not None and result.phases.compile_s is not None


def test_wrong_kernel_fails_without_speedup(bench_runs: tuple[Any, Any]) -> None:
    run, _ = bench_runs
    result = run.by_case(BenchResult)[WRONG]
    assert result.check is not None
    assert not result.check.passed
    assert result.check.rel_l2_err is not None and result.check.tol is not None
    assert result.check.rel_l2_err > result.check.tol
    assert result.check.rel_l2_err == pytest.approx(0.25, rel=1e-3)
    assert result.reference is None  # a wrong kernel never shows a speedup
    assert result.stats.n >= 1  # but it is still timed
    assert run.of(Done)[0].counts["failed"] >= 1


def test_failures_carry_phase_and_run_goes_on(bench_runs: tuple[Any, Any]) -> None:
    run, _ = bench_runs
    failures = run.by_case(Failure)
    assert failures["fx/bad_inputs[n=1]"].phase == "inputs"
    assert failures["fx/bad_inputs[n=1]"].error_type == "ValueError"
    assert "inputs exploded" in (failures["fx/bad_inputs[n=1]"].traceback or "")
    assert failures["fx/bad_kernel"].phase == "compile"
    assert failures["fx/bad_kernel"].error_type == "RuntimeError"
    assert failures["fx/exits"].error_type == "SystemExit"
    assert failures["fx/skips"].status == "skipped"
    assert all(len(f.traceback or "") <= 4100 for f in failures.values())
    results = run.by_case(BenchResult)
    assert {"fx/static[causal=true]", "fx/static[causal=false]", "fx/noref"} <= set(results)
    assert results["fx/noref"].check is None
    counts = run.of(Done)[0].counts
    assert counts["cases"] == len(run.of(CaseStart))
    assert counts["skipped"] == 1
    assert counts["passed"] + counts["failed"] + counts["skipped"] == counts["cases"]


def test_data_is_fetched_and_reported(bench_runs: tuple[Any, Any]) -> None:
    run, _ = bench_runs
    result = run.by_case(BenchResult)["fx/data"]
    assert result.check is not None and result.check.passed
    used = [m for m in run.of(InputFile) if m.name == "fxdata"]
    assert used and used[0].case_id == "fx/data"
    assert Path(used[0].path).read_bytes() == DATA


def test_inputs_are_seeded_and_stable(bench_runs: tuple[Any, Any]) -> None:
    first, second = bench_runs
    pattern = re.compile(r"^INPUT (\S+) (\S+)$", re.MULTILINE)
    sums_first = dict(pattern.findall(first.stderr))
    sums_second = dict(pattern.findall(second.stderr))
    assert SCALE in sums_first
    assert sums_first == sums_second
    assert all(float(v) > 0 for v in sums_first.values())  # never all zeros
    assert sums_first[SCALE] != sums_first[WRONG]  # same shape, different case, other key
    plans = [[c.case_id for c in run.of(Plan)[0].cases] for run in (first, second)]
    assert plans[0] == plans[1]  # case ids are stable across runs


def test_persistent_cache_hits_in_second_process(bench_runs: tuple[Any, Any]) -> None:
    first, second = bench_runs
    a = first.by_case(BenchResult)[SCALE].phases
    b = second.by_case(BenchResult)[SCALE].phases
    assert a.cache_miss_count and a.cache_miss_count > 0
    assert a.cache_hit is False
    assert b.cache_hit_count and b.cache_hit_count > 0
    assert b.cache_hit is True


def test_cache_events_are_messages_of_their_own(bench_runs: tuple[Any, Any]) -> None:
    first, second = bench_runs
    missed = {e.module for e in first.of(CacheEvent) if e.event == "miss" and e.case_id == SCALE}
    hit = {e.module for e in second.of(CacheEvent) if e.event == "hit" and e.case_id == SCALE}
    assert "jit_scale" in missed and "jit_scale" in hit
    assert all(e.code and e.reason for e in first.of(CacheEvent) if e.event == "miss")
    # Never the `log` lines of runners before protocol 1.9.
    assert not [m for m in first.of(Log) + second.of(Log) if m.message.startswith("jax_cache")]


def test_cold_flag_recorded(bench_runs: tuple[Any, Any]) -> None:
    first, second = bench_runs
    assert first.by_case(BenchResult)[SCALE].cold is False
    assert second.by_case(BenchResult)[SCALE].cold is True


def test_cache_dir_is_private(tmp_path: Path) -> None:
    from tile_runner._compile import enable_persistent_cache

    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    reason = enable_persistent_cache(str(shared))
    assert reason is not None and "writable by group or others" in reason
    assert "chmod 700" in reason


def test_list_with_filters_and_overrides(runner: Any) -> None:
    run = runner(
        {
            "command": "list",
            "paths": [str(GOOD)],
            "plugins": [],
            "filters": ["fx/scale", "static[causal=t*"],
            "axes": {"shape": ["128x256", "7"]},
        }
    )
    assert [type(m).__name__ for m in run.messages if not isinstance(m, Log)] == [
        "Hello",
        "Plan",
        "Done",
    ]
    ids = [c.case_id for c in run.of(Plan)[0].cases]
    assert ids == [
        "fx/scale[shape=128x256,dtype=float32]",
        "fx/scale[shape=7,dtype=float32]",
        "fx/static[causal=true]",
    ]
    assert run.of(Done)[0].ok is True
    assert run.returncode == 0


def test_an_axis_no_kernel_has_plans_nothing(runner: Any) -> None:
    run = runner(
        {
            "command": "list",
            "paths": [str(GOOD)],
            "plugins": [],
            "filters": ["fx/scale"],
            "axes": {"shape": ["7"], "nope": ["1"]},
        }
    )
    assert run.of(Plan)[0].cases == []
    (failure,) = run.of(Failure)
    assert failure.error_type == "UnknownAxis" and "`nope`" in failure.message
    assert "fx/scale (shape, dtype)" in failure.message
    assert run.of(Done)[0].ok is False


def test_bad_request_is_reported(runner: Any) -> None:
    run = runner({}, raw=b"this is not json")
    assert run.returncode == 2
    assert isinstance(run.messages[0], Hello)
    failure = run.of(Failure)[0]
    assert failure.phase == "request"
    assert run.of(Done)[0].ok is False


def test_sigterm_stops_the_runner_promptly(runner: Any) -> None:
    request = {
        "type": "run_request",
        "command": "bench",
        "paths": [str(FIXTURES / "sleeper_kernels.py")],
        "plugins": [],
        "progress": True,
    }
    with subprocess.Popen(
        [sys.executable, "-m", "tile_runner"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=runner.env(),
    ) as proc:
        try:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(json.dumps(request).encode())
            proc.stdin.close()
            decoder = StreamDecoder()
            # Inputs are made ahead of the case's turn (before its `case_start`): the runner
            # says so in a progress message, and is then asleep in the input maker.
            started = False
            while not started:
                line = proc.stdout.readline()
                assert line, "runner ended before making the case's inputs"
                started = any(
                    isinstance(e, Progress) and e.step == "inputs" for e in decoder.feed(line)
                )
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=60) == -signal.SIGTERM
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


@pytest.mark.gpu
def test_runner_on_gpu_uses_cupti_and_builtin_peaks(runner: Any, tmp_path: Path) -> None:
    # An empty cache dir: a calibration cached by `tile device --calibrate` would win otherwise.
    env = runner.env(XLA_PYTHON_CLIENT_MEM_FRACTION="0.2", TILE_CACHE_DIR=str(tmp_path))
    del env["JAX_PLATFORMS"]
    run = runner(
        {
            "command": "bench",
            "paths": [str(GOOD)],
            "plugins": [],
            "kernels": ["fx/softmax"],
            "bench": {"max_time": 0.2},
        },
        env=env,
    )
    hello = run.of(Hello)[0]
    assert hello.backend == "gpu" and "cupti" in hello.timers
    [result] = run.of(BenchResult)
    assert result.timer == "cupti"
    assert result.check is not None and result.check.passed
    assert result.reference is not None and result.reference.speedup is not None
    if hello.devices[0].device_kind in ("NVIDIA H100 80GB HBM3", "NVIDIA H200"):
        assert result.roofline.peak_source is not None
        assert result.roofline.peak_source.startswith("builtin:")
        assert result.roofline.bound == "memory-bound"


def test_reference_is_timed_in_turns_with_the_kernel(runner: Any, tmp_path: Path) -> None:
    log = tmp_path / "turns.log"
    request = {
        "command": "bench",
        "paths": [str(FIXTURES / "turns_kernels.py")],
        "plugins": [],
        "bench": {"warmup_runs": 1, "min_runs": 40, "max_runs": 40, "timer": "wall"},
    }
    run = runner(request, env=runner.env(FX_TURN_LOG=str(log)))
    assert run.returncode == 0, run.stderr[-3000:]
    results = run.by_case(BenchResult)
    result = results["fxturn/logged[n=8]"]
    assert result.reference is not None and result.reference.interleaved is True
    assert len(result.reference.samples) == len(result.samples) == result.stats.n == 40
    # The log: the check (one call each), the warm-up (one each), then the timed calls.
    calls = log.read_text()
    assert calls[:4] == "krkr"
    turns = re.findall(r"(k+)(r+)", calls[4:])
    assert "".join(k + r for k, r in turns) == calls[4:]
    assert all(len(k) == len(r) for k, r in turns)  # each kernel turn matched by the reference
    assert sum(len(k) for k, _ in turns) == 40
    assert len(turns) >= 2  # taken turn about, not one after the other
    # A reference that fails while timed: the kernel is timed alone, with a warning.
    broken = results["fxturn/breaks[n=8]"]
    assert broken.reference is None and broken.stats.n == 40
    warnings = [m.message for m in run.of(Log) if m.case_id == "fxturn/breaks[n=8]"]
    assert any("the reference could not be timed" in w for w in warnings), warnings


def test_pin_cpu_pins_the_runner_before_jax_and_says_where(runner: Any) -> None:
    run = runner({"command": "list", "paths": [str(GOOD)], "plugins": [], "pin_cpu": True})
    [hello] = run.of(Hello)
    assert hello.pinned_cpu in os.sched_getaffinity(0)
    unpinned = runner({"command": "list", "paths": [str(GOOD)], "plugins": []})
    assert unpinned.of(Hello)[0].pinned_cpu is None


@pytest.mark.parametrize(("given", "seen"), [(None, "false"), ("true", "true")])
def test_runner_allocates_on_demand_unless_told(
    runner: Any, tmp_path: Path, given: str | None, seen: str
) -> None:
    # A kernel module reports, at import, what JAX's allocator setting is in the runner.
    out = tmp_path / "seen.txt"
    module = tmp_path / "env_probe_kernels.py"
    module.write_text(
        "import os, pathlib\n"
        "pathlib.Path(os.environ['PROBE_OUT']).write_text("
        "os.environ.get('XLA_PYTHON_CLIENT_PREALLOCATE', 'unset'))\n"
    )
    env = runner.env(PROBE_OUT=str(out))
    env.pop("XLA_PYTHON_CLIENT_PREALLOCATE", None)
    if given is not None:
        env["XLA_PYTHON_CLIENT_PREALLOCATE"] = given
    run = runner({"command": "list", "paths": [str(module)], "plugins": []}, env=env)
    assert run.of(Hello)
    assert out.read_text() == seen


def test_pin_to_one_core_in_a_real_process() -> None:
    code = (
        "import json, os; from tile_runner._main import pin_to_one_core; core = pin_to_one_core(1);"
        "print(json.dumps([core, sorted(os.sched_getaffinity(0)), os.environ['XLA_FLAGS']]))"
    )
    env = {**os.environ, "XLA_FLAGS": "--xla_cpu_enable_fast_math=false"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    core, affinity, flags = json.loads(done.stdout)
    cores = sorted(os.sched_getaffinity(0))
    # Shard 1 takes the second core from the end, so two local shards do not share one.
    assert core == cores[-1 - 1 % len(cores)]
    assert affinity == [core]
    assert flags.split() == [
        "--xla_cpu_enable_fast_math=false",
        "--xla_cpu_multi_thread_eigen=false",
        "intra_op_parallelism_threads=1",
    ]


def test_progress_names_each_step_of_each_case_when_asked(runner: Any, tmp_path: Path) -> None:
    request = {
        **_bench_request(tmp_path / "jaxcache", {}, cold=False),
        "paths": [str(GOOD)],
        "modules": [],
        "kernels": ["fx/scale"],
        "cache_explain": False,
        "progress": True,
    }
    run = runner(request)
    steps: dict[str, list[str]] = {}
    current: str | None = None
    for message in run.messages:
        if isinstance(message, CaseStart):
            current = message.case_id
        elif isinstance(message, Progress):
            # Inputs and compiles are made ahead of a case's turn; its check and samples are
            # taken in its turn, never during another case's.
            if message.step in ("check", "sample"):
                assert message.case_id == current
            steps.setdefault(message.case_id, []).append(message.step)
        elif isinstance(message, (BenchResult, Failure)):
            current = None
    assert steps == {SCALE: ["inputs", "compile", "check", "sample"]}, run.stderr[-3000:]
    assert run.by_case(BenchResult)[SCALE].check.passed
