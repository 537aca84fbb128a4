"""`tile device`: backend, device kind, memory, L2, versions and peaks (optionally measured)."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

import msgspec
from rich.table import Table
from rich.text import Text

from tile_cli.terminal._ui import make_consoles
from tile_harness import (
    CPU_NO_PEAKS,
    CPU_PEAKS_HINT,
    CliError,
    ExitCode,
    Selection,
    ask,
    calibration_dir,
    calibration_excesses,
    resolve_config,
)
from tile_protocol.format import format_bytes

if TYPE_CHECKING:
    from rich.console import Console

    from tile_config import ResolvedConfig
    from tile_protocol import Calibration, DeviceReport, Hello, Peaks

__all__ = ["show_device"]


def show_device(*, calibrate: bool, as_json: bool, profile: str | None) -> int:
    """Ask a runner what it sees; with --calibrate, measure and cache the ceilings too."""
    out, err = make_consoles()
    resolved = resolve_config(profile, {})
    if calibrate:
        _check_calibration_cache(resolved)
    if calibrate and not as_json:
        err.print("calibrating: copy bandwidth and bf16 matmul (a few seconds)…", style="dim")
    answer, clean = ask("device", resolved, Selection(), calibrate=calibrate)
    report, hello = answer.device, answer.hello
    if report is None or hello is None or not clean:
        why = "; ".join(f.message for f in answer.failures) or "the runner gave no device report"
        raise CliError(f"cannot inspect the device: {why}", hint="run `tile device -vv`, or "
                       "check that jax imports in the runner's Python", code=ExitCode.INFRA)  # fmt: skip
    first = report.devices[0] if report.devices else None
    if calibrate and report.calibration is None and (first is None or first.platform == "cpu"):
        raise CliError(f"`tile device --calibrate` does not apply to a CPU: {CPU_NO_PEAKS}",
                       hint=CPU_PEAKS_HINT, code=ExitCode.USAGE)  # fmt: skip
    if as_json:
        doc = {"hello": msgspec.to_builtins(hello), "device": msgspec.to_builtins(report)}
        print(json.dumps(doc, indent=2))
        return int(ExitCode.OK)
    table = Table(box=None, show_header=False, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    for key, value in _rows(report, hello):
        table.add_row(key, Text(value))
    out.print(table)
    for warning in answer.warnings:
        err.print(f"{warning.level}: {warning.message}", markup=False, style="yellow")
    if report.calibration is not None:
        _judge_calibration(err, report.calibration, report.builtin_peaks, resolved)
        if not answer.warnings:
            err.print("calibration cached; `tile bench` uses it for the roofline", style="dim")
    return int(ExitCode.OK)


def _rows(report: DeviceReport, hello: Hello) -> list[tuple[str, str]]:
    """The table of `tile device`: what the runner sees, its peaks and any calibration."""
    first = report.devices[0] if report.devices else None
    rows = [
        ("backend", report.backend),
        ("device", first.device_kind if first else "-"),
        *([("model", first.model)] if first and first.model else []),
        ("count", str(len(report.devices))),
        (
            "memory (JAX limit)",
            format_bytes(first.memory_bytes) if first and first.memory_bytes else "-",
        ),
        ("L2", format_bytes(first.l2_bytes) if first and first.l2_bytes else "-"),
        ("python", hello.python_version),
        ("jax / jaxlib", f"{hello.jax_version} / {hello.jaxlib_version}"),
        ("timers", ", ".join(hello.timers)),
    ]
    peaks = report.builtin_peaks
    if peaks is not None:
        rows.append(("peak bandwidth (built-in)", f"{peaks.bandwidth_gbps:.0f} GB/s"))
        rows += [(f"peak {k} (built-in)", f"{v:.1f} TFLOP/s") for k, v in peaks.tflops.items()]
    elif first is None or first.platform == "cpu":
        rows.append(("peaks", "none on a CPU, unless `[machine]` sets them"))
    cal = report.calibration
    if cal is not None:
        rows.append(("copy bandwidth (measured)",
                     f"{cal.copy_gbps:.0f} GB/s over {format_bytes(cal.copy_bytes)}, {cal.timer}"))  # fmt: skip
        shape = "x".join(map(str, cal.matmul_shape))
        rows.append((f"{cal.matmul_dtype} matmul (measured)",
                     f"{cal.matmul_tflops:.1f} TFLOP/s at {shape}"))  # fmt: skip
    return rows


def _judge_calibration(
    err: Console, cal: Calibration, builtin: Peaks | None, resolved: ResolvedConfig
) -> None:
    """A calibration faster than the datasheet or `[machine]`: high-severity lines on stderr
    (the exit code stays 0; the calibration was measured and cached)."""
    machine = resolved.config.machine
    origin = resolved.origins.get("machine.peak_bandwidth_gbps")
    problems: list[str] = []
    if builtin is not None:
        problems += calibration_excesses(cal, builtin.bandwidth_gbps, builtin.tflops,
                                         "the built-in table's datasheet")  # fmt: skip
    problems += calibration_excesses(
        cal, machine.peak_bandwidth_gbps, machine.peak_tflops,
        "`[machine]`" + (f" ({origin.detail})" if origin is not None else ""),
    )  # fmt: skip
    for problem in problems:
        err.print(f"high: the calibration cannot be right: {problem}", markup=False,
                  style="bold red", soft_wrap=True)  # fmt: skip
    if problems:
        err.print("hint: a device's own copy and matmul cannot beat its roofs: rerun "
                  "`tile device --calibrate` on an idle device, fix the `[machine]` peaks, or "
                  f"delete `{calibration_dir({**os.environ, **resolved.config.runner.env})}`",
                  markup=False, soft_wrap=True)  # fmt: skip


def _check_calibration_cache(resolved: ResolvedConfig) -> None:
    """Refuse an unusable cache directory before minutes of measuring are spent (exit 2)."""
    where = calibration_dir({**os.environ, **resolved.config.runner.env})
    try:
        where.mkdir(parents=True, exist_ok=True)
        usable = os.access(where, os.W_OK | os.X_OK)
        problem = None if usable else "it is not writable"
    except OSError as exc:
        problem = exc.strerror or str(exc)
    if problem is not None:
        raise CliError(
            f"cannot cache the calibration in `{where}`: {problem}",
            hint="set TILE_CACHE_DIR (or `[runner] env`) to a writable directory",
            code=ExitCode.USAGE,
        )
