"""`tile profile`: a few cases built, their views and sources kept, traced or under ncu.

The selection is listed first and refused above `PROFILE_LIMIT` cases, and `--ncu` is refused
without `ncu` or without an NVIDIA GPU, before a run directory exists. The run itself is a
build (`tile build`'s views per case) whose runner also makes the calls the request's
`profile` asks for; with `--ncu` each built case is then run once more in a runner started
under Nsight Compute. Everything lands in one run directory, listed in its manifest.
"""

from __future__ import annotations

import contextlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import tile_protocol as tp
from tile_cli.runs._suite_run import claim_outputs
from tile_cli.terminal._escape import hide_config_secrets
from tile_cli.terminal._render import display_path, render_build, render_undone
from tile_cli.terminal._ui import Ui, make_consoles
from tile_harness import (
    PROFILE_LIMIT,
    CliError,
    ExitCode,
    Selection,
    Suite,
    ask,
    derive,
    find_ncu,
    make_session,
    ncu_case,
    no_cases,
    no_match,
    resolve_config,
    signals,
)

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from tile_config import ResolvedConfig
    from tile_harness import NcuKernel

__all__ = ["ProfileFlags", "run_profile"]

_NCU_BACKENDS = ("gpu", "cuda")


@dataclass(frozen=True)
class ProfileFlags:
    """What `tile profile` was asked for beyond the selection."""

    ncu: bool = False
    trace: bool = False
    calls: int = 3
    ncu_kernels: str | None = None
    """Under ncu, only the kernels whose names match this regular expression."""
    profile: str | None = None
    output_dir: Path | None = None
    verbose: int = 0


def run_profile(sel: Selection, flags: ProfileFlags) -> int:
    """Profile the selected cases into one run directory; the exit code."""
    resolved = resolve_config(flags.profile, sel.overrides)
    hide_config_secrets(resolved)
    out, err = make_consoles()
    ncu = find_ncu() if flags.ncu else None
    cases = _selected(resolved, sel, err, needs_gpu=flags.ncu)
    hold = contextlib.ExitStack()
    hold.enter_context(signals.held())
    suite = Suite("build", resolved, sel, output_dir=flags.output_dir, argv=sys.argv,
                  display=Ui(err, verbose=flags.verbose, label="tile profile"), label="profile",
                  progress=True)  # fmt: skip
    settings = tp.ProfileSettings(calls=flags.calls, trace=flags.trace)
    suite.request = derive(suite.request, profile=settings)
    session = make_session(suite.request, resolved, suite.sink, log_dir=suite.run_dir / "logs",
                           isolate=resolved.config.runner.isolate,
                           redactor=suite.setup.writer.redactor)  # fmt: skip
    interrupted = suite.drive(session, hold)
    refused: CliError | None = None
    profiled: dict[str, list[NcuKernel]] = {}
    if ncu is not None and interrupted is None:
        built = {r.case_id for r in suite.recorder.results.build_results if r.ok}
        try:
            todo = [c for c in cases if c in built]
            _under_ncu(suite, resolved, todo, ncu=ncu, kernels=flags.ncu_kernels, into=profiled)
        except CliError as exc:  # said after the run directory is finalized and kept
            refused = exc
        except KeyboardInterrupt:
            interrupted = "interrupted by Ctrl-C"
        except signals.Terminated:
            interrupted = "terminated by SIGTERM"
    problems = claim_outputs(suite.recorder)
    finished = suite.finish(interrupted, refused=refused)
    results = suite.recorder.results
    render_build(out, err, results, problems, verbose=flags.verbose)
    render_undone(err, results)
    for case_id, kernels in profiled.items():
        out.print(ncu_table(case_id, kernels, plain=not out.is_terminal))
    if flags.trace and interrupted is None:
        err.print("traces: outputs/<case>/profile/trace/ (open perfetto_trace.json.gz in "
                  "https://ui.perfetto.dev)", markup=False, style="dim")  # fmt: skip
    err.print(f"run directory: {display_path(suite.run_dir)}", markup=False, style="dim")
    if refused is not None:
        raise refused
    return finished.outcome.code


def _selected(
    resolved: ResolvedConfig, sel: Selection, err: Console, *, needs_gpu: bool
) -> list[str]:
    """The selected case ids; refused when none, more than `PROFILE_LIMIT`, or `--ncu` on a
    runner without an NVIDIA GPU."""
    answer, clean = ask("list", resolved, sel)
    if answer.unusable(lambda line: err.print(line, markup=False), clean=clean):
        raise CliError("the runner could not list the cases", code=ExitCode.INFRA)
    ids = answer.case_ids
    if not ids:
        filtered = bool(sel.filters or sel.kernels or sel.case_ids or sel.axes)
        raise no_match(resolved, sel) if filtered else no_cases(filtered=False)
    if len(ids) > PROFILE_LIMIT:
        raise CliError(
            f"`tile profile` takes at most {PROFILE_LIMIT} cases; the selection has {len(ids)}",
            hint="narrow it with `-k`, `--kernel`, `-a` or `--case` (`tile list` with the same "
            f"filters shows what they select), e.g. `tile profile --case '{ids[0]}'`",
            code=ExitCode.USAGE,
        )
    if needs_gpu and answer.backend not in _NCU_BACKENDS:
        raise CliError(
            f"`--ncu` needs an NVIDIA GPU; the runner's JAX backend is `{answer.backend}`",
            hint="run it on a machine with a CUDA GPU and jax[cuda]; `tile profile --trace` "
            "works on any backend",
            code=ExitCode.USAGE,
        )
    return ids


def _under_ncu(
    suite: Suite,
    resolved: ResolvedConfig,
    cases: list[str],
    *,
    ncu: str,
    kernels: str | None,
    into: dict[str, list[NcuKernel]],
) -> None:
    """Each built case once more under ncu, its kernels put `into` as they come; its report,
    log, CSV and JSON beside its views (what a stop leaves is kept)."""
    writer = suite.recorder.writer
    for case_id in cases:
        rel = f"outputs/{tp.case_dirname(case_id)}/profile"
        writer.path(f"{rel}/ncu.ncu-rep", description=f"Nsight Compute report of {case_id}")
        writer.path(f"{rel}/ncu.log", description="what ncu said while profiling")
        writer.path(f"{rel}/ncu.csv", description="`ncu --import --csv --page raw` of the report")
        where = suite.run_dir / rel
        # The runner's log under ncu is redacted like every runner log of a run.
        seen = ncu_case(suite.request, resolved, case_id, ncu=ncu, where=where, kernels=kernels,
                        redactor=writer.redactor)  # fmt: skip
        doc = {"case_id": case_id, "kernel_filter": kernels, "kernels": [k.as_json() for k in seen]}
        writer.write_text(f"{rel}/ncu.json", json.dumps(doc, indent=2) + "\n",
                          description=f"Nsight Compute metrics per kernel of {case_id}")  # fmt: skip
        into[case_id] = seen


def _cell(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def ncu_table(case_id: str, kernels: list[NcuKernel], *, plain: bool) -> Table:
    """One row per profiled kernel: time, speeds of light, occupancy, resources, stalls."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    # Text, not markup: a case id's `[shape=...]` and a kernel's name are no rich tags.
    table = Table(title=Text(f"ncu: {case_id}"), title_justify="left", header_style="bold",
                  box=box.SIMPLE if plain else box.ROUNDED)  # fmt: skip
    heads = ("kernel", "time µs", "DRAM %", "SM %", "occup %", "regs", "smem/blk", "L2 hit %",
             "top stalls")  # fmt: skip
    for i, head in enumerate(heads):
        table.add_column(head, justify="left" if i in (0, 8) else "right", overflow="fold")
    for k in kernels:
        m = k.metrics
        time_ns = m.get("time")
        stalls = ", ".join(f"{r} {v:.2f}" for r, v in k.stalls) or "-"
        table.add_row(
            Text(k.name), _cell(time_ns / 1e3 if time_ns is not None else None, 2),
            _cell(m.get("dram_sol_pct")), _cell(m.get("sm_sol_pct")),
            _cell(m.get("occupancy_pct")), _cell(m.get("registers_per_thread"), 0),
            _cell(k.smem_per_block, 0), _cell(m.get("l2_hit_pct")), Text(stalls),
        )  # fmt: skip
    return table
