"""Running cases from Python: `tile bench` (or test, build) as a call that returns its run.

A notebook or a script gets what the command gives (a runner subprocess per suite, so a
crashing kernel cannot take the caller down; a run directory that validates; the same
configuration, status rule and exit code) without a terminal: nothing is printed, and the
run's report comes back as a value.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tile_harness._compare import CompareSettings
from tile_harness._display import Display, QuietDisplay
from tile_harness._settings import Selection, resolve_config
from tile_harness._suite import Suite

if TYPE_CHECKING:
    import tile_artifacts as ta
    import tile_protocol as tp

__all__ = ["RunDone", "bench", "run"]


@dataclass(frozen=True)
class RunDone:
    """A finished run: its report (as written to `run_dir/report.json`) and its exit code."""

    report: ta.Report
    run_dir: Path
    exit_code: int
    reason: str | None
    """Why the exit code is not 0 (None when it is)."""
    comparison: ta.compare.ComparisonDoc | None = None
    """The verdicts against `compare`, when one was given."""

    @property
    def cases(self) -> dict[str, ta.CaseRecord]:
        """Each case's record by case id, in run order."""
        return {c.case_id: c for c in self.report.cases}

    @property
    def ok(self) -> bool:
        """Whether the run passed: every case measured or checked, every check right."""
        return self.exit_code == 0


def bench(  # noqa: PLR0913 (public call: its keyword options are documented)
    case_ids: Sequence[str] | None = None,
    *,
    kernels: Sequence[str] = (),
    filters: Sequence[str] = (),
    project: Path | str | None = None,
    output_dir: Path | str | None = None,
    settings: Mapping[str, object] | None = None,
    max_time: float | None = None,
    compare: Path | str | None = None,
    display: Display | None = None,
) -> RunDone:
    """Time cases as `tile bench` does, in a runner subprocess; see `run`.

    `max_time`: seconds of sampling per case at most (`bench.max_time`).
    """
    given = dict(settings or {})
    if max_time is not None:
        given["bench.max_time"] = max_time
    return run("bench", case_ids, kernels=kernels, filters=filters, project=project,
               output_dir=output_dir, settings=given, compare=compare,
               display=display)  # fmt: skip


def run(  # noqa: PLR0913 (public call: its keyword options are documented)
    command: tp.Command,
    case_ids: Sequence[str] | None = None,
    *,
    kernels: Sequence[str] = (),
    filters: Sequence[str] = (),
    project: Path | str | None = None,
    output_dir: Path | str | None = None,
    settings: Mapping[str, object] | None = None,
    compare: Path | str | None = None,
    display: Display | None = None,
) -> RunDone:
    """Run `command` over the selected cases into a run directory and return the run.

    Args:
        case_ids: exact case ids (`std/softmax[shape=8x128,dtype=float32]`); None: every
            case the other filters select.
        kernels, filters: `--kernel` names and `-k` expressions, as on the command line.
        project: where tile.toml is looked for (default: the working directory).
        output_dir: the run directory (default: a new one under `[output] dir`).
        settings: configuration by dotted key, as `tile bench KEY=VALUE` takes it
            (`{"bench.max_time": 0.5}`); they win over tile.toml and `TILE_*`.
        compare: a baseline (run directory, report.json, baseline file or a directory of
            them) to judge the run against, as `tile bench --compare` does: a regression
            makes the exit code 1.
        display: live progress (default: none).

    Raises:
        CliError: the configuration or the selection is unusable (exit code 2), or the run
            directory could not be written.
    """
    resolved = resolve_config(None, dict(settings or {}), cwd=Path(project) if project else None)
    selection = Selection(
        filters=tuple(filters),
        kernels=tuple(kernels),
        case_ids=list(case_ids) if case_ids is not None else None,
    )
    out = Path(output_dir) if output_dir is not None else None
    suite = Suite(command, resolved, selection, output_dir=out, argv=[sys.argv[0], command],
                  display=display or QuietDisplay(), progress=display is not None)  # fmt: skip
    interrupted = suite.drive(suite.session(isolate=resolved.config.runner.isolate))
    compare_with = None
    if compare is not None and interrupted is None:
        compare_with = CompareSettings.from_config(Path(compare), resolved.config.compare)
    finished = suite.finish(interrupted, compare_with)
    if (fault := suite.recorder.write_fault()) is not None:
        raise fault
    return RunDone(
        report=finished.report,
        run_dir=suite.run_dir,
        exit_code=finished.outcome.code,
        reason=finished.outcome.reason,
        comparison=finished.comparison,
    )
