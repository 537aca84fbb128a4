"""The protocol's version: the major a reader refuses when newer, and the minor's history (what
each one added, so that a reader knows which fields an older runner leaves at their defaults)."""

from __future__ import annotations

__all__ = ["PROTOCOL_MINOR", "PROTOCOL_VERSION"]

PROTOCOL_VERSION = 1
"""Major version: a reader refuses a stream whose major version is newer than its own."""
PROTOCOL_MINOR = 26
"""Minor version: grows when optional fields or message types are added.

1: `Reference.interleaved`, `RunRequest.pin_cpu`, `Hello.pinned_cpu`.
2: `BenchSettings.rounds`, `CaseStart.round`, `BenchResult.round_sizes`.
3: `BenchResult.accounting`, `TestResult.accounting`.
4: command `tune`; `RunRequest.tuning_files`, `RunRequest.tunables`, `RunRequest.units`;
   `CaseInfo.skip`, `CaseInfo.default`; `BenchResult.config`, `TestResult.config` (which
   tunable values ran, and from where).
5: provenance on every runner message (`pid`, `seq`, `token`) and `RunRequest.token`; message
   `state_change` (`StateChange`, `StateDiff`); `Done.restart`; failure status `invalid`
   (set by the CLI for a message that broke the protocol's rules, never sent by a runner).
6: `BenchSettings.cache_bytes`.
7: message `input_file` (a data file a case used; before, a `log` line `input_file NAME PATH`,
   which `upgrade` still reads); `RunRequest.shard` (before, the `TILE_SHARD` environment
   variable). `BenchResult.timer`, `Calibration.timer`, `Failure.phase` and
   `RunRequest.inspect_kind` are typed with the closed sets every runner already kept to.
8: `RunRequest.cache_explain` (before, the `TILE_JAX_CACHE_EXPLAIN` environment variable set
   through `[runner] env`).
9: message `cache_event` (`CacheEvent`: a persistent compile-cache hit, miss or entry not
   stored; before, a `log` line `jax_cache {json}`, which `upgrade` still reads).
10: `RunRequest.pace` (rounds taken in turns with another runner, for `tile bench --against`);
   `StateDiff.kind` `stdio`, `timers`, `recursion_limit`, `trace_hooks`, `warnings`, `umask`
   and `rlimits` (more of the process state a case can leave changed).
11: `BenchResult.kernels` (`KernelTime`: each device kernel of one call, its time and share,
   from the CUPTI timer's own session).
12: `RunRequest.profile` (`ProfileSettings`: `tile profile` asks a build runner for a trace,
   a profiler range for Nsight Compute and the kernel's source, per case).
13: `RunRequest.modes` (`--mode`: a kernel's forward, its backward alone, or both; a mode
   other than `fwd` is part of the case id).
14: `RunRequest.user_tuning_files` (the user cache's tuning files, read only when asked);
   `ConfigSource` `user_cache` and `shipped`; `ConfigInfo.note` (why a case runs the values
   it runs when that is not plain: a default the constraint rules out, a tuning entry not used).
15: message `progress` (`Progress`: the step a case is in, for the screen), sent only when
   `RunRequest.progress` asks for it.
16: `DeviceInfo.model` (a CPU's model name and core count: every CPU's kind is `cpu`);
   `Plan.kernels` (`KernelInfo`, `TunableInfo`: each kernel's modes, tunables and test cases,
   sent for `list` only).
17: `CaseInfo.op` and `BenchResult.op` (`OpInfo`: the op a kernel implements, its
   implementation label and whether it is the op's baseline; kernels of one op are shown
   side by side).
18: `RunRequest.capture` (`--from MODULE:FUNCTION`: the runner traces a program and plans the
   kernel calls it makes) and `RunRequest.cases` (`CaseSpec`: cases named by kernel and axis
   values); `CaseInfo.captured`, `BenchResult.captured`, `TestResult.captured`; usage error
   types `CaptureImport`, `CaptureTrace`, `CaptureNone`.
19: `RunRequest.compile_ahead` (default False: each case made ready in its turn, as before
   and as a runner restarted after a crash is asked, so that the case that crashed it is the
   one in flight); with it, `progress` messages for the steps of a batch, asked or not.
20: `Progress.config` (on a case's `inputs` step: the configuration it runs with, for the
   screen).
21: `RunRequest.rungs`, the file `NextRung`, the messages `rung` (`Rung`) and `rung_done`
   (`RungDone`): one tune runner times every rung, its executables kept, instead of a fresh
   runner reloading them for each rung.
22: `KernelInfo.tuned_modes` (the modes a kernel's tunables change, for `tile list`).
23: `RunRequest.prior` (`PriorSamples`: what earlier runner processes of the same run
   measured of a case, `[bench] processes`) and `BenchResult.process_sizes`.
24: `StateDiff.kept` (an environment variable a module set up while a case first imported
   it, left as it is: before, put back, which broke jax's Mosaic GPU for every later case).
25: usage error type `TunableValue` (a `--tunable` value that is not among the tunable's values;
   before, each case of the kernel failed with it).
26: `BenchSettings.cpu_target_precision` (the target on a CPU, where it differs:
   `[bench] target_precision = 0`, the default, is 2% there and 1% elsewhere).
"""
