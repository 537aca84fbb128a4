"""`tile build` and `tile inspect`: what the compiler made of each case, stored or printed."""

from __future__ import annotations

import difflib
import hashlib
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import tile_protocol as tp
from tile_cli._errors import CliError, ExitCode, no_cases, stopped_code, usage_failure
from tile_cli._session import Launch
from tile_cli._settings import Selection, build_request, load
from tile_cli._ui import make_consoles

if TYPE_CHECKING:
    from rich.console import Console

    from tile_cli._record import RunRecorder
    from tile_config import ResolvedConfig

__all__ = [
    "BUILD_PHASES",
    "INSPECT_KINDS",
    "ViewSink",
    "build_exit_code",
    "case_filename",
    "check_kind",
    "claim_outputs",
    "display_path",
    "inspect_case",
    "print_failures",
    "render_build",
    "request_views",
    "split_failures",
]

INSPECT_KINDS = ("jaxpr", "stablehlo", "hlo", "cost", "memory")
"""What `tile inspect --kind` shows; `all` shows each in this order."""

BUILD_PHASES = frozenset({"inputs", "compile"})
"""Runner phases whose failure means the case itself did not build (exit 1, not 3)."""

_UNSAFE = re.compile(r"[^A-Za-z0-9._=-]+")
_MAX_SLUG = 80


def case_filename(case_id: str) -> str:
    """File-system-safe, unique, stable name of a case: readable slug plus a short hash.

    The same rule as tile-runner's `outputs/<case-dir>/`, so a snapshot and a build output
    of one case share a name.
    """
    slug = _UNSAFE.sub("_", case_id).strip("._-")[:_MAX_SLUG].rstrip("._-") or "case"
    return f"{slug}-{hashlib.sha256(case_id.encode()).hexdigest()[:8]}"


def split_failures(failures: Sequence[tp.Failure]) -> tuple[list[tp.Failure], list[tp.Failure]]:
    """(cases that failed to build, everything else that went wrong); skipped cases are neither.

    A kernel that raises while its inputs are made, while tracing, lowering or compiling is a
    build failure of that case. A crash, a timeout, an import error or a bad plan is not.
    """
    broken: list[tp.Failure] = []
    other: list[tp.Failure] = []
    for failure in failures:
        if failure.case_id is not None and failure.phase in BUILD_PHASES:
            if failure.status != "skipped":
                broken.append(failure)
        else:
            other.append(failure)
    return broken, other


# ---------------------------------------------------------------- runner for views


class ViewSink:
    """Keeps what an inspect run says: the plan, the views, failures and warnings."""

    def __init__(self) -> None:
        self.plan: tp.Plan | None = None
        self.backend: str | None = None
        self.views: list[tp.Inspect] = []
        self.failures: list[tp.Failure] = []
        self.logs: list[tp.Log] = []

    def on_launch(self, launch: Launch) -> None: ...
    def on_launch_end(self, launch: Launch) -> None: ...
    def on_case_start(self, start: tp.CaseStart) -> None: ...
    def on_noise(self, event: tp.BadLine | tp.UnknownMessage) -> None: ...

    def on_hello(self, hello: tp.Hello) -> None:
        self.backend = self.backend or hello.backend

    def on_plan(self, plan: tp.Plan) -> None:
        self.plan = plan

    def on_message(self, message: tp.Message) -> None:
        if isinstance(message, tp.Inspect):
            self.views.append(message)
        elif isinstance(message, tp.Failure):
            self.failures.append(message)
        elif isinstance(message, tp.Log) and message.level in ("warning", "error"):
            self.logs.append(message)

    @property
    def case_ids(self) -> list[str]:
        """Every planned case id, in run order."""
        return [c.case_id for c in self.plan.cases] if self.plan is not None else []


def request_views(
    command: str, resolved: ResolvedConfig, sel: Selection, *, kind: str | None = None
) -> tuple[ViewSink, bool]:
    """Run runners for a command that writes no run directory (inspect, list); keep the views."""
    import msgspec

    request = build_request(command, resolved, sel, None)
    if kind is not None:
        request = msgspec.structs.replace(request, inspect_kind=kind)
    from tile_cli._run import run_without_directory

    sink = ViewSink()
    return sink, run_without_directory(request, resolved, sink)


def print_failures(err: Console, failures: Sequence[tp.Failure], *, verbose: int = 0) -> None:
    """One red line per failure on stderr; `-v` adds the runner's traceback."""
    for failure in failures:
        where = failure.case_id or "(run)"
        err.print(
            f"✗ {where} [{failure.phase}, {failure.status}] {failure.error_type}: "
            f"{failure.message}",
            markup=False,
            style="red",
        )
        if verbose and failure.traceback:
            err.print(failure.traceback.rstrip(), markup=False, style="dim")


def display_path(path: Path) -> str:
    """`path` relative to the working directory when it is below it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


# ---------------------------------------------------------------- tile inspect


def _unknown_case(case_id: str, resolved: ResolvedConfig, sel: Selection) -> CliError:
    """The error for a case id that does not exist, naming the closest ones that do."""
    listing, _ = request_views("list", resolved, Selection(plugins=sel.plugins, axes=sel.axes))
    known = listing.case_ids
    close = difflib.get_close_matches(case_id, known, n=5, cutoff=0.75)
    close += [c for c in known if case_id in c and c not in close][: 5 - len(close)]
    if close:
        hint = "did you mean " + ", ".join(f"`{c}`" for c in close) + "? (`tile list` shows all)"
    elif known:
        hint = "run `tile list` to see every case id"
    else:
        hint = "no kernels found: add `[project] modules` or `paths` to tile.toml"
    return CliError(f"no case `{case_id}`", hint=hint, code=ExitCode.USAGE)


def check_kind(kind: str) -> None:
    """Refuse an unknown `--kind` before any runner starts."""
    if kind == "all" or kind in INSPECT_KINDS:
        return
    close = difflib.get_close_matches(kind, [*INSPECT_KINDS, "all"], n=1)
    raise CliError(
        f"unknown kind `{kind}`",
        hint=(f"did you mean `{close[0]}`? " if close else "")
        + f"use one of {', '.join(INSPECT_KINDS)} or all (`tile inspect --list-kinds`)",
        code=ExitCode.USAGE,
    )


def inspect_case(
    case_id: str, kind: str, sel: Selection, *, profile: str | None, verbose: int = 0
) -> int:
    """Print one view (or all) of one case to stdout; 1 when it does not lower or compile."""
    check_kind(kind)
    _, err = make_consoles()
    resolved = load(profile, sel.overrides)
    one = Selection(plugins=sel.plugins, axes=sel.axes, case_ids=[case_id])
    sink, clean = request_views("inspect", resolved, one, kind=kind)
    if any(f.error_type == "UnknownCase" and f.case_id == case_id for f in sink.failures):
        raise _unknown_case(case_id, resolved, sel)
    views = [v for v in sink.views if v.case_id == case_id]
    for view in views:
        if kind == "all":
            sys.stdout.write(f"==> {view.kind} <==\n")
        sys.stdout.write(view.text if view.text.endswith("\n") else view.text + "\n")
    sys.stdout.flush()
    broken, other = split_failures(sink.failures)
    print_failures(err, [*broken, *other], verbose=verbose)
    if other or not clean:
        return int(ExitCode.INFRA)
    if broken:
        return int(ExitCode.FAILED)
    return int(ExitCode.OK)


# ---------------------------------------------------------------- tile build


def claim_outputs(recorder: RunRecorder) -> list[str]:
    """Describe each runner-written file in the manifest; say where a file disagrees."""
    import tile_artifacts as ta

    problems: list[str] = []
    for artifact in recorder.artifacts:
        description = f"{artifact.kind} of {artifact.case_id}" if artifact.case_id else None
        try:
            path = recorder.writer.path(artifact.path, description=description)
            data = path.read_bytes()
        except (ta.ArtifactError, OSError) as exc:
            problems.append(f"the runner reported `{artifact.path}`, which is unusable: {exc}")
            continue
        if (len(data), hashlib.sha256(data).hexdigest()) != (artifact.size_bytes, artifact.sha256):
            problems.append(f"`{artifact.path}` changed after the runner wrote it")
    return problems


def render_build(
    out: Console, err: Console, recorder: RunRecorder, problems: list[str], *, verbose: int
) -> None:
    """The build table on stdout; failures, export notes and the headline on stderr."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from tile_cli._format import fmt_time

    exported = {a.case_id for a in recorder.artifacts if a.kind == "export"}
    counts: dict[str | None, int] = {}
    for artifact in recorder.artifacts:
        counts[artifact.case_id] = counts.get(artifact.case_id, 0) + 1
    if recorder.build_results:
        plain = not out.is_terminal
        table = Table(
            title="build", title_justify="left", header_style="bold",
            box=box.SIMPLE if plain else box.ROUNDED,
        )  # fmt: skip
        for i, col in enumerate(("case", "trace", "lower", "compile", "cache", "export", "files")):
            table.add_column(col, justify="left" if i == 0 else "right", no_wrap=i == 0)
        for r in recorder.build_results:
            p = r.phases
            cache = "-" if p.cache_hit is None else "hit" if p.cache_hit else "miss"
            export = Text("✓", style="green") if r.case_id in exported else Text("-", style="dim")
            table.add_row(
                Text(r.case_id), fmt_time(p.trace_s), fmt_time(p.lower_s),
                fmt_time(p.compile_s), cache, export, str(counts.get(r.case_id, 0)),
            )  # fmt: skip
        out.print(table)
    broken, other = split_failures(recorder.failures)
    print_failures(err, [*broken, *other], verbose=verbose)
    # One line per distinct reason: every Pallas case on a GPU can lack an export the same way.
    reasons: dict[str, list[str]] = {}
    for r in recorder.build_results:
        if r.error:
            reasons.setdefault(r.error, []).append(r.case_id)
    for reason, cases in reasons.items():
        which = cases[0] if len(cases) == 1 else f"{len(cases)} cases"
        err.print(f"note: {which}: {reason}", markup=False, style="yellow")
    notes = set(reasons)
    for log in recorder.diagnostics:
        if log.message not in notes:
            err.print(f"{log.level}: {log.message}", markup=False, style="yellow")
    for problem in problems:
        err.print(f"warning: {problem}", markup=False, style="yellow")
    err.print(recorder.headline(), markup=False)


def build_exit_code(recorder: RunRecorder, interrupted: str | None) -> int:
    """0 all built, 1 a case failed to build, 3 crash/timeout/import error, 130/143 stopped."""
    if interrupted is not None:
        return stopped_code(interrupted)
    refused = usage_failure(recorder.failures)
    if refused is not None:
        raise refused
    broken, other = split_failures(recorder.failures)
    if other:
        return int(ExitCode.INFRA)
    if broken or any(not r.ok for r in recorder.build_results):
        return int(ExitCode.FAILED)
    if not recorder.planned:
        raise no_cases(recorder.filtered)
    return int(ExitCode.OK)
