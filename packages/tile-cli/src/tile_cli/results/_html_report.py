"""`tile report RUN`: one self-contained HTML file of a run, with a comparison and history.

Imported only by that command, so `tile --help` never loads tile-report.
"""

from __future__ import annotations

from pathlib import Path

import tile_report as tr
from tile_cli.results._history import history_path
from tile_cli.terminal._ui import make_consoles
from tile_harness import CliError, ExitCode, compare_paths, pick_baseline, resolve_config

__all__ = ["make_report"]


def make_report(
    run: Path,
    *,
    output: Path,
    compare: Path | None,
    history: bool,
    db: Path | None,
    profile: str | None,
) -> int:
    """Read the run, compare it and fetch its history as asked, write the page, print its path.

    The comparison is judged with `[compare]` of the configuration; the history shows the
    run's cases on the run's device (its kind, and on a CPU its model).
    """
    out, err = make_consoles()
    resolved = resolve_config(profile, {})
    try:
        data = tr.load_run(run)
        comparison = None
        if compare is not None:
            cfg = resolved.config.compare
            base = pick_baseline(compare, data.report.device.device_kind)
            comparison = compare_paths(
                base, data.source, noise_floor_pct=cfg.noise_floor, alpha=cfg.alpha, basis=cfg.basis
            )
        trends = None
        if history:
            with tr.History(history_path(resolved, db), create=False) as store:
                series = store.series(device=data.report.device.device_kind)
            wanted = {c.case_id for c in data.report.cases}
            model = data.report.device.model  # another CPU model's times are not this one's
            trends = tr.trends(
                [s for s in series if s.case_id in wanted and s.device_model == model]
            )
        page = tr.render_html(data, comparison=comparison, history=trends)
        target = tr.write_html(output, page)
    except tr.HistoryBusyError as exc:
        raise CliError(exc.message, hint=exc.hint, code=ExitCode.INFRA) from None
    except tr.ReportError as exc:
        raise CliError(exc.message, hint=exc.hint, code=ExitCode.USAGE) from None
    out.print(str(target), markup=False, highlight=False, soft_wrap=True)
    err.print(f"wrote {target} ({len(page.encode()) / 1024:.0f} KiB)", markup=False, style="dim")
    return int(ExitCode.OK)
