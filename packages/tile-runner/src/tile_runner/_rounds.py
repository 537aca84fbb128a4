"""A bench case timed in rounds, and the BenchResult its rounds add up to."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

import tile_stats
from tile_protocol import (
    Accounting,
    BenchResult,
    BenchSettings,
    Check,
    ConfigInfo,
    KernelTime,
    NextRung,
    PriorSamples,
    Reference,
    Stats,
    Work,
)
from tile_runner._api import Case, KernelDef, registry
from tile_runner._breakdown import KernelLog, kernel_times, unseen_copies_note
from tile_runner._clock import Stopwatch
from tile_runner._compile import Compiled, bind_static, cost_estimate, memory_estimate
from tile_runner._context import CaseContext, Outcome
from tile_runner._measure import Timing, time_compiled
from tile_runner._ops import op_info
from tile_runner._rest import GPU_REST, runs_hot
from tile_runner._roofline import roofline, throughput
from tile_runner._stats import summarize, widen_to_rounds

__all__ = [
    "BenchRounds",
    "case_work",
    "round_settings",
    "send_bench",
    "time_round",
    "wait_rung",
    "wait_turn",
]


@dataclass
class BenchRounds:
    """A bench case timed in rounds (one, by default): compiled, checked and costed once,
    then timed once a round.

    Each round after the first makes the inputs anew (same seed, same values, new buffers).
    On a shared CPU, 8 rounds that reused their buffers left the process-to-process spread of
    a case's time where one long measurement had it; with fresh buffers it shrank (kernel /
    reference ratio: SD 6.2% -> 3.7%; docs/measurement.md, "Runs in rounds"). `compare`
    judges the scatter between rounds.
    """

    kernel: KernelDef
    case: Case
    rid: str  # the id results carry: the case's, or its unit's under `tile tune`
    config: ConfigInfo | None
    compiled: Compiled
    reference: Any | None  # the compiled reference timed with the kernel
    check: Check | None
    work: Work
    watch: Stopwatch
    timings: list[Timing] = field(default_factory=list[Timing])


_TURN_POLL_S = 0.002


def wait_turn(pace_dir: str, round_: int) -> None:
    """Say round `round_` is ready and wait for the CLI's go (`RunRequest.pace`).

    Files, not a pipe: the request arrives on stdin, which srun closes at its end, and a file
    works wherever the CLI and the runner share a directory. The wait is a poll every 2 ms,
    short beside a round, and only while the other runner takes its turn.
    """
    pace = Path(pace_dir)
    (pace / f"ready-{round_}").touch()
    go = pace / f"go-{round_}"
    while not go.exists():
        time.sleep(_TURN_POLL_S)


def wait_rung(rungs_dir: str, k: int) -> NextRung:
    """The CLI's word for later rung `k` of a tune (`RunRequest.rungs`): `rung-k.json` in
    `rungs_dir`, polled every 2 ms (the CLI writes it as soon as it has pruned). A runner whose
    parent went away takes that as the end (no units) rather than wait for ever."""
    path, parent = Path(rungs_dir) / f"rung-{k}.json", os.getppid()
    while not path.exists():
        if os.getppid() != parent:
            return NextRung()
        time.sleep(_TURN_POLL_S)
    return msgspec.json.decode(path.read_bytes(), type=NextRung)


def round_settings(bench: BenchSettings) -> BenchSettings:
    """One round's share of the sampling budget (at least 5 samples a round when allowed)."""
    return bench.divided(max(1, bench.rounds))


def time_round(ctx: CaseContext, rounds: BenchRounds, args: tuple[Any, ...]) -> None:
    """Time the kernel (and its reference, interleaved) once with `args`; keep the timing."""
    kernel = rounds.kernel
    ref_call = None
    if rounds.reference is not None and kernel.reference is not None:
        ref_call = (rounds.reference, bind_static(kernel.reference, args)[1])
    settings = round_settings(ctx.bench) if ctx.bench.rounds > 1 else ctx.bench
    # With a reference, both are timed turn about (see time_compiled): a comparison of two runs
    # can then judge kernel/reference ratios, which machine speed swings do not move.
    rounds.watch.mark()
    timing = time_compiled(
        rounds.compiled.compiled,
        bind_static(kernel.fn, args)[1],
        settings,
        timer=ctx.timer,
        warn=lambda message: ctx.warn(message, rounds.rid),
        reference=ref_call,
    )
    _cool_down(ctx, rounds, timing)
    rounds.watch.add("warmup", timing.warmup_s)
    rounds.watch.add("sample", timing.sample_s)
    rounds.watch.add("reference_sample", timing.reference_sample_s)
    rounds.watch.mark()
    if ref_call is not None and timing.reference is None:
        rounds.reference = None  # it failed while timed (warned): no round has it from now on
    rounds.timings.append(timing)


def _cool_down(ctx: CaseContext, rounds: BenchRounds, timing: Timing) -> None:
    """Tell the GPU's rest that this sampling ran cool, when the faster of the kernel and its
    reference stayed below the flops that heat the device (`tile_runner._rest`)."""
    medians = [timing.stats.median]
    if timing.reference is not None:
        medians.append(timing.reference.stats.median)
    if not runs_hot(rounds.work, min(medians), ctx.peaks, _dtype(rounds.case)):
        GPU_REST.cooled()


def _dtype(case: Case) -> str | None:
    """The case's dtype axis, the one its flops peak is read for (None: it has none)."""
    dtype = case.get("dtype")
    return dtype if isinstance(dtype, str) else None


def send_bench(ctx: CaseContext, rounds: BenchRounds) -> Outcome:
    """The BenchResult of all rounds' samples, in the order they were taken, after what the
    run's earlier runner processes measured of the case (`RunRequest.prior`)."""
    case, timings, last = rounds.case, rounds.timings, rounds.timings[-1]
    prior = ctx.prior.get(rounds.rid, [])
    own = [x for t in timings for x in t.samples]
    samples = [x for p in prior for x in p.samples] + own
    # One round's statistics are already the whole case's (the bootstrap is seeded, so they
    # would come out the same): summarizing again cost about 0.6 ms a case, twice.
    alone = len(timings) == 1 and not prior
    stats = last.stats if alone else summarize(samples, last.stats.stop_reason)
    earlier = _prior_groups(prior)
    medians = [tile_stats.median(g) for g in earlier] + [t.stats.median for t in timings]
    stats = widen_to_rounds(stats, medians)
    reference = _reference(prior, timings, stats, alone=alone)
    rounded = len(timings) > 1 or any(p.round_sizes for p in prior)
    ctx.send(
        BenchResult(
            case_id=rounds.rid,
            kernel=case.kernel,
            params=case.str_params,
            timer=last.timer,
            cold=last.cold,
            samples=samples,
            stats=stats,
            phases=rounds.compiled.phases,
            work=rounds.work,
            throughput=throughput(rounds.work, stats.median),
            roofline=roofline(rounds.work, stats.median, ctx.peaks, _dtype(case)),
            reference=reference,
            check=rounds.check,
            seed=ctx.seed,
            captured=case.captured,
            peak_memory_bytes=memory_estimate(rounds.compiled.compiled),
            round_sizes=[len(g) for g in earlier] + [len(t.samples) for t in timings]
            if rounded
            else None,
            process_sizes=[len(p.samples) for p in prior] + [len(own)] if prior else None,
            accounting=_accounting(rounds.watch.accounting(), prior),
            config=rounds.config,
            kernels=_breakdown(ctx, rounds, len(own), stats.median),
            op=op_info(rounds.kernel, registry().values()),
        )
    )
    return "passed" if rounds.check is None or rounds.check.passed else "failed"


def _accounting(own: Accounting, prior: list[PriorSamples]) -> Accounting:
    """This process's accounting of the case with the earlier processes' added, part by part."""
    earlier = [p.accounting for p in prior if p.accounting is not None]
    if not earlier:
        return own
    names = Accounting.__struct_fields__
    return Accounting(**{n: getattr(own, n) + sum(getattr(a, n) for a in earlier) for n in names})


def _prior_groups(prior: list[PriorSamples]) -> list[list[float]]:
    """The earlier processes' samples cut into their rounds (a process without rounds is one
    group), in the order they were taken; this process's rounds are its timings."""
    groups: list[list[float]] = []
    for p in prior:
        start = 0
        for size in p.round_sizes or [len(p.samples)]:
            groups.append(p.samples[start : start + size])
            start += size
    return groups


def _reference(
    prior: list[PriorSamples], timings: list[Timing], stats: Stats, *, alone: bool
) -> Reference | None:
    """The interleaved reference of every round and process together; None where one of them
    had none (a reference that failed once is dropped)."""
    if any(t.reference is None for t in timings) or any(p.reference is None for p in prior):
        return None
    samples = [x for p in prior for x in p.reference or []]
    samples += [x for t in timings if t.reference is not None for x in t.reference.samples]
    last = timings[-1].reference
    ref_stats = (
        last.stats
        if alone and last is not None
        else summarize(samples, timings[-1].stats.stop_reason)
    )
    return Reference(
        samples=samples,
        stats=ref_stats,
        speedup=ref_stats.median / stats.median if stats.median > 0 else None,
        interleaved=True,
    )


def _breakdown(
    ctx: CaseContext, rounds: BenchRounds, calls: int, median: float
) -> list[KernelTime] | None:
    """Every round's per-kernel times together, as the case's breakdown (cupti only); warns
    when the call also copies outside any kernel, which the cupti timer cannot see."""
    logs = [t.kernels for t in rounds.timings]
    if not logs or any(log is None for log in logs):
        return None
    merged = KernelLog()
    for log in logs:
        if log is not None:
            merged.extend(log)
    try:
        hlo = str(rounds.compiled.compiled.as_text())
    except Exception:  # no HLO text for this executable: the names stay, the origins go
        hlo = None
    note = unseen_copies_note(hlo, list(merged.times))
    if note is not None:
        ctx.warn(note, rounds.rid)
    return kernel_times(merged, calls, median, hlo)


def case_work(kernel: KernelDef, case: Case, compiled: Any) -> Work:
    """Declared bytes/flops first; XLA's cost analysis fills what was not declared."""
    declared_bytes = None if kernel.bytes is None else float(kernel.bytes(case))
    declared_flops = None if kernel.flops is None else float(kernel.flops(case))
    if declared_bytes is not None and declared_flops is not None:
        return Work(bytes=declared_bytes, flops=declared_flops, source="declared")
    est_bytes, est_flops = cost_estimate(compiled)
    nbytes = declared_bytes if declared_bytes is not None else est_bytes
    flops = declared_flops if declared_flops is not None else est_flops
    if nbytes is None and flops is None:
        return Work()
    estimated = (declared_bytes is None and est_bytes is not None) or (
        declared_flops is None and est_flops is not None
    )
    return Work(bytes=nbytes, flops=flops, source="cost_analysis" if estimated else "declared")
