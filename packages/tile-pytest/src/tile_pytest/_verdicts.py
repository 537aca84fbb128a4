"""`--tile-compare`: each benchmark judged against a baseline by tile compare's own statistics.

A verdict is `tile_artifacts.compare.compare_runs` on the baseline and a one-case report of the test
that just measured, so a pytest benchmark says `regression` exactly when `tile compare` on
the two run directories would. Nothing here computes a statistic.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import tile_artifacts as ta
import tile_harness as th
from tile_pytest._errors import TileInconclusiveWarning, TilePytestError
from tile_pytest._settings import Settings

__all__ = ["Judge", "describe_row"]


def describe_row(row: ta.compare.ComparisonRow) -> str:
    """One line: the case, the verdict, the change, and tile compare's reason (with its CI)."""
    change = f" {row.percent_change:+.1f}%" if row.percent_change is not None else ""
    reason = f" ({row.reason})" if row.reason else ""
    return f"{row.case_id}: {row.judgement}{change}{reason}"


class Judge:
    """The baseline of a session (loaded at the first benchmark) and the verdicts given so far."""

    def __init__(
        self,
        path: Path,
        settings: Settings,
        *,
        fail_on_inconclusive: bool,
        allow_missing: bool = False,
    ) -> None:
        self.path = path
        self.settings = settings
        self.fail_on_inconclusive = fail_on_inconclusive or settings.fail_on_inconclusive
        self.allow_missing = allow_missing or settings.allow_missing
        self.rows: list[ta.compare.ComparisonRow] = []
        self._baseline: tuple[ta.Report | ta.compare.Baseline, Path] | None = None

    def baseline(self, device_kind: str | None) -> tuple[ta.Report | ta.compare.Baseline, Path]:
        """The baseline document and its file; a directory of baselines gives the device's."""
        if self._baseline is None:
            self._baseline = _load(_pick(self.path, device_kind))
        return self._baseline

    def compare(self, current: ta.Report) -> ta.compare.ComparisonDoc:
        """tile compare of the baseline and `current`, with tile.toml's `[compare]` rules."""
        doc, file = self.baseline(current.device.device_kind)
        try:
            return ta.compare.compare_runs(
                doc,
                current,
                noise_floor_pct=self.settings.noise_floor_pct,
                alpha=self.settings.alpha,
                basis=self.settings.basis,
                baseline_label=str(self.path),
                current_label=current.run.run_id,
                baseline_path=str(file),
                current_path="report.json",
            )
        except ta.ArtifactError as exc:
            raise TilePytestError(f"--tile-compare: {exc.message}", hint=exc.hint) from None

    def verdict(self, current: ta.Report, case_id: str) -> str | None:
        """Judge one case by tile's gate rule; a failure message when it does not pass.

        A regression fails. So does a case that could not be judged: `tile compare` would
        exit 4 on it (a different timer or device, no samples), and a benchmark whose
        baseline has no such case, unless `--tile-allow-missing`. An inconclusive verdict
        fails with `--tile-fail-on-inconclusive`, else it is a TileInconclusiveWarning.
        """
        doc = self.compare(current)
        rows = [r for r in doc.rows if r.case_id == case_id]
        if not rows:
            return None
        row = rows[0]
        self.rows.append(row)
        text = f"tile compare against `{self.path}`: {describe_row(row)}"
        if row.judgement == "not_comparable" and row.reason in ta.compare.ONE_SIDED:
            if self.allow_missing:
                return None
            return text + " (the baseline has no such case; --tile-allow-missing passes it)"
        gate = ta.compare.gate_comparison(doc.model_copy(update={"rows": [row]}))
        if gate.verdict != "pass":
            return text
        if row.judgement == "inconclusive":
            if self.fail_on_inconclusive:
                return text + " (--tile-fail-on-inconclusive)"
            # Blame the test's `tile_bench(...)` line: verdict <- _verdict <- __call__ <- test.
            warnings.warn(TileInconclusiveWarning(text), stacklevel=4)
        return None


def _pick(path: Path, device_kind: str | None) -> Path:
    """The baseline `tile bench --compare PATH` would pick: the same function, its errors
    translated at the boundary."""
    try:
        return th.pick_baseline(path, device_kind)
    except th.CliError as exc:
        raise TilePytestError(f"--tile-compare: {exc.message}", hint=exc.hint) from None


def _load(file: Path) -> tuple[ta.Report | ta.compare.Baseline, Path]:
    try:
        return th.load_side(file)
    except th.CliError as exc:
        raise TilePytestError(f"--tile-compare: {exc.message}", hint=exc.hint) from None
