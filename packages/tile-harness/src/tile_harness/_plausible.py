"""Numbers that cannot be: a case faster than a roof of its machine, a calibration faster
than a peak it should sit under.

A rate above 100% of a roof is not a fast kernel but a wrong number: the work counted for a
call, the peak, or the device the peak was measured on. `beyond_roof` is the one rule, kept in
`tile_artifacts.check` so that summary.md and the HTML report mark the same cases; the
findings of report.json and the terminal's %peak cell apply it too (re-exported from here).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from tile_artifacts.check import MEASURED_SLACK, RoofName, beyond_roof, case_beyond_roof
from tile_harness._noticed import Noticed, RunFacts

if TYPE_CHECKING:
    import tile_artifacts as ta
    import tile_protocol as tp

__all__ = [
    "CPU_NO_PEAKS",
    "CPU_PEAKS_HINT",
    "MEASURED_SLACK",
    "beyond_roof",
    "calibration_excesses",
    "impossible_calibration",
    "impossible_rates",
]

CPU_NO_PEAKS: Final = (
    "tile gives a CPU no roofline peaks, since its caches, not one memory roof, decide how "
    "fast a kernel moves data (one measured figure would put small cases far above 100%)"
)
"""Why %peak and bound are empty on a CPU (`tile device --calibrate` refuses there too)."""
CPU_PEAKS_HINT: Final = (
    "to see them anyway, set `[machine] peak_bandwidth_gbps` and `peak_tflops` by hand"
)


@dataclass(frozen=True)
class _Roof:
    name: RoofName
    unit: str
    work: str
    key: str


_ROOFS: Final = (
    _Roof("bandwidth", "GB/s", "bytes", "peak_bandwidth_gbps"),
    _Roof("compute", "TFLOP/s", "flops", "peak_tflops"),
)
_FROM: Final = {"config": "`[machine]`", "calibrated": "a calibration", "builtin": "built-in"}


@dataclass(frozen=True)
class _Over:
    """One case past one roof: its rate, % of the roof, the least % its CI allows."""

    case: ta.CaseRecord
    rate: float
    pct: float
    least: float

    @property
    def peak(self) -> float:
        return self.rate * 100.0 / self.pct


def _over(case: ta.CaseRecord, roof: _Roof) -> _Over | None:
    bandwidth = roof.name == "bandwidth"
    pct = case.roofline.pct_peak_bw if bandwidth else case.roofline.pct_peak_flops
    rate = case.throughput.gbps if bandwidth else case.throughput.tflops
    least = case_beyond_roof(case, roof.name)
    return None if pct is None or not rate or least is None else _Over(case, rate, pct, least)


def _config_keys(roof: _Roof, peaks: Sequence[float], x: RunFacts) -> list[str]:
    """The `[machine]` keys that set these peaks, each with where it was set."""
    if roof.name == "bandwidth":
        keys = [roof.key]
    else:
        declared = x.report.device.peaks.tflops
        keys = [f"{roof.key}.{k}" for k, v in declared.items()
                if any(abs(v - p) <= 1e-9 * p for p in peaks)] or [roof.key]  # fmt: skip
    found: list[str] = []
    for key in keys:
        origin = x.peak_origins.get(f"machine.{key}")
        found.append(f"`[machine] {key}`" + (f" ({origin})" if origin else ""))
    return found


def _causes(roof: _Roof, source: str | None, over: Sequence[_Over], x: RunFacts) -> tuple[str, str]:
    """(the likely causes, most likely first; what to do), worded for where the peak came from."""
    kernels = ", ".join(
        f'`@tile.kernel("{k}")`' for k in dict.fromkeys(o.case.kernel for o in over)
    )
    estimated = any(o.case.work.source == "cost_analysis" for o in over)
    work = (f"(1) the work counted for one call is too large: `{roof.work}=` of {kernels}"
            + (" (or XLA's cost analysis, where it declares none)" if estimated else "")
            + f" says more {roof.work} than one call does")  # fmt: skip
    calibration = f"`{x.calibration_file}`" if x.calibration_file else "this device's calibration"
    if source == "config":
        keys = ", ".join(_config_keys(roof, [o.peak for o in over], x))
        peak = f"(2) the peak is too low: {keys} is below what this device does"
        other = "(3) those numbers came from another device (its datasheet or calibration)"
        fix = f"then fix {keys}"
    elif source == "calibrated":
        peak = (f"(2) the calibration in {calibration} is too low (measured while the device "
                "was busy or slowed)")  # fmt: skip
        other = (f"(3) {calibration} was measured on another device that shares tile's cache "
                 "directory (`TILE_CACHE_DIR`)")  # fmt: skip
        fix = f"then rerun `tile device --calibrate` on this device, or set `[machine] {roof.key}`"
    else:
        peak = "(2) the built-in table's datasheet figure does not fit this device"
        other = "(3) this device kind matched the row of another device in the built-in table"
        fix = f"then set this device's own figure in `[machine] {roof.key}`"
    action = f"check `{roof.work}=` of {kernels} against what one call does; {fix}"
    return f"{work}; {peak}; {other}", action


def _cached(case: ta.CaseRecord, l2_bytes: int) -> bool:
    """Whether a warm sample of the case could read all its data from the last-level cache:
    the bandwidth roof is DRAM's, and a call whose bytes fit in the L2 beats it from there."""
    moved = case.work.bytes
    return not case.cold and moved is not None and moved <= l2_bytes


def _from_cache(over: Sequence[_Over], l2_bytes: int) -> Noticed:
    """The finding for warm cases above the DRAM roof whose data fits in the L2: not a wrong
    number but a rate of another memory, which %peak of DRAM misreads."""
    n = len(over)
    evidence = [
        f"{o.case.case_id}: {o.rate:.4g} GB/s, {o.pct:.0f}% of the {o.peak:.4g} GB/s roof; "
        f"one call moves {(o.case.work.bytes or 0) / 1e6:.3g} MB"
        for o in over
    ]
    return Noticed(
        "medium",
        "plausibility",
        f"{n} case{'s' * (n != 1)} above 100% of the bandwidth roof with data that fits in the "
        f"{l2_bytes / 2**20:.0f} MiB L2",
        evidence,
        "the bandwidth roof is DRAM's; these calls move less than the device's L2 holds and "
        "were timed warm (each sample after the last), so their data came from the cache. "
        "The rates say how fast the kernel runs with its data cached, not how near DRAM's roof "
        "it is",
        "time these cases with `--cold` (the cache flushed before each sample) for rates "
        "against DRAM, or bench a shape larger than the L2",
        "medium",
    )


def impossible_rates(x: RunFacts) -> Iterable[Noticed]:
    """One finding per roof that some case went past by more than its CI: which cases, how
    far, the likely causes in order and the key or file to fix. Warm cases past the bandwidth
    roof whose data fits in the L2 get a finding of their own: the cache explains them."""
    l2 = x.report.device.l2_bytes
    for roof in _ROOFS:
        over = [o for c in x.report.cases if (o := _over(c, roof)) is not None]
        if roof.name == "bandwidth" and l2 is not None:
            cached: list[_Over] = []
            rest: list[_Over] = []
            for o in over:
                (cached if _cached(o.case, l2) else rest).append(o)
            if cached:
                yield _from_cache(cached, l2)
            over = rest
        if not over:
            continue
        source = over[0].case.roofline.peak_source
        peaks = ", ".join(dict.fromkeys(f"{o.peak:.4g}" for o in over))
        evidence = [
            f"{o.case.case_id}: {o.rate:.4g} {roof.unit}, {o.pct:.0f}% of the {o.peak:.4g} "
            f"{roof.unit} roof (at least {o.least:.0f}% at the slow end of its 95% CI)"
            for o in over
        ]
        causes, action = _causes(roof, source, over, x)
        n = len(over)
        yield Noticed(
            "high",
            "plausibility",
            f"{n} case{'s' * (n != 1)} above 100% of the {roof.name} roof "
            f"({peaks} {roof.unit}, {_FROM.get(source or '', 'unknown')} peak)",
            evidence,
            f"nothing runs faster than its machine's {roof.name} roof: these rates are wrong, "
            f"not fast. Likely causes, most likely first: {causes}",
            action,
            "high",
        )


def calibration_excesses(
    calibration: tp.Calibration,
    bandwidth_gbps: float | None,
    tflops: Mapping[str, float],
    where: str,
) -> list[str]:
    """What a calibration measured above the peaks `where` gives (a datasheet, `[machine]`):
    the device's own copy or matmul cannot beat its roof."""
    found: list[str] = []
    if bandwidth_gbps and (pct := 100.0 * calibration.copy_gbps / bandwidth_gbps) > 100.0:
        found.append(f"its copy ran at {calibration.copy_gbps:.4g} GB/s, {pct:.0f}% of the "
                     f"{bandwidth_gbps:.4g} GB/s bandwidth roof of {where}")  # fmt: skip
    dtype = calibration.matmul_dtype
    peak = tflops.get(dtype)
    if peak and (pct := 100.0 * calibration.matmul_tflops / peak) > 100.0:
        found.append(f"its {dtype} matmul ran at {calibration.matmul_tflops:.4g} TFLOP/s, "
                     f"{pct:.0f}% of the {peak:.4g} TFLOP/s {dtype} roof of {where}")  # fmt: skip
    return found


def impossible_calibration(x: RunFacts) -> Iterable[Noticed]:
    """A cached calibration of this device that beats the peaks `[machine]` declares."""
    cal, peaks = x.calibration, x.report.device.peaks
    if cal is None or peaks.source != "config" or x.report.device.backend == "cpu":
        return
    origin = x.peak_origins.get("machine.peak_bandwidth_gbps")
    where = "`[machine]`" + (f" ({origin})" if origin else "")
    found = calibration_excesses(cal, peaks.bandwidth_gbps, peaks.tflops, where)
    if not found:
        return
    file = f"`{x.calibration_file}`" if x.calibration_file else "this device's calibration"
    yield Noticed(
        "high",
        "plausibility",
        "this device's calibration is faster than the peaks `[machine]` declares",
        [f"{file}: {line}" for line in found],
        "a device's own copy and matmul cannot beat its roofs: either a `[machine]` peak is "
        "too low, or the calibration was measured on another device (a shared "
        "`TILE_CACHE_DIR`) or with a timer that missed work",
        f"fix the `[machine]` peaks in {where}, or rerun `tile device --calibrate` on this "
        f"device to replace {file}",
        "high",
    )
