"""One case in process: test, build and inspect commands, work sources, skips."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import tile_protocol as proto
import tile_runner as tile
from tile_protocol import BenchSettings, BuildResult, Failure, Inspect, Message
from tile_runner._api import Suite
from tile_runner._case import run_case
from tile_runner._context import CaseContext, Outcome
from tile_runner._rounds import BenchRounds

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module", autouse=True)
def _fixture_kernels() -> None:
    assert tile.discover(paths=[str(FIXTURES / "good_kernels.py")], plugins=[]) == []


def _context(command: str, sent: list[Message], bench: BenchSettings, **kw: Any) -> CaseContext:
    """A run's context on the CPU's wall timer, its messages into `sent`."""
    return CaseContext(
        command=command,
        seed=0,
        bench=bench,
        tolerances=kw.pop("tolerances", {}),
        timer="wall",
        peaks=None,
        send=sent.append,
        warn=lambda message, case_id: None,
        **kw,
    )


def _run(
    command: str, kernel: str, suite: Suite = "test", **kw: Any
) -> list[tuple[Message, Outcome | BenchRounds]]:
    sent: list[Message] = []
    ctx = _context(command, sent, BenchSettings(max_runs=3, max_time=0.05, warmup_runs=0), **kw)
    out: list[tuple[Message, Outcome | BenchRounds]] = []
    for case in tile.cases(kernel, suite, backend="cpu"):
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
    bf16 = next(
        m for m, _ in results if isinstance(m, proto.TestResult) and "bfloat16" in m.case_id
    )
    assert bf16.check.tol == 2e-2  # the kernel's own tolerance


def test_request_tolerance_overrides_kernel() -> None:
    results = _run("test", "fx/softmax", tolerances={"bfloat16": 1e-9})
    outcomes = {m.case_id: o for m, o in results if isinstance(m, proto.TestResult)}
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


def test_rounds_time_with_fresh_inputs_and_send_one_result() -> None:
    from tile_runner._case import next_round
    from tile_runner._rounds import round_settings

    settings = BenchSettings(min_runs=10, max_runs=1000, max_time=2.0, rounds=4)
    share = round_settings(settings)
    assert (share.min_runs, share.max_runs, share.max_time) == (5, 250, 0.5)
    assert round_settings(BenchSettings(min_runs=1, max_runs=8, rounds=4)).min_runs == 2
    sent: list[Message] = []
    ctx = _context("bench", sent, BenchSettings(max_runs=40, max_time=0.2, warmup_runs=0, rounds=3))
    case = tile.cases("fx/softmax", "bench", backend="cpu")[0]
    rounds = run_case(ctx, tile.get_kernel("fx/softmax"), case)
    assert isinstance(rounds, BenchRounds) and not sent  # nothing until the last round
    rounds = next_round(ctx, rounds, last=False)
    assert isinstance(rounds, BenchRounds) and not sent
    assert next_round(ctx, rounds, last=True) == "passed"
    [result] = sent
    assert isinstance(result, proto.BenchResult) and result.round_sizes is not None
    assert len(result.round_sizes) == 3 and sum(result.round_sizes) == result.stats.n
    assert all(n <= 40 // 3 for n in result.round_sizes)
    assert result.reference is not None and len(result.reference.samples) == result.stats.n


def test_the_ci_of_a_case_in_rounds_covers_how_far_its_rounds_landed_apart() -> None:
    from tile_runner._stats import summarize, widen_to_rounds

    samples = [1.0e-3 + i * 1e-9 for i in range(300)]  # a tight bootstrap CI around 1 ms
    stats = summarize(samples, "max_runs")
    assert stats.ci_low is not None and stats.ci_high is not None
    assert (stats.ci_high - stats.ci_low) / stats.median < 0.01
    wide = widen_to_rounds(stats, [0.9e-3, 1.0e-3, 1.1e-3])  # rounds 10% apart
    assert wide.ci_low is not None and wide.ci_high is not None
    assert wide.ci_low < 0.85e-3 and wide.ci_high > 1.15e-3  # t with 2 df: about ±25%
    assert wide.median == stats.median and wide.n == stats.n
    assert widen_to_rounds(stats, [0.9e-3, 1.1e-3]) == stats  # two rounds: left as it was


def test_a_later_process_puts_the_earlier_ones_samples_first_and_sums_over_all() -> None:
    """`RunRequest.prior`: the last runner process of `[bench] processes` sends each case's
    samples of every process, earlier ones first, its statistics over all of them."""
    case = tile.cases("fx/softmax", "bench", backend="cpu")[0]
    earlier = [
        proto.PriorSamples(samples=[5e-3] * 6, reference=[1e-3] * 6, round_sizes=[3, 3]),
        proto.PriorSamples(samples=[6e-3] * 4, reference=[2e-3] * 4,
                           accounting=proto.Accounting(compile_s=5.0, other_s=1.0, total_s=6.0)),
    ]  # fmt: skip
    sent: list[Message] = []
    bench = BenchSettings(max_runs=8, max_time=0.2, warmup_runs=0)
    ctx = _context("bench", sent, bench, prior={case.id: earlier})
    assert run_case(ctx, tile.get_kernel("fx/softmax"), case) == "passed"
    [result] = sent
    assert isinstance(result, proto.BenchResult) and result.process_sizes is not None
    own = result.process_sizes[-1]
    assert result.process_sizes == [6, 4, own] and result.stats.n == 10 + own
    assert result.samples[:10] == [5e-3] * 6 + [6e-3] * 4
    assert result.round_sizes == [3, 3, 4, own]  # a process without rounds is one group
    assert result.reference is not None and result.reference.samples[:10] == [1e-3] * 6 + [2e-3] * 4
    assert result.stats.max == 6e-3  # summarized again, over every process's samples
    acc = result.accounting  # the earlier process's time is in the case's accounting
    assert acc is not None and acc.compile_s >= 5.0 and 6.0 <= acc.total_s < 6.0 + 5.0
    assert proto.result_problem(result) is None


def test_one_process_s_share_of_the_budget() -> None:
    auto = BenchSettings(
        min_runs=10, max_runs=1000, max_time=2.0, target_precision=0.01, processes=0
    )
    assert auto.processes_on("cpu") == proto.AUTO_PROCESSES == 2 and auto.processes_on("gpu") == 1
    assert auto.share("gpu") is not auto and auto.share("gpu") == auto
    cpu = auto.share("cpu")
    assert (cpu.min_runs, cpu.max_runs, cpu.max_time) == (5, 500, 1.0)
    assert abs(cpu.target_precision - 0.01 * 2**0.5) < 1e-12
    three = BenchSettings(max_runs=4, processes=3).share("gpu")  # set: on any backend
    assert (three.max_runs, three.min_runs) == (1, 1)


def test_a_cpu_samples_to_its_own_target_where_one_is_sent() -> None:
    """`cpu_target_precision` is the target on a CPU alone, and `share` applies it once (a
    process's settings carry one target); without it every backend takes `target_precision`."""
    sent = BenchSettings(target_precision=0.01, cpu_target_precision=0.02)
    assert sent.share("gpu").target_precision == 0.01
    cpu = sent.share("cpu")
    assert (cpu.target_precision, cpu.cpu_target_precision) == (0.02, None)
    assert cpu.share("cpu").target_precision == 0.02  # shared again: the same target
    two = BenchSettings(cpu_target_precision=0.02, processes=0).share("cpu")  # sqrt(2) wider
    assert abs(two.target_precision - 0.02 * 2**0.5) < 1e-12
    assert BenchSettings(target_precision=0.005).share("cpu").target_precision == 0.005
    assert proto.AUTO_PRECISION == {"cpu": 0.02, None: 0.01}
    assert proto.precision_on(0.0, "cpu") == 0.02 and proto.precision_on(0.0, "gpu") == 0.01
    assert proto.precision_on(0.03, "cpu") == 0.03
