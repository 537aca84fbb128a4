"""How long a compute-bound case reads slow after a power-hungry one (the GPU's clock).

Times tile-std attention 4x32x1024 (non-causal) in batches of 10 calls with tile's CUPTI
sampler, once after the GPU sat idle and once right after std/matmul 8192^3 ran for a while,
with nvidia-smi's SM clock sampled every 20 ms beside it. Prints each batch's median and the
clock over time. `--grid` instead times the first calls of attention after each of several heats (matmul for
0.05-0.3 s) and rests (an idle GPU for 0-0.2 s): the rest a runner needs between a heavy case
and the next. `--heater KERNEL:NEEDLE` (repeatable) heats with other cases in the grid, e.g.
memory-bound ones, `--probe KERNEL:NEEDLE` times another case than attention; each heat's mean
power from NVML's energy counter is printed beside its row.
Usage: python3 benchmarks/gpu/clock_recovery.py [--heat-s 1.0] [--grid [--heater K:N]... [--probe K:N]]
"""

from __future__ import annotations

import argparse
import itertools
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from grad_truth import _program  # pyright: ignore[reportPrivateUsage]


class ClockLog:
    """(seconds since start, SM MHz) from nvidia-smi every 20 ms, in a reader thread."""

    def __init__(self, start: float) -> None:
        smi = shutil.which("nvidia-smi") or "nvidia-smi"
        cmd = [
            smi,
            "--query-gpu=clocks.sm,power.draw",
            "--format=csv,noheader,nounits",
            "-lms",
            "20",
        ]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        self.rows: list[tuple[float, float, float]] = []
        self.start = start
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            parts = [p.strip() for p in line.split(",")]
            try:
                self.rows.append(
                    (time.perf_counter() - self.start, float(parts[0]), float(parts[1]))
                )
            except (ValueError, IndexError):
                continue

    def between(self, a: float, b: float) -> tuple[float, float]:
        got = [(m, w) for t, m, w in self.rows if a <= t < b]
        if not got:
            return float("nan"), float("nan")
        return statistics.median(m for m, _ in got), statistics.median(w for _, w in got)

    def stop(self) -> None:
        self.proc.terminate()


def case(name: str, needle: str) -> Any:
    import tile_runner as tile

    for c in tile.cases(name, "bench"):
        if needle in c.id:
            return c
    raise SystemExit(f"no {name} case matches {needle}")


def _load_then_rest(
    mm: Any, mm_args: Any, heat: float, rest: float, *, probe: Any = None, energy: Any = None
) -> list[str]:
    """2 s idle, `heat` s of the matmul back to back, `rest` s idle; the heat's mean power
    from `energy()` (joules) and `probe()`'s readings at the heat's end and after the rest
    (none without them)."""
    from tile_runner._jaxapi import block_until_ready

    time.sleep(2.0)
    joules = energy() if energy else 0.0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < heat:
        block_until_ready(mm(*mm_args))
    seen = [f"~{(energy() - joules) / (time.perf_counter() - t0):.0f}W"] if energy and heat else []
    seen += [probe()] if probe else []
    time.sleep(rest)
    return [*seen, probe()] if probe else seen


def series(
    att: Any, att_args: Any, mm: Any, mm_args: Any, *, heat_s: float, watch_s: float
) -> None:
    """Attention's batch medians over `watch_s` after each plan, with nvidia-smi's clock."""
    from tile_runner._cupti import CuptiSampler

    start = time.perf_counter()
    clock = ClockLog(start)
    plans = [("idle", 0.0, 0.0), ("after matmul", heat_s, 0.0),
             ("after matmul, 0.2 s idle", heat_s, 0.2),
             ("after matmul, 1 s idle", heat_s, 1.0), ("idle again", 0.0, 0.0)]  # fmt: skip
    for label, heat, gap in plans:
        _load_then_rest(mm, mm_args, heat, gap)
        sampler = CuptiSampler(att, att_args, None)
        sampler.warmup(1)
        begin = time.perf_counter()
        rows: list[tuple[float, float]] = []
        while time.perf_counter() - begin < watch_s:
            rows.append((time.perf_counter() - begin, statistics.median(sampler.take(10))))
        sampler.close()
        print(f"\n{label} (heat {heat:.1f} s, gap {gap:.1f} s): attention 1024, batches of 10")
        edges = [0.0, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, watch_s]
        for a, b in itertools.pairwise(edges):
            meds = [m for t, m in rows if a <= t < b]
            if not meds:
                continue
            mhz, watt = clock.between(begin - start + a, begin - start + b)
            print(
                f"  {a:5.3f}-{b:5.3f} s  {len(meds):4d} batches  median {statistics.median(meds) * 1e6:8.2f} us"
                f"  SM {mhz:6.0f} MHz  {watt:5.0f} W"
            )
    clock.stop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--heat-s", type=float, default=1.0)
    ap.add_argument("--watch-s", type=float, default=2.0)
    ap.add_argument("--grid", action="store_true")
    ap.add_argument("--heater", action="append", default=[], metavar="KERNEL:NEEDLE")
    ap.add_argument("--probe", default="std/attention:1024x128,dtype=bfloat16,causal=false")
    args = ap.parse_args()
    import tile_std  # noqa: F401  # pyright: ignore[reportUnusedImport]  # registers std/*

    att, _, att_args = _named(args.probe)
    if args.grid:
        for heater in args.heater or ["std/matmul:8192"]:
            mm, _, mm_args = _named(heater)
            print(f"\n== heater {heater}, probe {args.probe}")
            grid(att, att_args, mm, mm_args, rests=(0.0, 0.05, 0.2) if args.heater else None)
    else:
        mm, _, mm_args = _named("std/matmul:8192")
        series(att, att_args, mm, mm_args, heat_s=args.heat_s, watch_s=args.watch_s)


def _named(spec: str) -> tuple[Any, Any, list[Any]]:
    """`KERNEL:NEEDLE`'s first bench case whose id holds NEEDLE, compiled (`_program`)."""
    name, _, needle = spec.partition(":")
    return _program(name, case(name, needle))


class Nvml:
    """NVML through ctypes: the SM clock and the clock event reasons of GPU 0 (None: no NVML)."""

    def __init__(self) -> None:
        import ctypes

        self.c = ctypes
        try:
            self.lib: Any = ctypes.CDLL("libnvidia-ml.so.1")
        except OSError:
            self.lib = None
            return
        self.lib.nvmlInit_v2()
        self.handle = ctypes.c_void_p()
        self.lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(self.handle))

    def read(self) -> str:
        if self.lib is None:
            return "-"
        mhz, reasons, mw = self.c.c_uint(), self.c.c_ulonglong(), self.c.c_uint()
        self.lib.nvmlDeviceGetClockInfo(self.handle, 1, self.c.byref(mhz))  # NVML_CLOCK_SM
        self.lib.nvmlDeviceGetCurrentClocksEventReasons(self.handle, self.c.byref(reasons))
        self.lib.nvmlDeviceGetPowerUsage(self.handle, self.c.byref(mw))
        return f"{mhz.value}MHz/{reasons.value:#x}/{mw.value // 1000}W"

    def energy_j(self) -> float:
        """GPU 0's energy counter since the driver loaded, joules (nan without NVML)."""
        if self.lib is None:
            return float("nan")
        mj = self.c.c_ulonglong()
        self.lib.nvmlDeviceGetTotalEnergyConsumption(self.handle, self.c.byref(mj))
        return mj.value / 1000.0


def grid(
    att: Any, att_args: Any, mm: Any, mm_args: Any, rests: tuple[float, ...] | None = None
) -> None:
    """The probe's first 10 calls, and calls 10-40, after each heat and rest; the steady median
    (after 2 s idle, calls 40-240 of a run) first. The heat's mean power (W) from the energy
    counter leads the NVML columns."""
    from tile_runner._cupti import CuptiSampler

    nvml = Nvml()
    seen: list[str] = []

    def run(heat: float, rest: float, calls: int) -> list[float]:
        seen[:] = _load_then_rest(mm, mm_args, heat, rest, probe=nvml.read, energy=nvml.energy_j)
        sampler = CuptiSampler(att, att_args, None)
        got = sampler.take(calls)
        sampler.close()
        return got

    steady = statistics.median(run(0.0, 0.0, 240)[40:])
    print(f"steady (calls 40-240 after 2 s idle): {steady * 1e6:.2f} us")
    print(f"{'heat s':>7}{'rest s':>7}{'calls 0-10':>12}{'10-40':>9}  (ratios to steady)"
          "  NVML SM clock/event reasons/power at the heat's end, after the rest")  # fmt: skip
    for heat in (0.05, 0.1, 0.2, 0.3):
        for rest in rests or (0.0, 0.025, 0.05, 0.1, 0.2):
            got = run(heat, rest, 40)
            a, b = statistics.median(got[:10]), statistics.median(got[10:])
            print(f"{heat:7.2f}{rest:7.3f}{a / steady:12.3f}{b / steady:9.3f}  {'  '.join(seen)}")


if __name__ == "__main__":
    main()
