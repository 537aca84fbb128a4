"""`tile compare`, `tile baseline save` and `tile bench --compare`: verdicts from raw samples."""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text

from tile_cli._errors import CliError, ExitCode, os_error
from tile_cli._format import fmt_time

if TYPE_CHECKING:
    from rich.console import Console

    import tile_artifacts as ta
    from tile_config import CompareConfig

__all__ = [
    "CompareSettings",
    "compare_paths",
    "comparison_exit_code",
    "device_slug",
    "load_side",
    "pick_baseline",
    "render_comparison",
    "save_baseline",
]


@dataclass(frozen=True)
class CompareSettings:
    """What `tile bench --compare` compares against, and how strictly."""

    path: Path
    noise_floor_pct: float = 2.0
    alpha: float = 0.05
    fail_on_inconclusive: bool = False
    basis: ta.BasisSetting = "auto"

    @classmethod
    def from_config(cls, path: Path, cfg: CompareConfig) -> CompareSettings:
        """`[compare]` of the resolved configuration (flags already laid over it)."""
        return cls(path, cfg.noise_floor, cfg.alpha, cfg.fail_on_inconclusive, cfg.basis)


_ORDER = {"regression": 0, "inconclusive": 1, "not_comparable": 2, "neutral": 3, "improvement": 4}
_STYLE = {"regression": "bold red", "improvement": "green", "inconclusive": "yellow",
          "not_comparable": "magenta", "neutral": "dim"}  # fmt: skip


def load_side(path: Path) -> tuple[ta.Report | ta.Baseline, Path]:
    """A run directory, a report.json or a baseline file; exit 2 with the file named if not."""
    import tile_artifacts as ta

    target = path / "report.json" if path.is_dir() else path
    if not target.exists():
        raise CliError(
            f"`{path}` is not a run directory, report.json or baseline file "
            f"(`{target}` is missing)",
            hint="pass a run directory such as `.tile/latest`, its report.json, or a file "
            "written by `tile baseline save`",
        )
    try:
        doc = ta.load_document(target)
    except ta.ArtifactError as exc:
        raise CliError(exc.message, hint=exc.hint, code=ExitCode.USAGE) from None
    if not isinstance(doc, (ta.Report, ta.Baseline)):
        raise CliError(
            f"`{target}` is a {doc.schema_name} document, not a report or baseline",
            hint="compare run directories, report.json files or baseline files",
        )
    return doc, target


def device_slug(kind: str | None) -> str:
    """`NVIDIA H200` -> `nvidia-h200`: the file name of a device's baseline."""
    slug = re.sub(r"[^a-z0-9]+", "-", (kind or "unknown").lower()).strip("-")
    return slug or "unknown"


def pick_baseline(path: Path, device_kind: str | None) -> Path:
    """PATH itself, or in a directory the baseline whose device matches the current run."""
    if not path.is_dir() or (path / "report.json").exists():
        return path
    wanted = path / f"{device_slug(device_kind)}.json"
    if wanted.exists():
        return wanted
    have = sorted(p.name for p in path.glob("*.json"))
    raise CliError(
        f"no baseline for device `{device_kind}` in `{path}` (looked for `{wanted.name}`)",
        hint=f"available: {', '.join(have) or 'none'}; record one with `tile baseline save`",
    )


def compare_paths(
    base: Path,
    cur: Path,
    *,
    noise_floor_pct: float,
    alpha: float,
    basis: ta.BasisSetting = "auto",
) -> ta.ComparisonDoc:
    """Compare two runs or baselines given by path."""
    import tile_artifacts as ta

    base_doc, base_file = load_side(base)
    cur_doc, cur_file = load_side(cur)
    return ta.compare_runs(
        base_doc,
        cur_doc,
        noise_floor_pct=noise_floor_pct,
        alpha=alpha,
        basis=basis,
        baseline_label=str(base),
        current_label=str(cur),
        baseline_path=str(base_file.absolute()),
        current_path=str(cur_file.absolute()),
    )


def comparison_exit_code(doc: ta.ComparisonDoc, *, fail_on_inconclusive: bool) -> int:
    """1 on any regression; 4 on inconclusive rows when asked; else 0."""
    s = doc.summary
    if s.regression_count:
        return int(ExitCode.FAILED)
    if fail_on_inconclusive and s.inconclusive_count:
        return int(ExitCode.INCONCLUSIVE)
    return int(ExitCode.OK)


def render_comparison(doc: ta.ComparisonDoc, out: Console, *, plain: bool) -> None:
    """A table sorted worst first, then a one-line summary."""
    from rich import box

    table = Table(box=box.SIMPLE if plain else box.ROUNDED, header_style="bold")
    for col in ("case", "baseline", "current", "change", "95% CI of ratio", "p", "basis",
                "verdict", "reason"):  # fmt: skip
        left = col in ("case", "basis", "verdict", "reason")
        table.add_column(col, justify="left" if left else "right")
    for row in sorted(doc.rows, key=lambda r: (_ORDER[r.judgement], r.case_id)):
        ci = (
            f"{row.ratio_ci_low:.3f}–{row.ratio_ci_high:.3f}"
            if row.ratio_ci_low is not None and row.ratio_ci_high is not None
            else "-"
        )
        table.add_row(
            Text(row.case_id),
            fmt_time(row.baseline_value),
            fmt_time(row.current_value),
            f"{row.percent_change:+.1f}%" if row.percent_change is not None else "-",
            ci,
            f"{row.p_value:.2g}" if row.p_value is not None else "-",
            row.basis or "-",
            Text(row.judgement, style=_STYLE[row.judgement]),
            Text(row.reason or ""),
        )
    out.print(table)
    s = doc.summary
    out.print(
        f"{s.regression_count} regressions, {s.improvement_count} improvements, "
        f"{s.neutral_count} neutral, {s.inconclusive_count} inconclusive, "
        f"{s.not_comparable_count} not comparable "
        f"(noise floor ±{doc.thresholds.noise_floor_pct:g}%, alpha {doc.thresholds.alpha:g}, "
        f"basis {doc.thresholds.basis or 'absolute'})",
        markup=False,
    )


def save_baseline(runs: list[Path], directory: Path, label: str | None) -> Path:
    """Write `<directory>/<device-slug>.json` from one run or several pooled; return its path."""
    import tile_artifacts as ta

    reports: list[ta.Report] = []
    for run in runs:
        doc, _ = load_side(run)
        if not isinstance(doc, ta.Report):
            raise CliError(f"`{run}` is already a baseline", hint="pass run directories")
        reports.append(doc)
    try:
        baseline = ta.baseline_from_reports(reports, label=label)
    except ta.ArtifactError as exc:
        raise CliError(exc.message, hint=exc.hint, code=ExitCode.USAGE) from None
    target = directory / f"{device_slug(baseline.device.device_kind)}.json"
    tmp = target.with_suffix(".json.tmp")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        tmp.write_text(baseline.model_dump_json(indent=2) + "\n")
        tmp.replace(target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        error = os_error(exc)
        raise CliError(
            f"cannot write the baseline to `{directory}`: {exc.strerror or exc}",
            hint=f"choose a writable directory with `--dir` ({error.hint})",
            code=error.code,
        ) from None
    return target
