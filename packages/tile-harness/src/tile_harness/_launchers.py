"""Sharded launches: split a plan into shards and start each shard's runner here or through srun.

Pure standard library (the CLI never imports jax or numpy). The choices below were checked
against a real SLURM 22.05 cluster (tests/slurm/, docs/slurm.md):

- stdin: srun forwards its stdin to the task and closes it at EOF; `--input=0` says so
  explicitly (one task, so "task 0" and the default "all" are the same) and beats a
  `SLURM_STDINMODE` in the environment.
- stdout: without `--unbuffered` the task writes into a pipe and slurmstepd passes every
  complete line on as soon as it arrives, which is all a JSON Lines stream needs (the runner
  writes each message with one unbuffered `os.write`). `--unbuffered` would put the task's
  stdout on a pseudo-terminal (isatty(1) is true), so it is not used.
- `--quit-on-interrupt`: a single SIGINT (Ctrl-C on the CLI's process group) ends the step;
  plain srun only prints the task status on the first one.
- `--exact` inside an allocation: without it each step takes every CPU of the allocation on
  its node and the shards run one after the other ("Requested nodes are busy").
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeGuard

__all__ = [
    "DEFAULT_GRES",
    "LauncherError",
    "SrunOptions",
    "find_srun",
    "local_env",
    "shard_cases",
    "slurm_job_id",
    "squeue_job_id",
    "srun_argv",
    "srun_env",
    "srun_task_signal",
    "visible_gpus",
]

DEFAULT_GRES = "gpu:1"
"""What each shard asks SLURM for when `[launcher] gres` is not set: one GPU."""

# srun reads these as if they were flags; each would change the task's stdio under the protocol
# (SLURM_LABELIO prefixes every stdout line with "0: ") and none has an "off" flag to override it.
_SRUN_IO_VARIABLES = (
    "SLURM_LABELIO",
    "SLURM_UNBUFFEREDIO",
    "SLURM_STDINMODE",
    "SLURM_STDOUTMODE",
    "SLURM_STDERRMODE",
)

# srun options in `extra_args` that would break one task per shard with its own stdin/stdout.
_FORBIDDEN_LONG = (
    "--ntasks",
    "--label",
    "--pty",
    "--input",
    "--output",
    "--multi-prog",
)
_FORBIDDEN_SHORT = frozenset("nlio")

_JOB_ID_RE = re.compile(r"[0-9]+")


class LauncherError(RuntimeError):
    """Raised when shards cannot be laid out or started: bad shard counts, too few GPUs, no srun.

    `hint` says what to do next (a flag or a config key to change).
    """

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


def shard_cases(
    case_ids: Sequence[str], shards: int, costs: Mapping[str, float] | None = None
) -> list[list[str]]:
    """Split case ids into at most `shards` non-empty, balanced shards, deterministically.

    With `costs` (estimated seconds per case, e.g. from a previous run) the split is greedy
    longest-processing-time: costliest case first, each to the least loaded shard; a case
    without a usable cost counts as the mean of the known ones. Without costs it is
    round-robin. Each shard keeps the plan's order; a repeated id is kept once.
    """
    if shards < 1:
        raise LauncherError(
            f"cannot split a plan into {shards} shards", hint="use `--shards 1` or more"
        )
    ordered = list(dict.fromkeys(case_ids))
    count = min(shards, len(ordered))
    if count == 0:
        return []
    if costs is None:
        return [ordered[i::count] for i in range(count)]

    known = [c for c in (costs.get(case) for case in ordered) if _usable(c)]
    fallback = sum(known) / len(known) if known else 1.0
    estimate = [c if _usable(c := costs.get(case)) else fallback for case in ordered]
    loads = [0.0] * count
    members: list[list[int]] = [[] for _ in range(count)]
    for position in sorted(range(len(ordered)), key=lambda i: (-estimate[i], i)):
        # Ties go to the shard with fewer cases, then the lower index: zero costs still spread
        # out, and no shard stays empty while another gets a second case.
        target = min(range(count), key=lambda s: (loads[s], len(members[s]), s))
        loads[target] += estimate[position]
        members[target].append(position)
    return [[ordered[i] for i in sorted(shard)] for shard in members]


def _usable(cost: float | None) -> TypeGuard[float]:
    return cost is not None and math.isfinite(cost) and cost >= 0


def visible_gpus(environ: Mapping[str, str], gpu_count: int = 0) -> list[str]:
    """The GPUs this process may hand out: `CUDA_VISIBLE_DEVICES` if set, else `0..gpu_count-1`.

    Follows CUDA's reading of the variable: entries are indices, UUIDs or MIG ids, and the
    list ends at the first `-1` (so `-1` or an empty value means no GPU at all).
    """
    raw = environ.get("CUDA_VISIBLE_DEVICES")
    if raw is None:
        return [str(i) for i in range(max(gpu_count, 0))]
    devices: list[str] = []
    for entry in (part.strip() for part in raw.split(",")):
        if not entry or entry.startswith("-"):
            break
        devices.append(entry)
    return devices


def local_env(
    shard_index: int, shards: int, visible_devices: Sequence[str] | None
) -> dict[str, str]:
    """Environment overrides for shard `shard_index` of `shards` started on this host.

    When GPUs are visible each shard gets its own one in `CUDA_VISIBLE_DEVICES`: two benchmark
    runners sharing a GPU would time each other. (The shard itself is in its request.)
    """
    if not 0 <= shard_index < shards:
        raise ValueError(f"shard index {shard_index} is outside 0..{shards - 1}")
    env: dict[str, str] = {}
    devices = list(visible_devices or [])
    if not devices:
        return env
    if len(devices) < shards:
        raise LauncherError(
            f"`--shards {shards}` needs one GPU per shard but {len(devices)} are visible "
            f"({','.join(devices)})",
            hint=f"use `--shards {len(devices)}` or fewer, or make more GPUs visible through "
            "`CUDA_VISIBLE_DEVICES`",
        )
    env["CUDA_VISIBLE_DEVICES"] = devices[shard_index]
    return env


def find_srun(search_path: str | None = None) -> str:
    """The absolute path of `srun` on `search_path` (default: `PATH`)."""
    found = shutil.which("srun", path=search_path)
    if found is None:
        raise LauncherError(
            "srun not found: `--launcher slurm` needs SLURM's client tools on PATH",
            hint="run tile on a SLURM login or compute node (or load the slurm module), "
            "or use `--launcher local`",
        )
    return found


@dataclass(frozen=True)
class SrunOptions:
    """What the user asks srun for, the same for every shard: the `[launcher]` keys, with
    `--slurm-arg` values after the configured `extra_args`."""

    partition: str | None = None
    time_limit: str | None = None
    gres: str | None = None
    extra_args: Sequence[str] = ()


def srun_argv(
    runner_argv: Sequence[str],
    *,
    shard_index: int,
    job_name: str,
    options: SrunOptions,
    inside_allocation: bool,
    srun: str | None = None,
) -> list[str]:
    """The shell-free argument vector that starts one runner task of one shard through srun.

    The task reads the request on srun's stdin and writes the protocol on srun's stdout.
    `options.gres` defaults to one GPU (`gpu:1`; `none` asks for no GRES). Outside an
    allocation srun requests a job of its own (named `JOB_NAME.INDEX`, with the partition and
    time limit); inside one it starts a step that takes only its own CPUs and GPU.
    `options.extra_args` come last, so they can override the others, except for options that
    would break one task per shard with its own stdio. `srun` defaults to the one on PATH.
    """
    if shard_index < 0:
        raise ValueError(f"shard index {shard_index} is negative")
    if not runner_argv:
        raise ValueError("runner_argv is empty")
    _check_extra_args(options.extra_args)
    argv = [
        srun or find_srun(),
        "--ntasks=1",
        "--nodes=1",
        f"--job-name={job_name}.{shard_index}",
        "--input=0",
        "--export=ALL",
        "--kill-on-bad-exit=1",
        "--quit-on-interrupt",
    ]
    if inside_allocation:
        argv.append("--exact")
    argv.append(f"--gres={options.gres or DEFAULT_GRES}")
    # Inside an allocation the partition is the allocation's; a step only takes a time limit.
    if options.partition and not inside_allocation:
        argv.append(f"--partition={options.partition}")
    if options.time_limit:
        argv.append(f"--time={options.time_limit}")
    argv.extend(options.extra_args)
    argv.append("--")
    argv.extend(runner_argv)
    return argv


def _check_extra_args(extra_args: Sequence[str]) -> None:
    for arg in extra_args:
        if _breaks_protocol(arg):
            raise LauncherError(
                f"srun argument `{arg}` cannot be used: each shard is one srun task whose stdin "
                "and stdout carry tile's protocol",
                hint="remove it from `[launcher] extra_args` or `--slurm-arg`",
            )


def _breaks_protocol(arg: str) -> bool:
    if arg == "--":
        return True
    if arg.startswith("--"):
        return arg.split("=", 1)[0] in _FORBIDDEN_LONG
    return len(arg) > 1 and arg[0] == "-" and arg[1] in _FORBIDDEN_SHORT


def srun_env(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` for the srun process, without the SLURM_* variables that would alter its stdio."""
    return {k: v for k, v in environ.items() if k not in _SRUN_IO_VARIABLES}


def slurm_job_id(environ: Mapping[str, str]) -> str | None:
    """The SLURM job this environment runs in (`SLURM_JOB_ID`, or the older `SLURM_JOBID`)."""
    for name in ("SLURM_JOB_ID", "SLURM_JOBID"):
        value = environ.get(name, "").strip()
        if _JOB_ID_RE.fullmatch(value):
            return value
    return None


def squeue_job_id(job_name: str, *, timeout: float = 10.0) -> str | None:
    """The id of this user's newest job named `job_name` (pending, running or just ended).

    For a shard that srun started outside an allocation: its job id is SLURM's to pick and srun
    prints it only when the job had to wait, so it is looked up by the shard's unique name.
    Returns None when squeue is missing, fails or knows no such job.
    """
    argv = [
        "squeue",
        "--noheader",
        f"--user={os.getuid()}",
        "--states=all",
        f"--name={job_name}",
        "--format=%A",
    ]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    ids = [line.strip() for line in done.stdout.splitlines()]
    ids = [i for i in ids if _JOB_ID_RE.fullmatch(i)]
    return max(ids, key=int) if ids else None


def srun_task_signal(returncode: int) -> int | None:
    """The signal that ended the task (or srun itself), read from srun's exit status.

    srun exits with 128+N when its task dies of signal N (139 for a segfault), and Popen reports
    -N when srun itself was killed. A task that calls exit(128+N) reads the same; srun's own
    errors (no allocation, bad option) exit with 1.
    """
    if returncode < 0:
        return -returncode
    if 128 < returncode < 128 + 65:
        return returncode - 128
    return None
