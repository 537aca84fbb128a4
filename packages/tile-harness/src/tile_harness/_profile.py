"""`tile profile --ncu`: one case's kernels under Nsight Compute, read back per kernel.

A runner is started under `ncu --profile-from-start off` with a small, named metric set; the
runner opens the profiler range only around a few calls of the built case (protocol 1.12,
`ProfileSettings.ncu_range`), so compilation, autotuning and the warm-up are never profiled.
ncu's own output goes to a log file: the runner's stdout is the protocol. The report is then
read back with `ncu --import REPORT --csv --page raw --print-units base`, one row per kernel.
"""

from __future__ import annotations

import csv
import io
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final

import tile_protocol as tp
from tile_harness._ask import Answer
from tile_harness._errors import CliError, ExitCode
from tile_harness._requests import derive
from tile_harness._runners import Via, make_session

if TYPE_CHECKING:
    import tile_artifacts as ta
    from tile_config import ResolvedConfig

__all__ = [
    "NCU_FIXED",
    "NCU_METRICS",
    "NCU_STALLS",
    "PROFILE_LIMIT",
    "NcuKernel",
    "find_ncu",
    "metric_names",
    "ncu_argv",
    "ncu_case",
    "ncu_refusal",
    "parse_ncu_csv",
    "stall_metric",
]

PROFILE_LIMIT: Final = 4
"""At most this many cases per `tile profile`: each one is a runner start and, with `--ncu`,
every kernel replayed once per pass."""

NCU_METRICS: Final[dict[str, str]] = {
    "time": "gpu__time_duration.sum",
    "dram_sol_pct": "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "sm_sol_pct": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "occupancy_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "registers_per_thread": "launch__registers_per_thread",
    "smem_static_per_block": "launch__shared_mem_per_block_static",
    "smem_dynamic_per_block": "launch__shared_mem_per_block_dynamic",
    "l2_hit_pct": "lts__t_sector_hit_rate.pct",
}
"""What `--ncu` shows, by the name tile gives it, and the ncu metric each one is."""

NCU_STALLS: Final = (
    "barrier", "branch_resolving", "dispatch_stall", "drain", "imc_miss", "lg_throttle",
    "long_scoreboard", "math_pipe_throttle", "membar", "mio_throttle", "misc",
    "no_instruction", "not_selected", "short_scoreboard", "sleeping", "tex_throttle", "wait",
)  # fmt: skip
"""Warp stall reasons, each `smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio`
(cycles a warp waits for that reason per issued instruction); the top 3 are shown."""

NCU_FIXED: Final = ("--clock-control", "none")
"""The clocks as the GPU runs them (as tile's timers see it), not locked to base by ncu."""

NCU_EXIT_S: Final = 120.0
"""How long ncu may take to write its report once the runner's stream ended."""

_NOT_PERMITTED = "ERR_NVGPUCTRPERM"
_PERMISSION_HINT = (
    "this user may not read the GPU's performance counters: run as root, or have an admin set "
    "`options nvidia NVreg_RestrictProfilingToAdminUsers=0` (see "
    "https://developer.nvidia.com/ERR_NVGPUCTRPERM); `tile profile --trace` needs no counters"
)


def stall_metric(reason: str) -> str:
    return f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio"


def metric_names() -> list[str]:
    """Every ncu metric `--ncu` collects, in a stable order (the hand run uses the same)."""
    return [*NCU_METRICS.values(), *map(stall_metric, NCU_STALLS)]


@dataclass(frozen=True)
class NcuKernel:
    """One profiled kernel launch: its name, launch shape and the metrics tile names."""

    name: str
    block: str
    grid: str
    metrics: dict[str, float | None]
    units: dict[str, str]
    stalls: list[tuple[str, float]] = field(default_factory=list[tuple[str, float]])
    """The top 3 stall reasons, largest first."""

    @property
    def smem_per_block(self) -> float | None:
        parts = [
            self.metrics.get("smem_static_per_block"),
            self.metrics.get("smem_dynamic_per_block"),
        ]
        known = [p for p in parts if p is not None]
        return sum(known) if known else None

    def as_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "block": self.block,
            "grid": self.grid,
            "metrics": self.metrics,
            "smem_per_block": self.smem_per_block,
            "units": self.units,
            "top_stalls": [{"reason": r, "ratio": v} for r, v in self.stalls],
            "ncu_metrics": dict(NCU_METRICS),
        }


def find_ncu() -> str:
    """The `ncu` on PATH; a usage error with a hint when there is none."""
    found = shutil.which("ncu")
    if found is None:
        raise CliError(
            "`tile profile --ncu` needs Nsight Compute's `ncu`, which is not on PATH",
            hint="install Nsight Compute (it comes with the CUDA toolkit) and put its directory "
            "on PATH, e.g. `export PATH=/usr/local/cuda/bin:$PATH`; `--trace` works without it",
            code=ExitCode.USAGE,
        )
    return found


def ncu_argv(ncu: str, report: Path, log: Path, *, kernels: str | None = None) -> list[str]:
    """The ncu command line a runner starts under: only the runner's profiler range (and of it
    only the kernels whose names match the regular expression `kernels`), only the named
    metrics, the report to `report`, ncu's words to `log`."""
    only = ["--kernel-name", f"regex:{kernels}"] if kernels else []
    return [
        ncu, "--profile-from-start", "off", "--target-processes", "all", *NCU_FIXED, *only,
        "--metrics", ",".join(metric_names()), "--export", str(report), "--force-overwrite",
        "--log-file", str(log),
    ]  # fmt: skip


def ncu_case(
    request: tp.RunRequest,
    resolved: ResolvedConfig,
    case_id: str,
    *,
    ncu: str,
    where: Path,
    kernels: str | None = None,
    redactor: ta.Redactor | None = None,
) -> list[NcuKernel]:
    """Profile `case_id`'s calls under ncu into `where` (`ncu.ncu-rep`, `ncu.log`, `ncu.csv`);
    the kernels it saw. Counters not permitted, or no kernel profiled, is a CliError.
    `redactor`: the run's secrets, kept out of the runner's stderr log."""
    where.mkdir(parents=True, exist_ok=True)
    report, log = where / "ncu.ncu-rep", where / "ncu.log"
    # One call: ncu replays each kernel for its passes, so more calls add rows, not precision.
    asked = derive(
        request,
        case_ids=[case_id],
        output_dir=None,
        profile=tp.ProfileSettings(calls=1, ncu_range=True, source=False),
    )
    answer = Answer()
    # ncu writes the report after the runner has said `done` and exited: give it time.
    via = Via(argv_prefix=tuple(ncu_argv(ncu, report, log, kernels=kernels)), exit_wait=NCU_EXIT_S)
    clean = make_session(asked, resolved, answer, log_dir=where / "runner", via=via,
                         redactor=redactor).run()  # fmt: skip
    said = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
    refused = ncu_refusal(said)
    if refused is not None:
        raise refused
    if not report.is_file() or not clean:
        why = _last_error(said) or "; ".join(f.message for f in answer.failures) or "no report"
        raise CliError(f"ncu profiled nothing for `{case_id}`: {why}",
                       hint=f"see {log} and the runner log under {where / 'runner'}",
                       code=ExitCode.INFRA)  # fmt: skip
    text = _import_csv(ncu, report)
    (where / "ncu.csv").write_text(text, encoding="utf-8")
    return parse_ncu_csv(text)


def ncu_refusal(log: str) -> CliError | None:
    """The usage error for what ncu said when it may not read the counters, else None."""
    if _NOT_PERMITTED not in log:
        return None
    return CliError(f"ncu may not read the GPU's performance counters ({_NOT_PERMITTED})",
                    hint=_PERMISSION_HINT, code=ExitCode.USAGE)  # fmt: skip


def _last_error(log: str) -> str | None:
    errors = [line.strip() for line in log.splitlines() if "==ERROR==" in line]
    return errors[-1] if errors else None


def _import_csv(ncu: str, report: Path) -> str:
    """`ncu --import REPORT --csv --page raw`, in base units (no `Kbyte`, `usecond`)."""
    args = [ncu, "--import", str(report), "--csv", "--page", "raw", "--print-units", "base"]
    done = subprocess.run(args, capture_output=True, text=True, check=False, timeout=300)
    if done.returncode != 0:
        raise CliError(f"`{' '.join(args)}` failed: {done.stderr.strip()[-500:]}",
                       hint="open the report in Nsight Compute to see why", code=ExitCode.INFRA)  # fmt: skip
    return done.stdout


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def parse_ncu_csv(text: str) -> list[NcuKernel]:
    """The kernels of ncu's raw CSV page: a header of metric names, a row of units, then one
    row per kernel launch (lines before the header, ncu's own, are skipped)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        return []
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    header, body = rows[0], rows[1:]
    units_row = body[0] if body and not body[0][0].strip() else [""] * len(header)
    column = {name: i for i, name in enumerate(header)}
    kernels: list[NcuKernel] = []
    for row in body:
        if not row or not row[0].strip() or len(row) < len(header):
            continue

        def cell(name: str, row: list[str] = row) -> str:
            return row[column[name]] if name in column else ""

        metrics = {label: _number(cell(name)) for label, name in NCU_METRICS.items()}
        units = {label: units_row[column[name]] for label, name in NCU_METRICS.items()
                 if name in column}  # fmt: skip
        stalls = [(r, v) for r in NCU_STALLS if (v := _number(cell(stall_metric(r)))) is not None
                  and v > 0]  # fmt: skip
        stalls.sort(key=lambda pair: -pair[1])
        kernels.append(NcuKernel(name=cell("Kernel Name"), block=cell("Block Size"),
                                 grid=cell("Grid Size"), metrics=metrics, units=units,
                                 stalls=stalls[:3]))  # fmt: skip
    return kernels
