"""What the CLI tells a runner: the request it starts with, and (`tile tune`) its next rung.

Both are tagged by their `type` field as the stream's messages are (`_messages.py`), so that
one decoder reads any of them.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from tile_protocol._bench_settings import BenchSettings
from tile_protocol._parts import (
    Accounting,
    CaseSpec,
    DownloadSpec,
    Peaks,
    ProfileSettings,
    Shard,
    TestSettings,
)
from tile_protocol._sets import Command, InspectKind, ModeChoice
from tile_protocol._versions import PROTOCOL_VERSION

__all__ = ["NextRung", "PriorSamples", "RunRequest"]


class PriorSamples(msgspec.Struct, frozen=True, kw_only=True):
    """What one earlier runner process of the same run measured of a case (`RunRequest.prior`,
    protocol 1.23): its samples in the order taken, its interleaved reference's (None: it had
    none), its rounds' sizes (None: one round) and its time accounting."""

    samples: list[float]
    reference: list[float] | None = None
    round_sizes: list[int] | None = None
    accounting: Accounting | None = None
    """Where that process's time on the case went: the last process's result adds it to its
    own, so that the run's accounting covers every process."""


class RunRequest(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", tag="run_request"):
    """What the CLI asks one runner process to do (tagged by its `type` field, as every
    message is)."""

    protocol_version: int = PROTOCOL_VERSION
    command: Command
    modules: list[str] = []
    paths: list[str] = []
    plugins: list[str] | None = None
    project_root: str | None = None
    filters: list[str] = []
    kernels: list[str] = []
    case_ids: list[str] | None = None
    axes: dict[str, list[str]] = {}
    bench: BenchSettings = BenchSettings()
    test: TestSettings = TestSettings()
    peaks: Peaks | None = None
    downloads: dict[str, DownloadSpec] = {}
    output_dir: str | None = None
    jax_cache_dir: str | None = None
    inspect_kind: InspectKind | Literal["all"] | None = None
    """The view `inspect` shows; `all` (or None) shows every kind."""
    calibrate: bool = False
    # Run on one CPU core with XLA's CPU backend single-threaded (`[runner] pin_cpu`).
    pin_cpu: bool = False
    tuning_files: list[str] = []
    user_tuning_files: list[str] = []
    """Tuning files of the user cache (`[tune] user_cache`), below `tuning_files` (the
    project's): a configuration from them is recorded as `user_cache`."""
    """Tuning files (`tile tune` writes them) whose entries choose kernels' tunable values."""
    tunables: dict[str, str] = {}
    """Tunable values that override default and tuned ones, for every kernel that has them."""
    units: bool = False
    """Plan one unit per configuration of each case's tunables (`tune` always does)."""
    shard: Shard | None = None
    """The part of a sharded run this runner serves; None when it serves the whole run."""
    cache_explain: bool = False
    """Send the persistent compile cache's hits, misses and why-missed as `cache_event`
    messages (`tile bench --cache-report`, `--cold-process`)."""
    token: str | None = None
    """A fresh random string per runner process; every message of its stream repeats it."""
    pace: str | None = None
    """A directory through which the CLI gives this runner its turns (`tile bench --against`):
    before bench round k the runner creates the file `ready-k` there, then waits until `go-k`
    exists. Two runners so paced take their rounds one at a time, in the order the CLI picks."""
    profile: ProfileSettings | None = None
    """`tile profile`: what a `build` runner does with each case after writing its views."""
    modes: list[ModeChoice] | None = None
    """The modes each case runs in (`--mode`): `fwd`, `bwd`, `fwd_bwd`, or `all` (every mode
    its kernel declares). None: `fwd` alone, as before minor 13."""
    cases: list[CaseSpec] | None = None
    """Plan these cases (protocol 1.18: `--from`'s captured ones, a `--cases` file's) instead of
    the selected kernels' declared axes; filters, case ids and modes still narrow them."""
    capture: str | None = None
    """`MODULE:FUNCTION` (protocol 1.18, `--from`): trace that program and plan every call it
    makes of a registered kernel, at its shapes and dtypes, as a captured case."""
    progress: bool = False
    """Send a `progress` message as each case enters a step (protocol 1.15), for a screen that
    says what the runner is doing; off, an older reader never sees a message it does not know."""
    compile_ahead: bool = False
    """Make cases ready (inputs, compilations) in batches before their turn (protocol 1.19);
    off, each case is made ready after its `case_start`, as before. While it makes a batch
    ready the runner sends a `progress` message for each step, asked or not (a reader that
    asks for batches knows them), so that the CLI can bound that silence by the case timeout.
    A runner that died or hung in a batch, where no case is in flight, is restarted with
    False, so that the case that kills it is blamed."""
    prior: dict[str, list[PriorSamples]] = {}
    """By case id, what earlier runner processes of this run measured of the case (protocol
    1.23, `[bench] processes`): the runner puts their samples before its own in the case's
    `bench_result`, its statistics over all of them, with `process_sizes` saying which
    process took which. A case not named here is this runner's alone."""
    rungs: str | None = None
    """A directory through which `tile tune` gives this runner its later rungs (protocol 1.21,
    command `tune` only): after the cases of a rung the runner sends `rung_done` and waits for
    the file `rung-k.json` there (k = 1, 2, ...), a `NextRung`. It times the units named there
    again with the executables and checks it already holds (no tracing, compiling or
    checking again), after a `rung` message; a `NextRung` with no units ends the runner."""


class NextRung(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", tag="next_rung"):
    """The CLI's word to a tune runner between rungs (`RunRequest.rungs`, protocol 1.21),
    written as a file, never sent on the stream: which of its planned units to time again, in
    plan order, and how long. No units: the tune is done with this runner."""

    case_ids: list[str] = []
    bench: BenchSettings = BenchSettings()
