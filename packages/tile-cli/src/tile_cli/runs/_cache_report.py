"""`tile bench --cache-report`: JAX's compilation cache around one run, in the run directory.

Before the first runner starts and after the last one ends, the cache directory is counted
(entries, bytes, oldest, newest). The runners report each persistent-cache hit and miss, with
the reason for the miss, as `cache_event` messages (tile_runner/_cache_log.py) when their
request asks (`RunRequest.cache_explain`, which every launcher and shard passes on). All of it
lands in `diagnostics/jax_cache.json` (`tile.jax_cache`), listed in the manifest.
"""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

import tile_protocol as tp
from tile_harness import (
    CacheLocation,
    CliError,
    ColdWarmRun,
    ProcessWatch,
    cache_event_record,
    compile_cache_location,
    os_failure,
    snapshot,
)
from tile_protocol.format import format_bytes, format_seconds

if TYPE_CHECKING:
    from rich.console import Console

    import tile_artifacts as ta
    from tile_config import ResolvedConfig
    from tile_harness import RunRecorder, Sink

__all__ = ["CacheReport"]

_SHOWN_MISSES: Final = 8


def _events(
    events: Sequence[tp.CacheEvent], role: ta.cache.ProcessRole
) -> list[ta.cache.CacheEvent]:
    return [cache_event_record(event, role) for event in events]


class CacheReport:
    """One run's cache report: snapshot before, events during, snapshot after, the file.

    Made before the run directory, so that a report it cannot make (cache off, cold process
    with shards) is a usage error that leaves nothing behind.
    """

    def __init__(self, resolved: ResolvedConfig, *, cold_process: bool) -> None:
        location = compile_cache_location(resolved)
        if not location.enabled:
            raise CliError(
                "--cache-report and --cold-process need JAX's compilation cache, which "
                "`[runner] compile_cache` turns off",
                hint="drop --no-compile-cache (or set `[runner] compile_cache = true`)",
            )
        launcher = resolved.config.launcher
        if cold_process and (
            launcher.kind != "local" or launcher.shards > 1 or resolved.config.runner.isolate
        ):
            raise CliError(
                "--cold-process runs exactly two runners, one after the other, on this machine",
                hint="drop --isolate, --shards and --launcher slurm for this run",
            )
        self._resolved = resolved
        self.cold_process = cold_process
        self.location = location
        self._scratch: Path | None = None
        self.before = snapshot(location.path)
        self._between: ta.cache.CacheSnapshot | None = None
        self.session: ColdWarmRun | None = None
        self.doc: ta.cache.JaxCacheDoc | None = None
        self.problem: str | None = None

    def cold_warm(self, request: tp.RunRequest, recorder: RunRecorder, sink: Sink) -> ColdWarmRun:
        """The two-runner session of `--cold-process`, on a new empty directory."""
        self._scratch = _empty_directory(self.location.path)
        self.location = CacheLocation(
            self._scratch,
            f"--cold-process: an empty directory beside {self.location.path} (removed after)",
            True,
        )
        self.before = snapshot(self._scratch)

        def between() -> None:
            self._between = snapshot(self.location.path)

        self.session = ColdWarmRun(request, recorder, cache_dir=self._scratch, between=between,
                                   sink=sink)  # fmt: skip
        return self.session

    def write(self, recorder: RunRecorder, report: ta.Report) -> None:
        """Snapshot the cache again; write `diagnostics/jax_cache.json` under the report's run
        status (the recorder calls this just before it writes the report and manifest).

        Never raises for a cache or disk problem: the run directory must still be finalized,
        so the problem is kept for `render` to show instead.
        """
        import tile_artifacts as ta

        try:
            self._write(recorder, report)
        except (CliError, OSError, ta.ArtifactError) as exc:
            self.problem = getattr(exc, "message", None) or str(exc)
        finally:
            if self._scratch is not None:
                shutil.rmtree(self._scratch, ignore_errors=True)

    def _write(self, recorder: RunRecorder, report: ta.Report) -> None:
        import tile_artifacts as ta

        after = snapshot(self.location.path)
        processes: list[ta.cache.CacheProcess] = []
        cases: list[ta.cache.ColdWarmCase] = []
        if self.session is not None:
            cold, warm = self.session.cold, self.session.warm
            events = [*_events(cold.cache_events, "cold"), *_events(warm.cache_events, "warm")]
            processes = [
                _process(cold, events, self._between or after),
                _process(warm, events, after),
            ]
            cases = _cold_warm_cases(cold, warm)
        else:
            events = _events(recorder.results.cache_events, "run")
        kinds = Counter(e.event for e in events)
        self.doc = ta.cache.JaxCacheDoc(
            producer=recorder.writer.producer,
            run=report.run,
            cache_dir=str(self.location.path),
            origin=self.location.origin,
            cold_process=self.cold_process,
            before=self.before,
            after=after,
            hit_count=kinds["hit"],
            miss_count=kinds["miss"],
            events=events,
            processes=processes,
            cases=cases,
        )
        recorder.writer.write_json(ta.JAX_CACHE_JSON, self.doc)

    def render(self, err: Console, *, verbose: int) -> None:
        """A few lines on stderr: the cache, before and after, misses by reason, cold vs warm."""
        if self.problem is not None:
            err.print(f"warning: no cache report: {self.problem}", markup=False, style="yellow")
        doc = self.doc
        if doc is None:
            return
        for line in _summary_lines(doc, verbose=verbose):
            err.print(line, markup=False)


def _empty_directory(cache: Path) -> Path:
    """A new private directory beside the cache (same disk, so reads cost the same)."""
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=f".{cache.name}-cold-", dir=cache.parent))
    except OSError:
        try:
            return Path(tempfile.mkdtemp(prefix="tile-cold-cache-"))
        except OSError as exc:
            raise os_failure("create an empty cache directory for --cold-process", exc,
                             hint="check TMPDIR and the permissions of tile's cache directory",
                             ) from None  # fmt: skip


def _process(
    watch: ProcessWatch, events: Sequence[ta.cache.CacheEvent], after: ta.cache.CacheSnapshot
) -> ta.cache.CacheProcess:
    import tile_artifacts as ta
    from tile_harness import launch_id

    mine = [e for e in events if e.process == watch.role]
    return ta.cache.CacheProcess(
        role=watch.role,
        command_id=launch_id(watch.launches[0]) if watch.launches else None,
        time_to_first_result_s=watch.time_to_first_result_s,
        wall_s=watch.wall_s,
        hits=sum(e.event == "hit" for e in mine),
        misses=sum(e.event == "miss" for e in mine),
        cache_after=after,
    )


def _cold_warm_cases(cold: ProcessWatch, warm: ProcessWatch) -> list[ta.cache.ColdWarmCase]:
    import tile_artifacts as ta

    cases: list[ta.cache.ColdWarmCase] = []
    for case_id, was in cold.phases.items():
        now = warm.phases.get(case_id)
        saved = None
        if now is not None and was.compile_s is not None and now.compile_s is not None:
            saved = was.compile_s - now.compile_s
        cases.append(
            ta.cache.ColdWarmCase(
                case_id=case_id,
                cold_compile_s=was.compile_s,
                warm_compile_s=None if now is None else now.compile_s,
                compile_saved_s=saved,
                cold_cache_hit=was.cache_hit,
                warm_cache_hit=None if now is None else now.cache_hit,
            )
        )
    return cases


def _summary_lines(doc: ta.cache.JaxCacheDoc, *, verbose: int) -> list[str]:
    b, a = doc.before, doc.after
    lines = [
        f"jax cache: {doc.cache_dir} ({doc.origin})",
        f"  {b.entries} entries ({format_bytes(b.total_bytes)}) before, {a.entries} "
        f"({format_bytes(a.total_bytes)}) after; {doc.miss_count} misses, {doc.hit_count} hits",
    ]
    misses = [e for e in doc.events if e.event == "miss"]
    codes = Counter(e.code or "unexplained" for e in misses)
    if codes:
        lines.append("  misses: " + ", ".join(f"{n} {code}" for code, n in codes.most_common()))
    # A first compile explains itself; a changed key is what a user needs to see.
    shown = misses if verbose else [e for e in misses if e.code != "new_program"][:_SHOWN_MISSES]
    for event in shown:
        lines.append(f"  miss {event.module} ({event.case_id or 'no case'}): {event.reason}")
    if len(shown) < len(misses):
        lines.append("  every miss with its reason: -v, or diagnostics/jax_cache.json")
    for process in doc.processes:
        lines.append(
            f"  {process.role} process: first result after "
            f"{format_seconds(process.time_to_first_result_s)}, {process.misses} misses, "
            f"{process.hits} hits"
        )
    for case in doc.cases:
        lines.append(
            f"  {case.case_id}: compile {format_seconds(case.cold_compile_s)} cold, "
            f"{format_seconds(case.warm_compile_s)} warm, saved {format_seconds(case.compile_saved_s)}"
        )
    return lines
