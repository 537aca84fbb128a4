"""`[telemetry]`: what a run records about where it ran, beside what it measured.

`env`: the variables that change what a kernel measures (compiler flags, device selection,
thread counts), secrets redacted, in `config/environment.json`. `clocks`: the GPUs' SM clock,
temperature and throttle reasons from `nvidia-smi`, sampled while the run measures, in
`telemetry/clocks.json`; a GPU that slowed itself down (power cap, heat) measures slow, and
only its clocks tell that apart from a slower kernel. `commands` is read by the recorder.
"""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import subprocess
import threading
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import tile_artifacts as ta
    from tile_config import ResolvedConfig, TelemetryConfig

__all__ = [
    "CLOCKS_JSON",
    "ENVIRONMENT_JSON",
    "ClockSample",
    "ClockWatch",
    "parse_clocks",
    "recorded_environment",
    "throttle_reasons",
    "write_snapshots",
]

ENVIRONMENT_JSON: Final = "config/environment.json"
CLOCKS_JSON: Final = "telemetry/clocks.json"
SAMPLE_EVERY_S: Final = 10.0
"""Seconds between clock samples: often enough to see a long bench throttle, rare enough to
cost nothing next to it."""
QUERY_TIMEOUT_S: Final = 15.0
_FIELDS: Final = ("index", "name", "clocks.sm", "clocks.max.sm", "temperature.gpu", "power.draw")
# The throttle mask's name since driver 535, then its older name, which newer drivers drop.
_REASON_FIELDS: Final = ("clocks_event_reasons.active", "clocks_throttle_reasons.active")
# nvidia-smi's clocks event (throttle) reason bits that mean the GPU slowed itself down (NVML's
# nvmlClocksThrottleReason*); idle, application clocks and display clocks are not slowdowns.
_SLOWDOWNS: Final = {
    0x4: "software power cap",
    0x8: "hardware slowdown",
    0x20: "software thermal slowdown",
    0x40: "hardware thermal slowdown",
    0x80: "hardware power brake",
}


def recorded_environment(environ: Mapping[str, str], patterns: Sequence[str]) -> dict[str, str]:
    """The variables that match `[telemetry] env`, secret-named ones redacted, sorted."""
    import tile_artifacts as ta

    chosen = {k: v for k, v in environ.items() if any(fnmatch.fnmatchcase(k, p) for p in patterns)}
    return dict(sorted(ta.redact_environment(chosen)[0].items()))


@dataclass(frozen=True)
class ClockSample:
    """One GPU at one moment, as nvidia-smi saw it."""

    at: str
    index: int
    name: str
    sm_mhz: float | None
    max_sm_mhz: float | None
    temperature_c: float | None
    power_w: float | None
    reasons: int | None
    """nvidia-smi's `clocks_event_reasons.active` (throttle reasons) bit mask."""


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None  # `[N/A]`, `[Not Supported]`


def parse_clocks(text: str, at: str) -> list[ClockSample]:
    """nvidia-smi's `--format=csv,noheader,nounits` answer to our query, one sample per GPU;
    lines it cannot read are left out."""
    samples: list[ClockSample] = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != len(_FIELDS) + 1 or not parts[0].isdigit():
            continue
        try:
            reasons: int | None = int(parts[6], 16)
        except ValueError:
            reasons = None
        samples.append(
            ClockSample(
                at=at,
                index=int(parts[0]),
                name=parts[1],
                sm_mhz=_number(parts[2]),
                max_sm_mhz=_number(parts[3]),
                temperature_c=_number(parts[4]),
                power_w=_number(parts[5]),
                reasons=reasons,
            )
        )
    return samples


def throttle_reasons(sample: ClockSample) -> list[str]:
    """The slowdowns a sample shows, in words; [] for a GPU running as fast as it may."""
    if sample.reasons is None:
        return []
    return [why for bit, why in _SLOWDOWNS.items() if sample.reasons & bit]


class ClockWatch:
    """Samples the GPUs' clocks on a thread while the run measures (`[telemetry] clocks`)."""

    def __init__(self, writer: ta.ArtifactWriter, config: TelemetryConfig) -> None:
        self.writer = writer
        self.config = config
        self.samples: list[ClockSample] = []
        self.problem: str | None = None
        """Why clocks were not (all) recorded, when they were not."""
        self._smi: str | None = None
        self._reason_field = 0
        self._started: datetime | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Take a first sample and keep sampling until `stop`; nothing without nvidia-smi."""
        if not self.config.clocks:
            return
        self._smi = shutil.which("nvidia-smi")
        if self._smi is None:
            self.problem = "`nvidia-smi` not found: no GPU clocks recorded"
            return
        self._started = datetime.now(UTC)
        self._thread = threading.Thread(target=self._loop, name="tile-clocks", daemon=True)
        self._thread.start()

    def stop(self) -> list[ClockSample]:
        """Stop sampling, take a last sample, write `telemetry/clocks.json`; return them all."""
        thread, self._thread = self._thread, None
        if thread is None:
            return self.samples
        self._stop.set()
        thread.join()
        self._sample()
        self._write()
        return self.samples

    def _loop(self) -> None:
        while True:
            self._sample()
            if self._stop.wait(SAMPLE_EVERY_S):
                return

    def _argv(self) -> list[str]:
        assert self._smi is not None
        fields = ",".join((*_FIELDS, _REASON_FIELDS[self._reason_field]))
        return [self._smi, f"--query-gpu={fields}", "--format=csv,noheader,nounits"]

    def _query(self) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self._argv(),
            capture_output=True,
            text=True,
            timeout=QUERY_TIMEOUT_S,
            check=False,
            env={**os.environ, "LC_ALL": "C"},
        )

    def _sample(self) -> None:
        at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        try:
            done = self._query()
            if done.returncode != 0 and self._reason_field + 1 < len(_REASON_FIELDS):
                self._reason_field += 1  # an older driver: the throttle mask's older name
                done = self._query()
        except (OSError, subprocess.SubprocessError) as exc:
            self.problem = f"`nvidia-smi` failed: {exc}"
            return
        if done.returncode != 0:
            self.problem = f"`nvidia-smi` exited with code {done.returncode}"
            return
        self.samples.extend(parse_clocks(done.stdout, at))

    def _write(self) -> None:
        doc = {
            "fields": [*_FIELDS, _REASON_FIELDS[self._reason_field]],
            "problem": self.problem,
            "samples": [asdict(s) for s in self.samples],
        }
        self.writer.write_text(CLOCKS_JSON, json.dumps(doc, indent=2) + "\n")
        if self.config.commands and self._started is not None:
            self.writer.command(
                "T001",
                self._argv(),
                cwd=Path.cwd(),
                status="success" if self.problem is None else "failed",
                phase="telemetry",
                started_at=self._started,
                finished_at=datetime.now(UTC),
            )


def write_snapshots(writer: ta.ArtifactWriter, resolved: ResolvedConfig) -> None:
    """What the run was configured with: `config/resolved_tool.json` (every value and its
    origin), `config/tile.toml` (the file as read) and `config/environment.json` (the
    `[telemetry] env` variables); secret-named values hidden, and the writer hides the rest."""
    import tile_artifacts as ta
    from tile_config import flatten
    from tile_harness._settings import describe_origin

    def shown(key: str, value: object) -> object:
        if key.startswith("runner.env.") and ta.is_secret_name(key.removeprefix("runner.env.")):
            return ta.REDACTED
        return value

    doc = {
        key: {"value": shown(key, value), "origin": describe_origin(resolved.origins.get(key))}
        for key, value in flatten(resolved.config).items()
    }
    writer.write_text("config/resolved_tool.json", json.dumps(doc, indent=2, default=str) + "\n")
    if resolved.raw_text is not None:
        writer.write_text("config/tile.toml", writer.redactor.toml(resolved.raw_text))
    telemetry = resolved.config.telemetry
    if telemetry.env:
        chosen = recorded_environment(os.environ, telemetry.env)
        env_doc = {"patterns": list(telemetry.env), "variables": chosen}
        writer.write_text(ENVIRONMENT_JSON, json.dumps(env_doc, indent=2) + "\n")
