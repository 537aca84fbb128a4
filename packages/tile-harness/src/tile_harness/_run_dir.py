"""Where a run's directory goes: made (refusing an unusable place clearly), pointed at by
`.tile/latest`, and the oldest runs pruned to `[output] keep`; or, when it holds no run (the
filters matched no case), removed again with `.tile/latest` and the old runs left alone."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING

from tile_harness._errors import CliError, ExitCode, refuse_run_directory
from tile_harness._report import RunSetup

if TYPE_CHECKING:
    from tile_config import ResolvedConfig

__all__ = [
    "TOOL",
    "Pairing",
    "discard_run",
    "open_run",
    "point_latest",
    "publish_run",
    "tool_version",
]

TOOL = "tile"


@dataclass(frozen=True)
class Pairing:
    """One side of two runs whose rounds take turns (`tile bench --against`): its run id and
    its partner's, known before either directory exists so that each can name the other, and
    the source tree its producer is read from (the other revision's worktree)."""

    run_id: str
    paired_with: str
    source: Path


def tool_version() -> str:
    """Version of the installed tile-cli."""
    try:
        return version("tile-cli")
    except PackageNotFoundError:
        return "0+unknown"


def open_run(
    command: str,
    resolved: ResolvedConfig,
    output_dir: Path | None,
    argv: list[str],
    pairing: Pairing | None = None,
    *,
    publish: bool = True,
) -> RunSetup:
    """Create the run directory; refuse an unusable location clearly.

    With `publish` it becomes `.tile/latest` at once (`publish_run`); a suite run publishes
    only once a case is planned, so that filters matching nothing move nothing.
    """
    import tile_artifacts as ta

    run_id = pairing.run_id if pairing else ta.new_run_id(command)
    redactor = ta.Redactor.for_run(
        environ=os.environ,
        settings=resolved.config.runner.env,
        config_text=resolved.raw_text,
        argv=argv,
    )
    if output_dir is not None:
        run_dir = output_dir.absolute()
        # A run inside another run's directory made that one fail `tile schema-check`.
        refuse_run_directory(run_dir, hint="`-o` a directory outside it", in_campaign=True)
    else:
        run_dir = resolved.resolve_path(resolved.config.output.dir).absolute() / run_id
    producer = ta.producer_info(TOOL, tool_version(), pairing.source if pairing else Path.cwd())
    try:
        writer = ta.ArtifactWriter(run_dir, run_id=run_id, producer=producer, redactor=redactor)
    except ta.ArtifactError as exc:
        raise CliError(exc.message, hint=exc.hint, code=ExitCode.USAGE) from None
    paired_with = pairing.paired_with if pairing else None
    setup = RunSetup(command, resolved, writer, run_dir, argv, paired_with)
    if publish:
        publish_run(setup, prune=output_dir is None)
    return setup


def point_latest(target: Path, resolved: ResolvedConfig) -> None:
    """Point `.tile/latest` at `target` (a campaign directory when its run ends: its units each
    moved it, and the last unit is no more the campaign's run than any other); best effort."""
    runs = resolved.resolve_path(resolved.config.output.dir).absolute()
    _point_latest(target.absolute(), runs.parent if runs.name == "runs" else runs)


def publish_run(setup: RunSetup, *, prune: bool) -> None:
    """Point `.tile/latest` at the run and (with `prune`: a run under `[output] dir`) remove
    the oldest runs beyond `[output] keep`."""
    resolved, run_dir = setup.resolved, setup.run_dir
    # `-o DIR` runs too: `tile baseline save` (and --compare's users) take `.tile/latest`
    # for the run just made; pointing it elsewhere saved an unrelated run as the baseline.
    runs = resolved.resolve_path(resolved.config.output.dir).absolute()
    _point_latest(run_dir, runs.parent if runs.name == "runs" else runs)
    keep = resolved.config.output.keep
    if prune and keep is not None:
        from tile_harness._keep import prune_runs

        prune_runs(run_dir.parent, keep, run_dir)


def discard_run(setup: RunSetup) -> None:
    """Remove a finalized run directory that holds no run: no case was planned and nothing
    failed, so it has only tile's own records of starting a runner. Best effort.

    Under `[output] dir` the folders made for it go too while empty (`.tile/runs`, `.tile`):
    a run that matched nothing, outside any project, leaves nothing behind."""
    shutil.rmtree(setup.run_dir, ignore_errors=True)
    runs = setup.resolved.resolve_path(setup.resolved.config.output.dir).absolute()
    if setup.run_dir.parent != runs:
        return
    for folder in (runs, runs.parent) if runs.name == "runs" else (runs,):
        try:
            folder.rmdir()  # only an empty one
        except OSError:
            return


def _point_latest(run_dir: Path, tile_dir: Path) -> None:
    """`.tile/latest` -> the newest run, replaced atomically; best effort."""
    link = tile_dir / "latest"
    tmp = tile_dir / f".latest-{os.getpid()}"
    try:
        tile_dir.mkdir(parents=True, exist_ok=True)
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(os.path.relpath(run_dir, tile_dir))
        tmp.replace(link)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)  # no stray `.latest-<pid>` left behind
        what = "is a directory, not a link" if link.is_dir() and not link.is_symlink() else None
        print(
            f"warning: `{link}` was not updated ({what or exc.strerror or exc}): it does not "
            f"show this run; remove it and it will follow the newest run again",
            file=sys.stderr,
        )
