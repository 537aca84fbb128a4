"""`tile compare`, `tile baseline save` and `tile bench --compare`: verdicts from raw samples."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tile_harness._errors import CliError, ExitCode, os_error, refuse_run_directory
from tile_protocol import device_slug
from tile_protocol.format import format_values

if TYPE_CHECKING:
    from collections.abc import Callable

    import tile_artifacts as ta
    from tile_config import CompareConfig

__all__ = [
    "CompareSettings",
    "compare_paths",
    "device_slug",
    "load_side",
    "pick_baseline",
    "save_baseline",
]


@dataclass(frozen=True)
class CompareSettings:
    """What `tile bench --compare` compares against, and how strictly."""

    path: Path
    noise_floor_pct: float = 2.0
    alpha: float = 0.05
    fail_on_inconclusive: bool = False
    basis: ta.compare.BasisSetting = "auto"
    allow_missing: bool = False

    @classmethod
    def from_config(cls, path: Path, cfg: CompareConfig) -> CompareSettings:
        """`[compare]` of the resolved configuration (flags already laid over it)."""
        return cls(
            path,
            cfg.noise_floor,
            cfg.alpha,
            cfg.fail_on_inconclusive,
            cfg.basis,
            allow_missing=cfg.allow_missing,
        )


def load_side(path: Path) -> tuple[ta.Report | ta.compare.Baseline, Path]:
    """A run directory, a report.json or a baseline file; exit 2 with the file named if not."""
    import tile_artifacts as ta

    target = path / "report.json" if path.is_dir() else path
    campaign = ta.campaign.not_one_run(path)
    if campaign is not None:
        raise CliError(campaign[0], hint=campaign[1], code=ExitCode.USAGE)
    if not target.exists():
        raise CliError(
            f"`{path}` is not a run directory, report.json or baseline file "
            f"(`{target}` is missing)",
            hint="pass a run directory such as `.tile/latest`, its report.json, or a file "
            "written by `tile baseline save`",
        )
    try:
        doc = ta.load_document(target, metrics=False)
    except ta.ArtifactError as exc:
        raise CliError(exc.message, hint=exc.hint, code=ExitCode.USAGE) from None
    if not isinstance(doc, (ta.Report, ta.compare.Baseline)):
        raise CliError(
            f"`{target}` is a {doc.schema_name} document, not a report or baseline",
            hint="compare run directories, report.json files or baseline files",
        )
    return doc, target


def pick_baseline(path: Path, device_kind: str | None) -> Path:
    """PATH itself, or in a directory the baseline whose device matches the current run."""
    if not _is_baselines_dir(path):
        return path
    wanted = path / f"{device_slug(device_kind)}.json"
    if wanted.exists():
        return wanted
    have = sorted(p.name for p in path.glob("*.json"))
    raise CliError(
        f"no baseline for device `{device_kind}` in `{path}` (looked for `{wanted.name}`)",
        hint=f"available: {', '.join(have) or 'none'}; record one with `tile baseline save`",
    )


def _is_baselines_dir(path: Path) -> bool:
    """A directory of `tile baseline save` files, not a run directory (nor a campaign's)."""
    import tile_artifacts as ta

    return (
        path.is_dir()
        and not (path / "report.json").exists()
        and ta.campaign.not_one_run(path) is None
    )


def compare_paths(
    base: Path,
    cur: Path,
    *,
    noise_floor_pct: float,
    alpha: float,
    basis: ta.compare.BasisSetting = "auto",
) -> ta.compare.ComparisonDoc:
    """Compare two runs or baselines given by path."""
    import tile_artifacts as ta

    # A directory of baselines (`tile bench --compare baselines`'s form) on either side means
    # the baseline of the other side's device in it.
    if _is_baselines_dir(base) and not _is_baselines_dir(cur):
        cur_doc, cur_file = load_side(cur)
        base_doc, base_file = load_side(pick_baseline(base, cur_doc.device.device_kind))
    else:
        base_doc, base_file = load_side(base)
        cur_path = (
            pick_baseline(cur, base_doc.device.device_kind) if _is_baselines_dir(cur) else cur
        )
        cur_doc, cur_file = _again_or_load(cur_path, base_doc, base_file)
    return ta.compare.compare_runs(
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


def _again_or_load(
    path: Path, doc: ta.Report | ta.compare.Baseline, file: Path
) -> tuple[ta.Report | ta.compare.Baseline, Path]:
    """`load_side(path)`, or `doc` again where `path` names the file it was read from: a run
    compared with itself (`tile compare A A`) is read once, not held twice."""
    target = path / "report.json" if path.is_dir() else path
    try:
        same = target.samefile(file)
    except OSError:
        same = False
    return (doc, target) if same else load_side(path)


def _describe_run(run: Path, report: ta.Report) -> str:
    """`run `bench-...` (.tile/latest -> .tile/runs/bench-...), tile bench at ...`."""
    where = str(run)
    resolved = run.resolve()
    if resolved != run.absolute():
        where += f" -> {resolved}"
    command = report.configuration.get("command") or report.run.run_id.split("-", 1)[0]
    when = report.run.created_at.strftime("%Y-%m-%d %H:%M:%SZ")
    return f"run `{report.run.run_id}` ({where}), tile {command} at {when}"


def _measured_reports(runs: list[Path], say: Callable[[str], None] | None) -> list[ta.Report]:
    """The reports of `runs`; refuse one that is a baseline or holds no bench samples."""
    import tile_artifacts as ta

    reports: list[ta.Report] = []
    for run in runs:
        doc, _ = load_side(run)
        if not isinstance(doc, ta.Report):
            raise CliError(f"`{run}` is already a baseline", hint="pass run directories")
        described = _describe_run(run, doc)
        empty = [c.case_id for c in doc.cases if not c.samples]
        if len(empty) == len(doc.cases):
            raise CliError(
                f"{described} has no bench samples to keep as a baseline",
                hint="save a `tile bench` run: `tile baseline save DIR` with its run "
                "directory (a run made with `-o DIR` is `.tile/latest` too until the next run)",
            )
        if say is not None:
            say(f"baseline from {described}")
            if empty:
                say(
                    f"warning: {len(empty)} of {len(doc.cases)} cases have no samples and "
                    f"cannot be compared against: {', '.join(empty)}"
                )
        reports.append(doc)
    return reports


def _say_mixed(baseline: ta.compare.Baseline, say: Callable[[str], None]) -> None:
    """Warn of each case whose runs ran different tunable values: only the runs of the last
    one's values were pooled."""
    for case in baseline.cases:
        if case.other_configs:
            kept = format_values(case.config.values if case.config else {})
            left = "; ".join(format_values(c) for c in case.other_configs)
            say(
                f"warning: `{case.case_id}` ran other configurations in {len(case.other_configs)} "
                f"of the runs ({left}); only the runs of {kept or 'the last run'} are pooled"
            )


def save_baseline(
    runs: list[Path],
    directory: Path,
    label: str | None,
    *,
    say: Callable[[str], None] | None = None,
) -> Path:
    """Write `<directory>/<device-slug>.json` from one run or several pooled; return its path.

    Each run is named through `say`; a run without bench samples is refused (a baseline that
    cannot be compared against makes every later gate fail). The file is written to a temp
    file of its own and renamed over the target, so two jobs saving the same device's
    baseline at once each leave a whole file (the last rename wins); nothing is read and
    modified, so there is nothing for a lock to order.
    """
    import tile_artifacts as ta

    reports = _measured_reports(runs, say)
    try:
        baseline = ta.compare.baseline_from_reports(reports, label=label)
    except ta.ArtifactError as exc:
        raise CliError(exc.message, hint=exc.hint, code=ExitCode.USAGE) from None
    if say is not None:
        _say_mixed(baseline, say)
    target = directory / f"{device_slug(baseline.device.device_kind)}.json"
    refuse_run_directory(target, hint="`--dir baselines`")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        # A temp file of this process's own, renamed over the target: two saves at once each
        # leave a whole file, and the survivor is one of them.
        ta.replace_file(target, (baseline.model_dump_json(indent=2) + "\n").encode())
    except OSError as exc:
        error = os_error(exc)
        raise CliError(
            f"cannot write the baseline to `{directory}`: {exc.strerror or exc}",
            hint=f"choose a writable directory with `--dir` ({error.hint})",
            code=error.code,
        ) from None
    return target
