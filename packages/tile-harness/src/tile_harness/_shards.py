"""Sharded runs: one request split over several runners (here or through srun), one run dir.

The helpers that know srun and GPUs are in `_launchers.py`; this module runs the shards:
a plan runner lists the cases, `shard_cases` splits them, and each shard's session runs on a
thread of its own while the recorder hears everything once.
"""

from __future__ import annotations

import json
import os
import queue
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import tile_protocol as tp
from tile_harness import _launchers as launchers
from tile_harness._errors import CliError, ExitCode
from tile_harness._launchers import LauncherError
from tile_harness._process import LaunchCounter
from tile_harness._requests import derive
from tile_harness._runners import HERE, Via, make_session, runner_python
from tile_harness._sinks import Relay, Sink

if TYPE_CHECKING:
    from tile_config import ResolvedConfig
    from tile_harness._process import Launch
    from tile_harness._record import RunRecorder
    from tile_harness._session import RunnerSession

__all__ = ["ShardedRun", "check_slurm", "previous_costs"]

_GPU_PLATFORMS = frozenset({"gpu", "cuda", "rocm"})


def previous_costs(resolved: ResolvedConfig) -> dict[str, float] | None:
    """Seconds each case took in the latest run (`.tile/latest/report.json`), if there is one.

    A case's cost is its sampling time (median × samples) plus its trace, lower and compile
    times; cases without timings are left out (shard_cases counts them as the mean).
    """
    runs = resolved.resolve_path(resolved.config.output.dir).absolute()
    tile_dir = runs.parent if runs.name == "runs" else runs
    try:
        report = json.loads((tile_dir / "latest" / "report.json").read_text())
        cases = report["cases"]
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return None
    costs: dict[str, float] = {}
    # A malformed entry raises inside the `try` and is skipped: its values are read as Any.
    for case in cast("list[Any]", cases) if isinstance(cases, list) else []:
        try:
            stats: dict[str, Any] = case.get("stats") or {}
            phases: dict[str, Any] = case.get("phases") or {}
            cost = float(stats.get("median") or 0.0) * float(stats.get("n") or 0)
            cost += sum(float(phases.get(k) or 0.0) for k in ("trace_s", "lower_s", "compile_s"))
            if cost > 0:
                costs[str(case["case_id"])] = cost
        except (AttributeError, KeyError, TypeError, ValueError):
            continue
    return costs or None


def check_slurm(resolved: ResolvedConfig, slurm_args: Sequence[str]) -> str:
    """srun's path, once the srun command line is known to be valid (before any run starts)."""
    try:
        srun = launchers.find_srun()
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
    full = launchers.srun_argv(
        runner_argv,
        shard_index=index,
        job_name=job_name,
        options=launchers.SrunOptions(
            partition=launcher.partition,
            time_limit=launcher.time_limit,
            gres=launcher.gres,
            extra_args=[*launcher.extra_args, *slurm_args],
        ),
        inside_allocation=launchers.slurm_job_id(os.environ) is not None,
        srun=srun,
    )
    return full[: len(full) - len(runner_argv)]


class _Merge:
    """What the sessions of one sharded run share: the recorder, the sink in front of it and
    what was said once."""

    def __init__(self, recorder: RunRecorder, sink: Sink) -> None:
        self.recorder = recorder
        self.sink = sink
        self._lock = threading.Lock()
        self._said: set[tuple[str, ...]] = set()

    def first_time(self, key: tuple[str, ...]) -> bool:
        with self._lock:
            if key in self._said:
                return False
            self._said.add(key)
            return True


class _ShardSink(Relay):
    """One session's view of the shared recorder.

    Every runner of the run repeats what does not belong to a case (import errors, plan
    warnings); the recorder gets each once. Only the plan runner's plan reaches it: each
    shard's own plan is a part of that one. With a SLURM job name, each runner's job id is
    looked up (squeue) once it runs.
    """

    def __init__(self, merge: _Merge, *, keep_plan: bool, job_name: str | None) -> None:
        super().__init__(merge.sink)
        self._merge = merge
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
        super().on_launch(launch)

    def on_launch_end(self, launch: Launch) -> None:
        self._find_job()
        super().on_launch_end(launch)

    def on_hello(self, hello: tp.Hello) -> None:
        self.hello = self.hello or hello
        super().on_hello(hello)
        self._find_job()

    def on_plan(self, plan: tp.Plan) -> None:
        if self._keep_plan:
            self.plan = plan
            super().on_plan(plan)

    def on_message(self, message: tp.Message) -> None:
        key: tuple[str, ...] | None = None
        if isinstance(message, tp.Failure) and message.case_id is None:
            key = ("failure", message.phase, message.error_type, message.message)
        elif isinstance(message, tp.Log) and message.case_id is None:
            key = ("log", message.level, message.message)
        if key is None or self._merge.first_time(key):
            super().on_message(message)

    def _find_job(self) -> None:
        launch = self._launch
        if self._job_name is None or self._job_found or launch is None:
            return
        job_id = launchers.squeue_job_id(self._job_name)
        if job_id is None:
            return
        self._job_found = True
        if job_id not in self.job_ids:
            self.job_ids.append(job_id)
            self._merge.recorder.on_slurm_job(launch, job_id)


class ShardedRun:
    """A request split over several runners (here or through srun) that feed one recorder.

    A plan runner lists the cases first (through the same launcher, so it sees the same
    backend); the plan is split with `shard_cases` (balanced by `costs` when known) and each
    shard runs in its own session on its own thread: a crashed shard is restarted and goes
    on while the others never notice.
    """

    def __init__(
        self,
        request: tp.RunRequest,
        recorder: RunRecorder,
        *,
        sink: Sink | None = None,
        costs: Mapping[str, float] | None = None,
        srun: str | None = None,
        slurm_args: Sequence[str] = (),
    ) -> None:
        resolved = recorder.setup.resolved
        self._request = request
        self._resolved = resolved
        self._recorder = recorder
        self._log_dir = recorder.run_dir / "logs"
        self._costs = costs
        self._slurm = resolved.config.launcher.kind == "slurm"
        self._srun = srun
        self._slurm_args = list(slurm_args)
        self._merge = _Merge(recorder, sink or recorder)
        self._numbering = LaunchCounter()
        self._sessions: list[RunnerSession] = []
        self._sinks: list[_ShardSink] = []
        self._stopping = False
        self._lock = threading.Lock()
        self._job_name = f"tile-{recorder.run_id}"
        self._allocation = launchers.slurm_job_id(os.environ)

    def run(self) -> bool:
        """List, split, run every shard to its end; True when no runner died or hung."""
        try:
            return self._run()
        finally:
            if self._slurm:
                ids = [i for sink in self._sinks for i in sink.job_ids]
                self._recorder.results.slurm_job_id = self._allocation or (",".join(ids) or None)

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
        plan_request = derive(self._request, command="list")
        clean = self._session(plan_request, plan_sink).run()
        plan = plan_sink.plan
        if plan is None or not plan.cases or self._stopping:
            return clean
        wanted = self._resolved.config.launcher.shards
        shards = launchers.shard_cases([c.case_id for c in plan.cases], wanted, self._costs)
        devices = self._devices(plan_sink.hello)
        sessions: list[RunnerSession] = []
        for index, case_ids in enumerate(shards):
            sink = _ShardSink(self._merge, keep_plan=False, job_name=self._squeue_name(index))
            shard = tp.Shard(index=index, count=len(shards))
            request = derive(self._request, case_ids=case_ids, shard=shard)
            sessions.append(self._session(request, sink, gpus=devices))
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
        return launchers.visible_gpus({**os.environ, **self._resolved.config.runner.env}, len(gpus))

    def _via(self, shard: tp.Shard | None, gpus: Sequence[str]) -> Via:
        """Through srun, or here with the shard's own GPU."""
        if self._slurm:
            assert self._srun is not None
            name, index = self._job_name_of(None if shard is None else shard.index)
            runner = [runner_python(self._resolved), "-m", "tile_runner"]
            prefix = _srun_prefix(self._resolved, runner, index=index, job_name=name,
                                  slurm_args=self._slurm_args, srun=self._srun)  # fmt: skip
            # A SLURM job may wait in the queue for any time before its runner says hello.
            return Via(tuple(prefix), launchers.srun_env(os.environ), queued=True,
                       exit_signal=launchers.srun_task_signal)  # fmt: skip
        if shard is None:
            return HERE
        try:
            return Via(env=launchers.local_env(shard.index, shard.count, gpus))
        except LauncherError as exc:
            raise CliError(exc.message, hint=exc.hint, code=ExitCode.USAGE) from None

    def _session(
        self, request: tp.RunRequest, sink: _ShardSink, *, gpus: Sequence[str] = ()
    ) -> RunnerSession:
        shard = request.shard
        session = make_session(
            request,
            self._resolved,
            sink,
            log_dir=self._log_dir,
            numbering=self._numbering,
            isolate=self._resolved.config.runner.isolate and shard is not None,
            via=self._via(shard, gpus),
            redactor=self._recorder.writer.redactor,
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
