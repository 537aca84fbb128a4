"""What a pytest session checked and measured, case by case, as an Artifact Format v1 report.

The report is the same `tile.report` document `tile bench` and `tile test` write, so
`tile compare`, `tile baseline save` and `tile schema-check` read a pytest session's run
directory like any other, and `--tile-compare` judges with tile compare's own code.
"""

from __future__ import annotations

import os
import platform
import socket
import sys
import time
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tile_artifacts as ta
    from tile_protocol import Check, ConfigInfo, OpInfo
    from tile_pytest._settings import Settings
    from tile_runner import Measurement


__all__ = ["TOOL", "CaseName", "SessionRecord", "tool_version"]

TOOL = "tile-pytest"


def tool_version() -> str:
    """Version of the installed tile-pytest."""
    try:
        return version(TOOL)
    except PackageNotFoundError:
        return "0+unknown"


@dataclass(frozen=True)
class CaseName:
    """How one pytest item appears in the report: a tile case id, or the item's node id."""

    case_id: str
    kernel: str
    params: dict[str, str] = field(default_factory=dict[str, str])
    config: ConfigInfo | None = None
    """The tunable values a kernel case ran with, and where they came from."""
    op: OpInfo | None = None
    """The op the case's kernel implements, if it declared one (`@tile.kernel(op=...)`)."""


@dataclass
class _Entry:
    name: CaseName
    check: Check | None = None
    measurement: Measurement | None = None


class SessionRecord:
    """The session's cases in the order they were first seen; builds the report on demand."""

    def __init__(self, *, rootpath: Path, argv: list[str], settings: Settings) -> None:
        import tile_artifacts as ta  # pydantic: not while pytest merely loads the plugin

        self.rootpath = rootpath
        self.argv = argv
        self.settings = settings
        self.run_id = ta.new_run_id("pytest")
        self.created_at = ta.utc_now()
        self.started = time.monotonic()
        self._entries: dict[str, _Entry] = {}
        self._device: ta.DeviceRecord | None = None
        self._context: ta.Context | None = None
        self._producer: ta.Producer | None = None

    def __len__(self) -> int:
        return len(self._entries)

    def _entry(self, name: CaseName) -> _Entry:
        self._note_device()
        return self._entries.setdefault(name.case_id, _Entry(name))

    def checked(self, name: CaseName, check: Check) -> None:
        """Keep the outcome of a case's check against its reference."""
        self._entry(name).check = check

    def measured(self, name: CaseName, measurement: Measurement) -> None:
        """Keep a case's timing; TilePytestError when the case was already timed."""
        from tile_pytest._errors import TilePytestError

        entry = self._entry(name)
        if entry.measurement is not None:
            raise TilePytestError(
                f"`{name.case_id}` is benchmarked twice in one session",
                hint="call `tile_bench` once per test; parametrize the test to time more things",
            )
        entry.measurement = measurement

    def _note_device(self) -> None:
        # Called at the first check or measurement, when the test has already imported jax.
        if self._device is not None:
            return
        import jax

        import tile_artifacts as ta
        import tile_harness as th
        import tile_runner

        self._device = th.device_record(
            jax.default_backend(), tile_runner.device_infos(), self.settings.machine
        )
        import jaxlib

        self._context = ta.Context(
            project_root=str(self.rootpath),
            cwd=str(Path.cwd()),
            hostname=socket.gethostname(),
            platform=platform.platform(),
            python=sys.version.split()[0],
            jax_version=jax.__version__,
            jaxlib_version=getattr(jaxlib, "__version__", None),
            xla_flags=os.environ.get("XLA_FLAGS"),
            argv=list(self.argv),
            seed=self.settings.seed,
        )

    def producer(self) -> ta.Producer:
        """tile-pytest, its version, and the git state of the rootdir (looked up once)."""
        if self._producer is None:
            import tile_artifacts as ta

            self._producer = ta.producer_info(TOOL, tool_version(), self.rootpath)
        return self._producer

    def case(self, case_id: str) -> ta.CaseRecord:
        """The report's record of one case."""
        return _case_record(self._entries[case_id])

    def report(self, output_dir: Path | None, *, only: str | None = None) -> ta.Report:
        """The session so far as a `tile.report`; `only` keeps one case (for a verdict)."""
        entries = [e for e in self._entries.values() if only is None or e.name.case_id == only]
        cases = [_case_record(e) for e in entries]
        import tile_artifacts as ta
        import tile_harness as th

        status, reason = th.cases_status(cases)
        counts = th.case_counts(cases)
        passed = counts.passed
        headline = (
            f"pytest: {len(cases)} tile cases, {passed} ok"
            + (f", {len(cases) - passed} failed" if passed < len(cases) else "")
            + f" in {time.monotonic() - self.started:.1f} s"
        )
        config_file = self.settings.config_file
        return ta.Report(
            producer=self.producer(),
            run=ta.RunInfo(
                run_id=self.run_id,
                created_at=self.created_at,
                status=status,
                status_reason=reason,
                output_directory=str(output_dir if output_dir is not None else self.rootpath),
            ),
            context=self._context or ta.Context(argv=list(self.argv), seed=self.settings.seed),
            configuration={
                "command": "pytest",
                "config_file": str(config_file) if config_file else None,
                "profile": self.settings.profile,
            },
            device=self._device or ta.DeviceRecord(),
            summary=ta.ReportSummary(
                title="pytest (tile-pytest)",
                status=status,
                headline=headline,
                counts=counts,
                agent_summary=ta.AgentSummary(one_sentence=headline),
            ),
            cases=cases,
            metrics=[
                m
                for i, c in enumerate(cases)
                for m in ta.case_metrics(c, run_id=self.run_id, index=i)
            ],
        )


def _case_record(entry: _Entry) -> ta.CaseRecord:
    """The case as `tile bench` (measured) or `tile test` (checked only) records it: the
    session's results become the runner's messages and go through tile-harness's converters,
    so a case and its status read the same whichever door it came through."""
    import tile_harness as th
    import tile_protocol as tp

    name, check, m = entry.name, entry.check, entry.measurement
    params = dict(name.params)
    if m is None:
        info = tp.CaseInfo(case_id=name.case_id, kernel=name.kernel, params=params, op=name.op)
        done = tp.TestResult(
            case_id=name.case_id,
            kernel=name.kernel,
            params=params,
            check=check or tp.Check(passed=True, message="not checked"),
            config=name.config,
        )
        record = th.case_from_test(info, done)
        return record if check is not None else record.model_copy(update={"check": None})
    measured = tp.BenchResult(
        case_id=name.case_id,
        kernel=name.kernel,
        params=params,
        timer=m.timer,
        cold=m.cold,
        samples=list(m.samples),
        stats=m.stats,
        phases=m.phases,
        check=check,
        config=name.config,
        op=name.op,
    )
    return th.case_from_bench(measured)
