"""`tile list|bench|test`: resolve config, drive runners, record, render, pick the exit code."""

from __future__ import annotations

import contextlib
import json as _json
import os
import queue
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import tile_protocol as tp
from tile_cli import _signals as signals
from tile_cli._errors import CliError, ExitCode, no_cases, usage_failure
from tile_cli._launchers import (
    LauncherError,
    find_srun,
    local_env,
    shard_cases,
    slurm_job_id,
    squeue_job_id,
    srun_argv,
    srun_env,
    srun_task_signal,
    visible_gpus,
)
from tile_cli._results import failure_hints, render_results, render_timing
from tile_cli._session import STARTUP_TIMEOUT_S, Launch, LaunchCounter, RunnerSession, Sink
from tile_cli._settings import Selection, build_request, load, runner_python
from tile_cli._ui import Ui, make_consoles
from tile_cli._undone import settle, undone_lines

if TYPE_CHECKING:
    from rich.console import Console

    import tile_artifacts as ta
    from tile_cli._cache_report import CacheReport
    from tile_cli._record import RunRecorder
    from tile_config import ResolvedConfig

__all__ = ["ShardedRun", "ask_runner", "list_cases", "previous_costs", "run_suite"]

_GPU_PLATFORMS = frozenset({"gpu", "cuda", "rocm"})


class _Collect:
    """A sink that only keeps what a plan-only run says (for `tile list`)."""

    def __init__(self) -> None:
        self.plan: tp.Plan | None = None
        self.failures: list[tp.Failure] = []
        self.warnings: list[tp.Log] = []
        self.hello: tp.Hello | None = None
        self.device: tp.DeviceReport | None = None

    def on_launch(self, launch: Launch) -> None: ...
    def on_launch_end(self, launch: Launch) -> None: ...
    def on_case_start(self, start: tp.CaseStart) -> None: ...
    def on_noise(self, event: tp.BadLine | tp.UnknownMessage) -> None: ...

    def on_hello(self, hello: tp.Hello) -> None:
        self.hello = hello

    def on_plan(self, plan: tp.Plan) -> None:
        self.plan = plan

    def on_message(self, message: tp.Message) -> None:
        if isinstance(message, tp.Failure):
            self.failures.append(message)
        elif isinstance(message, tp.Log) and message.level in ("warning", "error"):
            self.warnings.append(message)
        elif isinstance(message, tp.DeviceReport):
            self.device = message


def run_without_directory(request: tp.RunRequest, resolved: ResolvedConfig, sink: Sink) -> bool:
    """Drive a runner for a command that writes no run directory; logs go to a temp dir."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix=f"tile-{request.command}-") as tmp:
        session = RunnerSession(
            request,
            python=runner_python(resolved),
            cwd=Path.cwd(),
            env_overrides=resolved.config.runner.env,
            log_dir=Path(tmp),
            sink=sink,
            case_timeout=resolved.config.runner.case_timeout,
            timeout=resolved.config.runner.timeout,
        )
        return session.run()


def ask_runner(
    command: str, sel: Selection, profile: str | None, **fields: object
) -> tuple[_Collect, bool]:
    """Run a runner for a command that measures nothing (list, device); collect its answer."""
    import msgspec

    resolved = load(profile, sel.overrides)
    request = msgspec.structs.replace(build_request(command, resolved, sel, None), **fields)
    sink = _Collect()
    return sink, run_without_directory(request, resolved, sink)


def list_cases(sel: Selection, *, profile: str | None, as_json: bool) -> int:
    """Print every case the runner would run, grouped by kernel."""
    out, err = make_consoles()
    sink, clean = ask_runner("list", sel, profile)
    cases = sink.plan.cases if sink.plan else []
    if (usage := usage_failure(sink.failures)) is not None:
        raise usage
    if as_json:
        for case in cases:
            print(
                _json.dumps({"case_id": case.case_id, "kernel": case.kernel, "params": case.params})
            )
    else:
        current = None
        for case in cases:
            if case.kernel != current:
                current = case.kernel
                out.print(case.kernel, style="bold", markup=False)
            out.print(f"  {case.case_id}", markup=False)
        err.print(f"{len(cases)} cases", style="dim")
    for failure in sink.failures:
        err.print(f"error: {failure.phase}: {failure.message}", markup=False)
    for hint in failure_hints(sink.failures):
        err.print(f"hint: {hint}", markup=False)
    if not clean or sink.failures:
        return int(ExitCode.INFRA)
    if not cases and (sel.filters or sel.kernels):
        raise no_cases(filtered=True)
    return int(ExitCode.OK)


class _Stoppable(Protocol):
    def run(self) -> bool: ...
    def stop(self) -> None: ...


def run_suite(
    command: str,
    sel: Selection,
    *,
    profile: str | None,
    output_dir: Path | None,
    as_json: bool,
    verbose: int,
    compare: Path | None = None,
    slurm_args: Sequence[str] = (),
    cache_report: bool = False,
    cold_process: bool = False,
) -> int:
    """Run bench, test or build over every selected case; always leave a complete run directory.

    With `[launcher] shards` > 1 or `kind = "slurm"` the cases are split over several runners
    (here or through srun) that feed one run directory; `slurm_args` come after
    `[launcher] extra_args` on every srun command line. With `compare` (a baseline file or
    directory) the run is compared with it as `[compare]` of the configuration says.
    `cache_report` adds `diagnostics/jax_cache.json`; `cold_process` runs the cases twice in
    fresh runners, first on an empty compilation cache (tile_cli/_cache_report.py).
    """
    from tile_cli._compare import CompareSettings
    from tile_cli._record import RunRecorder, open_run_directory

    out, err = make_consoles()
    resolved = load(profile, sel.overrides)
    verbose = verbose or resolved.config.output.verbose  # `-v` wins over TILE_VERBOSE
    compare_with = (
        CompareSettings.from_config(compare, resolved.config.compare)
        if compare is not None
        else None
    )
    watch: CacheReport | None = None
    if cache_report or cold_process:
        from tile_cli._cache_report import CacheReport

        watch = CacheReport(resolved, cold_process=cold_process)
    launcher = resolved.config.launcher
    sharded = launcher.kind == "slurm" or launcher.shards > 1
    costs: dict[str, float] | None = None
    srun: str | None = None
    if sharded:
        # Before the new run directory becomes `.tile/latest`.
        costs = previous_costs(resolved)
        if launcher.kind == "slurm":
            srun = _check_slurm(resolved, slurm_args)
    build_request(command, resolved, sel, None)  # bad flags refused before a directory exists
    # From here a signal waits until the session runs, where it is caught and the run
    # directory finalized (an error before that ends tile anyway).
    hold = contextlib.ExitStack()
    hold.enter_context(signals.held())
    run_dir, writer = open_run_directory(command, resolved, output_dir)
    request = build_request(command, resolved, sel, run_dir)
    ui = Ui(err, verbose=verbose, quiet=as_json)
    recorder = RunRecorder(
        command, resolved, writer, run_dir, ui=ui, stream_json=as_json, argv=sys.argv
    )
    recorder.filtered = bool(sel.filters or sel.kernels or sel.case_ids or sel.axes)
    session: _Stoppable
    if watch is not None:
        recorder.before_final.append(lambda report: watch.write(recorder, report))
    if watch is not None and watch.cold_process:
        session = watch.cold_warm(request, recorder, run_dir / "logs")
    elif sharded:
        session = ShardedRun(
            request,
            resolved,
            recorder,
            log_dir=run_dir / "logs",
            costs=costs,
            srun=srun,
            slurm_args=slurm_args,
        )
    else:
        session = RunnerSession(
            request,
            python=runner_python(resolved),
            cwd=Path.cwd(),
            env_overrides=resolved.config.runner.env,
            log_dir=run_dir / "logs",
            sink=recorder,
            case_timeout=resolved.config.runner.case_timeout,
            timeout=resolved.config.runner.timeout,
            isolate=resolved.config.runner.isolate,
        )
    interrupted: str | None = None
    try:
        hold.close()
        signals.raise_pending()
        session.run()
    except KeyboardInterrupt:
        interrupted = "interrupted by Ctrl-C"
        session.stop()
    except BaseException as exc:
        if type(exc).__name__ == "_Terminated":
            interrupted = "terminated by SIGTERM"
            session.stop()
        else:
            ui.stop()
            recorder.finalize(error=str(exc) if isinstance(exc, CliError) else repr(exc))
            raise
    finally:
        ui.stop()
    if interrupted is None:
        settle(recorder)  # no planned case goes unaccounted for
    if command == "build":
        from tile_cli._build import build_exit_code, claim_outputs, render_build

        problems = claim_outputs(recorder)
        recorder.finalize(interrupted=interrupted, judge=True)
        if not as_json:
            render_build(out, err, recorder, problems, verbose=verbose)
        _render_undone(err, recorder)
        if not as_json:
            err.print(f"run directory: {_display(run_dir)}", markup=False, style="dim")
        if (fault := recorder.write_fault()) is not None:
            raise fault
        return build_exit_code(recorder, interrupted)
    report, comparison = recorder.finalize(
        interrupted=interrupted,
        compare_with=compare_with if interrupted is None else None,
        judge=True,
    )
    if command == "bench" and interrupted is None and resolved.config.history.enabled:
        from tile_cli._history import record_run

        record_run(resolved, report, run_dir, err)
    # A bad `-a` value is one usage error (raised by _finish), not a failure per kernel.
    if not as_json and usage_failure(recorder.failures) is None:
        render_results(out, err, recorder, command, verbose=verbose)
    _render_undone(err, recorder)
    if verbose >= 1 and not as_json:
        render_timing(out, err, recorder, report.timing)
    if watch is not None and not as_json:
        watch.render(err, verbose=verbose)
    return _finish(out, err, recorder, comparison, as_json=as_json, run_dir=run_dir)


def _finish(
    out: Console,
    err: Console,
    recorder: RunRecorder,
    comparison: ta.ComparisonDoc | None,
    *,
    as_json: bool,
    run_dir: Path,
) -> int:
    """The comparison's table and verdict, the run directory, and the exit code decided."""
    from tile_cli._outcome import say_outcome

    outcome = recorder.outcome
    assert outcome is not None
    if comparison is not None and not as_json:
        from tile_cli._compare import render_comparison

        render_comparison(comparison, out, plain=not out.is_terminal)
        if not recorder.failures and not recorder.failed_checks:
            say_outcome(err, outcome)
    if not as_json:
        err.print(f"run directory: {_display(run_dir)}", markup=False, style="dim")
    if (fault := recorder.write_fault()) is not None:
        raise fault
    if (usage := usage_failure(recorder.failures)) is not None:
        raise usage
    if outcome.code == ExitCode.USAGE and not recorder.planned:
        raise no_cases(recorder.filtered)
    return outcome.code


def _display(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _render_undone(err: Console, recorder: RunRecorder) -> None:
    """How many planned cases were left undone and why (stderr, also with `--json`)."""
    for line in undone_lines(len(recorder.planned), recorder.failures):
        err.print(line, markup=False, style="red" if line.startswith("error") else None)


# ---------------------------------------------------------------- sharded runs


def previous_costs(resolved: ResolvedConfig) -> dict[str, float] | None:
    """Seconds each case took in the latest run (`.tile/latest/report.json`), if there is one.

    A case's cost is its sampling time (median × samples) plus its trace, lower and compile
    times; cases without timings are left out (shard_cases counts them as the mean).
    """
    runs = resolved.resolve_path(resolved.config.output.dir).absolute()
    tile_dir = runs.parent if runs.name == "runs" else runs
    try:
        report = _json.loads((tile_dir / "latest" / "report.json").read_text())
        cases = report["cases"]
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return None
    costs: dict[str, float] = {}
    for case in cases if isinstance(cases, list) else []:
        try:
            stats = case.get("stats") or {}
            phases = case.get("phases") or {}
            cost = float(stats.get("median") or 0.0) * float(stats.get("n") or 0)
            cost += sum(float(phases.get(k) or 0.0) for k in ("trace_s", "lower_s", "compile_s"))
            if cost > 0:
                costs[str(case["case_id"])] = cost
        except (AttributeError, KeyError, TypeError, ValueError):
            continue
    return costs or None


def _check_slurm(resolved: ResolvedConfig, slurm_args: Sequence[str]) -> str:
    """srun's path, once the srun command line is known to be valid (before any run starts)."""
    try:
        srun = find_srun()
        _srun_prefix(resolved, [sys.executable], index=0, job_name="tile-check",
                     slurm_args=slurm_args, srun=srun)  # fmt: skip
    except LauncherError as exc:
        raise CliError(exc.message, hint=exc.hint, code=ExitCode.USAGE) from None
    return srun


def _srun_prefix(
    resolved: ResolvedConfig,
    runner_argv: list[str],
    *,
    index: int,
    job_name: str,
    slurm_args: Sequence[str],
    srun: str,
) -> list[str]:
    """The srun argument vector up to and including `--`, for one runner of one shard."""
    launcher = resolved.config.launcher
    full = srun_argv(
        runner_argv,
        shard_index=index,
        job_name=job_name,
        partition=launcher.partition,
        time_limit=launcher.time_limit,
        gres=launcher.gres,
        extra_args=[*launcher.extra_args, *slurm_args],
        inside_allocation=slurm_job_id(os.environ) is not None,
        srun=srun,
    )
    return full[: len(full) - len(runner_argv)]


class _Merge:
    """What the sessions of one sharded run share: the recorder and what was said once."""

    def __init__(self, recorder: RunRecorder) -> None:
        self.recorder = recorder
        self._lock = threading.Lock()
        self._said: set[tuple[str, ...]] = set()

    def first_time(self, key: tuple[str, ...]) -> bool:
        with self._lock:
            if key in self._said:
                return False
            self._said.add(key)
            return True


class _ShardSink:
    """One session's view of the shared recorder.

    Every runner of the run repeats what does not belong to a case (import errors, plan
    warnings); the recorder gets each once. Only the plan runner's plan reaches it: each
    shard's own plan is a part of that one. With a SLURM job name, each runner's job id is
    looked up (squeue) once it runs.
    """

    def __init__(self, merge: _Merge, *, keep_plan: bool, job_name: str | None) -> None:
        self._merge = merge
        self._recorder = merge.recorder
        self._keep_plan = keep_plan
        self._job_name = job_name
        self._launch: Launch | None = None
        self._job_found = False
        self.plan: tp.Plan | None = None
        self.hello: tp.Hello | None = None
        self.job_ids: list[str] = []

    def on_launch(self, launch: Launch) -> None:
        self._launch = launch
        self._job_found = False
        self._recorder.on_launch(launch)

    def on_launch_end(self, launch: Launch) -> None:
        self._find_job()
        self._recorder.on_launch_end(launch)

    def on_hello(self, hello: tp.Hello) -> None:
        self.hello = self.hello or hello
        self._recorder.on_hello(hello)
        self._find_job()

    def on_plan(self, plan: tp.Plan) -> None:
        if self._keep_plan:
            self.plan = plan
            self._recorder.on_plan(plan)

    def on_case_start(self, start: tp.CaseStart) -> None:
        self._recorder.on_case_start(start)

    def on_message(self, message: tp.Message) -> None:
        key: tuple[str, ...] | None = None
        if isinstance(message, tp.Failure) and message.case_id is None:
            key = ("failure", message.phase, message.error_type, message.message)
        elif isinstance(message, tp.Log) and message.case_id is None:
            key = ("log", message.level, message.message)
        if key is None or self._merge.first_time(key):
            self._recorder.on_message(message)

    def on_noise(self, event: tp.BadLine | tp.UnknownMessage) -> None:
        self._recorder.on_noise(event)

    def _find_job(self) -> None:
        launch = self._launch
        if self._job_name is None or self._job_found or launch is None:
            return
        job_id = squeue_job_id(self._job_name)
        if job_id is None:
            return
        self._job_found = True
        if job_id not in self.job_ids:
            self.job_ids.append(job_id)
            self._recorder.on_slurm_job(launch, job_id)


class ShardedRun:
    """A request split over several runners (here or through srun) that feed one recorder.

    A plan runner lists the cases first (through the same launcher, so it sees the same
    backend); the plan is split with `shard_cases` (balanced by `costs` when known) and each
    shard runs in its own `RunnerSession` on its own thread: a crashed shard is restarted and
    goes on while the others never notice.
    """

    def __init__(
        self,
        request: tp.RunRequest,
        resolved: ResolvedConfig,
        recorder: RunRecorder,
        *,
        log_dir: Path,
        costs: Mapping[str, float] | None = None,
        srun: str | None = None,
        slurm_args: Sequence[str] = (),
    ) -> None:
        self._request = request
        self._resolved = resolved
        self._recorder = recorder
        self._log_dir = log_dir
        self._costs = costs
        self._slurm = resolved.config.launcher.kind == "slurm"
        self._srun = srun
        self._slurm_args = list(slurm_args)
        self._merge = _Merge(recorder)
        self._numbering = LaunchCounter()
        self._sessions: list[RunnerSession] = []
        self._sinks: list[_ShardSink] = []
        self._stopping = False
        self._lock = threading.Lock()
        self._job_name = f"tile-{recorder.run_id}"
        self._allocation = slurm_job_id(os.environ)

    def run(self) -> bool:
        """List, split, run every shard to its end; True when no runner died or hung."""
        try:
            return self._run()
        finally:
            if self._slurm:
                ids = [i for sink in self._sinks for i in sink.job_ids]
                self._recorder.slurm_job_id = self._allocation or (",".join(ids) or None)

    def stop(self) -> None:
        """Stop every runner and start no other."""
        with self._lock:
            self._stopping = True
            sessions = list(self._sessions)
        for session in sessions:
            session.stop()

    # ---------------------------------------------------------------- internals

    def _run(self) -> bool:
        plan_sink = _ShardSink(self._merge, keep_plan=True, job_name=self._squeue_name(None))
        plan_request = _replace(self._request, command="list")
        clean = self._session(plan_request, plan_sink, shard=None).run()
        plan = plan_sink.plan
        if plan is None or not plan.cases or self._stopping:
            return clean
        wanted = self._resolved.config.launcher.shards
        shards = shard_cases([c.case_id for c in plan.cases], wanted, self._costs)
        devices = self._devices(plan_sink.hello)
        sessions: list[RunnerSession] = []
        for index, case_ids in enumerate(shards):
            sink = _ShardSink(self._merge, keep_plan=False, job_name=self._squeue_name(index))
            request = _replace(self._request, case_ids=case_ids)
            try:
                env = None if self._slurm else local_env(index, len(shards), devices)
            except LauncherError as exc:
                raise CliError(exc.message, hint=exc.hint, code=ExitCode.USAGE) from None
            sessions.append(self._session(request, sink, shard=(index, len(shards)), env=env))
        return self._run_all(sessions) and clean

    def _job_name_of(self, shard: int | None) -> tuple[str, int]:
        """srun's job name and index for a shard (None: the plan runner): `NAME.i`, `NAME-plan.0`."""
        return (self._job_name, shard) if shard is not None else (f"{self._job_name}-plan", 0)

    def _squeue_name(self, shard: int | None) -> str | None:
        """The job name to ask squeue for the job id; None when local or inside an allocation."""
        if not self._slurm or self._allocation is not None:
            return None
        name, index = self._job_name_of(shard)
        return f"{name}.{index}"

    def _devices(self, hello: tp.Hello | None) -> list[str]:
        """The GPUs to hand out to local shards, one each; none when the runners use the CPU."""
        if self._slurm or hello is None:
            return []
        gpus = [d for d in hello.devices if d.platform.lower() in _GPU_PLATFORMS]
        if not gpus:
            return []
        return visible_gpus({**os.environ, **self._resolved.config.runner.env}, len(gpus))

    def _session(
        self,
        request: tp.RunRequest,
        sink: _ShardSink,
        *,
        shard: tuple[int, int] | None,
        env: Mapping[str, str] | None = None,
    ) -> RunnerSession:
        cfg = self._resolved.config
        python = runner_python(self._resolved)
        overrides = dict(cfg.runner.env)
        if shard is not None:
            overrides["TILE_SHARD"] = f"{shard[0]}/{shard[1]}"
        overrides.update(env or {})
        prefix: list[str] = []
        environ: dict[str, str] | None = None
        if self._slurm:
            assert self._srun is not None
            name, index = self._job_name_of(None if shard is None else shard[0])
            prefix = _srun_prefix(self._resolved, [python, "-m", "tile_runner"], index=index,
                                  job_name=name, slurm_args=self._slurm_args,
                                  srun=self._srun)  # fmt: skip
            environ = srun_env(os.environ)
        session = RunnerSession(
            request,
            python=python,
            cwd=Path.cwd(),
            env_overrides=overrides,
            log_dir=self._log_dir,
            sink=sink,
            case_timeout=cfg.runner.case_timeout,
            timeout=cfg.runner.timeout,
            isolate=cfg.runner.isolate and shard is not None,
            numbering=self._numbering,
            argv_prefix=prefix,
            environ=environ,
            # A SLURM job may wait in the queue for any time before its runner says hello.
            startup_timeout=None if self._slurm else STARTUP_TIMEOUT_S,
            exit_signal=srun_task_signal if self._slurm else None,
        )
        with self._lock:
            self._sessions.append(session)
            self._sinks.append(sink)
            if self._stopping:
                session.stop()
        return session

    def _run_all(self, sessions: list[RunnerSession]) -> bool:
        """Every shard's session on its own thread; the first error stops them all."""
        ends: queue.Queue[tuple[bool, BaseException | None]] = queue.Queue()

        def work(session: RunnerSession) -> None:
            try:
                ends.put((session.run(), None))
            except BaseException as exc:  # handed to the main thread
                ends.put((False, exc))

        threads = [
            threading.Thread(target=work, args=(s,), name=f"tile-shard-{i}", daemon=True)
            for i, s in enumerate(sessions)
        ]
        for thread in threads:
            thread.start()
        clean = True
        try:
            for _ in threads:
                ok, exc = _wake_for_signals(ends)
                if exc is not None:
                    raise exc
                clean = clean and ok
        except BaseException:
            self.stop()
            for thread in threads:
                thread.join()
            raise
        for thread in threads:
            thread.join()
        return clean


def _wake_for_signals(
    ends: queue.Queue[tuple[bool, BaseException | None]],
) -> tuple[bool, BaseException | None]:
    """The next shard's end. The wait wakes every so often: a Ctrl-C that Linux hands to a
    shard's thread (which starts processes, so it cannot block signals) is only acted on
    when the main thread runs again."""
    while True:
        try:
            return ends.get(timeout=0.25)
        except queue.Empty:
            continue


def _replace(request: tp.RunRequest, **changes: object) -> tp.RunRequest:
    import msgspec

    return msgspec.structs.replace(request, **changes)
