"""`tile fetch`: download the pinned data of `[downloads.<name>]` with a progress bar."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tile_cli.terminal._ui import make_consoles
from tile_harness import CliError, ExitCode, resolve_config
from tile_protocol.format import format_bytes

if TYPE_CHECKING:
    import tile_downloads as td
    from tile_config import ResolvedConfig

__all__ = ["fetch"]


def fetch(
    names: Sequence[str],
    *,
    list_only: bool,
    offline: bool,
    profile: str | None,
    deadline: float = 3600.0,
) -> int:
    """Fetch the named entries (all when none are named); `--list` shows the cache state.

    `deadline` bounds each file's whole download, in seconds.
    """
    import tile_downloads as td

    if not deadline > 0:
        raise CliError(f"--deadline must be above 0, got {deadline:g}", hint="e.g. `600`")
    resolved = resolve_config(profile, {})
    try:
        offline = td.resolve_offline(offline or None)
    except td.DownloadError as exc:  # TILE_OFFLINE=maybe: configuration, not the network
        raise CliError(str(exc), hint=exc.hint, code=ExitCode.USAGE) from None
    registry = _registry(resolved)
    unknown = [n for n in names if n not in registry]
    if unknown:
        raise CliError(
            f"no download entry named {', '.join(f'`{n}`' for n in unknown)}",
            hint=f"known entries: {', '.join(registry) or 'none'}; add `[downloads.NAME]` "
            "with url and sha256 to tile.toml",
        )
    wanted = list(names) or list(registry)
    if list_only:
        _list(registry, wanted)
        return int(ExitCode.OK)
    failed = _download(registry, wanted, offline=offline, deadline=deadline)
    if failed and all(isinstance(exc, td.CacheError) for exc in failed):
        return int(ExitCode.USAGE)  # the cache directory given (TILE_CACHE_DIR) is unusable
    return int(ExitCode.INFRA if failed else ExitCode.OK)


def _registry(resolved: ResolvedConfig) -> td.Registry:
    """`[downloads]` of the configuration as tile-downloads' registry."""
    import tile_downloads as td

    entries = {
        name: {k: v for k, v in e.model_dump().items() if v is not None}
        for name, e in resolved.config.downloads.items()
    }
    try:
        return td.registry_from_mapping(entries)
    except td.DownloadError as exc:
        raise CliError(str(exc), hint=exc.hint) from None


def _list(registry: td.Registry, wanted: list[str]) -> None:
    """`--list`: each entry's size, whether it is cached, and its URL."""
    from rich.table import Table

    import tile_downloads as td

    out, _ = make_consoles()
    table = Table(box=None, header_style="bold")
    for col in ("name", "size", "cached", "url"):
        table.add_column(col)
    for name in wanted:
        info = td.cached_info(name, registry)
        table.add_row(name, format_bytes(info.size_bytes), "yes" if info.cached else "no", info.url)
    out.print(table)


def _download(
    registry: td.Registry, wanted: list[str], *, offline: bool, deadline: float
) -> list[td.DownloadError]:
    """Fetch each entry with a progress bar, printing `NAME<TAB>PATH`; the errors of those that
    failed."""
    from rich.progress import BarColumn, DownloadColumn, Progress, TaskID, TransferSpeedColumn

    import tile_downloads as td

    out, err = make_consoles()
    failed: list[td.DownloadError] = []
    with Progress(
        "[bold]{task.description}", BarColumn(), DownloadColumn(), TransferSpeedColumn(),
        console=err, transient=True, disable=not err.is_terminal,
    ) as progress:  # fmt: skip
        tasks: dict[str, TaskID] = {}

        def report(name: str, done: int, total: int | None) -> None:
            if name not in tasks:
                tasks[name] = progress.add_task(name, total=total)
            progress.update(tasks[name], completed=done, total=total)

        for name in wanted:
            try:
                path = td.fetch(name, registry, offline=offline, progress=report, deadline=deadline)
            except td.DownloadError as exc:
                failed.append(exc)
                err.print(f"error: {exc}", markup=False, style="red")
                if exc.hint:
                    err.print(f"hint: {exc.hint}", markup=False)
                continue
            out.print(f"{name}\t{path}", markup=False)
    return failed
