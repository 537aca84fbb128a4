"""`tile tune`'s schedule: each rung's sampling, when the finalists are measured, and how long
a tune should take (so that `--budget` can shorten the rungs to fit)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import msgspec

import tile_protocol as tp
from tile_harness._errors import CliError, ExitCode
from tile_harness._requests import bench_settings
from tile_harness.tune._live import keeps_runner
from tile_harness.tune._pick import kept_count

if TYPE_CHECKING:
    from tile_config import ResolvedConfig

__all__ = ["budget_scale", "estimate_s", "final_now", "rung_settings"]

_RUNNER_START_S = 3.0  # assumed for a runner when no earlier run says (JAX import and devices)
_UNIT_COMPILE_S = 0.45  # assumed compile of one configuration, on one thread
_UNIT_SERIAL_S = 0.05  # assumed check and bookkeeping of one configuration
_COMPILE_THREADS = 16  # the runner's compile pool at most (tile_runner._ahead)


def _unit_overhead_s() -> float:
    """Assumed seconds a configuration adds besides sampling: the runner compiles a rung in a
    pool of a thread per core (16 at most); 216 configurations cost ~17 s on 16 cores."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return _UNIT_SERIAL_S + _UNIT_COMPILE_S / max(1, min(_COMPILE_THREADS, cores or 1))


def final_now(counts: Iterable[int], eta: int) -> bool:
    """True when no case has more than `eta` configurations left: time to measure them fully.
    Another rung would keep two of three (`kept_count`) at the price of timing every survivor
    again (on an H100, rung 2 of tile-std's row kernels took 30 units, a runner start and their
    reload, to keep 24), where the full measurement of one more finalist costs a few ms."""
    return all(n <= eta for n in counts)


def rung_settings(resolved: ResolvedConfig, rung: int, scale: float) -> tp.BenchSettings:
    """Rung `rung`'s sampling: eta^rung times the first rung's, scaled to fit a budget; the
    rest (timer, cold, precision, `[machine] l2_bytes`) as `tile bench` samples."""
    t, b = resolved.config.tune, resolved.config.bench
    grow = t.eta**rung
    return msgspec.structs.replace(
        bench_settings(resolved.config),
        warmup_runs=min(b.warmup_runs, 1),
        min_runs=t.min_runs * grow,
        max_runs=max(t.min_runs * grow, min(b.max_runs, t.min_runs * grow * 4)),
        max_time=max(0.005, t.max_time * grow * scale),
        batch=max(1, min(b.batch, t.min_runs)),
        rounds=1,  # a rung is one pass; the finalists are timed as `tile bench` would
    )


def estimate_s(resolved: ResolvedConfig, counts: Sequence[int], scale: float = 1.0) -> float:
    """Wall seconds a tune of cases with `counts` allowed configurations should take."""
    t, b = resolved.config.tune, resolved.config.bench
    keeps = keeps_runner(resolved)
    total, alive, rung = 0.0, list(counts), 0
    while rung < t.rungs and not final_now(alive, t.eta):
        max_time = rung_settings(resolved, rung, scale).max_time
        total += _rung_s(rung, max_time, sum(alive), keeps=keeps)
        alive = [kept_count(n, t.eta) for n in alive]
        rung += 1
    return total + _rung_s(rung, b.max_time, sum(alive), keeps=keeps)


def _rung_s(rung: int, max_time: float, units: int, *, keeps: bool) -> float:
    """One rung: the first starts a runner and compiles each configuration; a later one, timed
    by the runner that kept them (`_live`), only makes inputs and samples; without it, a
    later rung starts a runner and reloads each configuration as the first did."""
    if rung == 0 or not keeps:
        return _RUNNER_START_S + (_unit_overhead_s() + max_time) * units
    return (_UNIT_SERIAL_S + max_time) * units


def budget_scale(resolved: ResolvedConfig, counts: Sequence[int], budget: float | None) -> float:
    """How much shorter the rungs' sampling must be to fit `budget` (1.0: not at all)."""
    if budget is None or estimate_s(resolved, counts) <= budget:
        return 1.0
    low, high = 0.0, 1.0
    for _ in range(30):  # bisection: estimate_s grows with the scale
        mid = (low + high) / 2
        low, high = (mid, high) if estimate_s(resolved, counts, mid) <= budget else (low, mid)
    if low <= 0.05:
        raise CliError(
            f"--budget {budget:g} s is too short: even minimal sampling needs about "
            f"{estimate_s(resolved, counts, 0.05):.0f} s for {sum(counts)} configurations",
            hint="raise --budget, or tune fewer cases (`-k`, `--kernel`) or fewer tunable values",
            code=ExitCode.USAGE,
        )
    return low
