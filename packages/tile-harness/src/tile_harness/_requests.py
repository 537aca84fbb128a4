"""Run requests: built once from configuration and flags, then only derived by `derive`.

A suite asks its plan runner to `list`, a restarted runner for the cases left, a shard for
its part, a tune rung for other sampling: each is the same request with a few fields changed,
and `derive` is the one way to change them (typed, so a misspelt field is a type error).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypedDict, Unpack

import msgspec

import tile_protocol as tp
from tile_harness._settings import (
    Selection,
    compile_cache_dir,
    parse_axes,
    parse_modes,
    parse_tunables,
)

if TYPE_CHECKING:
    from tile_config import ResolvedConfig, TileConfig

__all__ = [
    "RequestChanges",
    "bench_settings",
    "build_request",
    "derive",
    "tuning_files",
    "user_tuning_files",
]


class RequestChanges(TypedDict, total=False):
    """The fields a request is derived by; every other field stays as configured."""

    command: tp.Command
    case_ids: list[str] | None
    bench: tp.BenchSettings
    output_dir: str | None
    jax_cache_dir: str | None
    inspect_kind: tp.InspectKind | Literal["all"] | None
    calibrate: bool
    units: bool
    shard: tp.Shard | None
    token: str | None
    cache_explain: bool
    pace: str | None
    rungs: str | None
    profile: tp.ProfileSettings | None
    progress: bool
    capture: str | None
    compile_ahead: bool
    prior: dict[str, list[tp.PriorSamples]]


def derive(request: tp.RunRequest, **changes: Unpack[RequestChanges]) -> tp.RunRequest:
    """`request` with `changes` made; the request itself is never modified."""
    return msgspec.structs.replace(request, **changes)


def build_request(
    command: tp.Command, resolved: ResolvedConfig, sel: Selection, output_dir: Path | None
) -> tp.RunRequest:
    """Everything one runner needs to know, from config and flags."""
    cfg = resolved.config
    root = resolved.project_root
    return tp.RunRequest(
        command=command,
        modules=list(cfg.project.modules),
        paths=[str(resolved.resolve_path(p)) for p in cfg.project.paths],
        plugins=_plugins(cfg, sel),
        project_root=str(root) if root is not None else None,
        filters=list(sel.filters),
        kernels=list(sel.kernels),
        case_ids=list(sel.case_ids) if sel.case_ids is not None else None,
        axes=parse_axes(sel.axes),
        bench=bench_settings(cfg),
        test=tp.TestSettings(seed=cfg.test.seed, tolerances=dict(cfg.test.tolerances)),
        peaks=_peaks(cfg),
        downloads=_downloads(cfg),
        output_dir=str(output_dir) if output_dir is not None else None,
        jax_cache_dir=compile_cache_dir(resolved),
        pin_cpu=cfg.runner.pin_cpu,
        tuning_files=tuning_files(resolved),
        user_tuning_files=user_tuning_files(resolved),
        tunables=parse_tunables(sel.tunables),
        modes=parse_modes(sel.modes),
        cases=list(sel.cases) if sel.cases is not None else None,
        units=command == "tune",  # a tune times each configuration: also a plan made for it
        compile_ahead=True,  # a restarted or isolated runner is asked not to (`_session`)
    )


def bench_settings(cfg: TileConfig) -> tp.BenchSettings:
    """`[bench]` as the runner takes it."""
    b = cfg.bench
    return tp.BenchSettings(
        warmup_runs=b.warmup_runs,
        min_runs=b.min_runs,
        max_runs=b.max_runs,
        min_time=b.min_time,
        max_time=b.max_time,
        target_precision=tp.precision_on(b.target_precision, None),
        cpu_target_precision=tp.precision_on(b.target_precision, "cpu"),
        timer=b.timer,
        cold=b.cold,
        batch=b.batch,
        rounds=b.rounds,
        cache_bytes=cfg.machine.l2_bytes,
    )


def tuning_files(resolved: ResolvedConfig) -> list[str]:
    """The project's tuning files (`[tune] dir`): the runners' first choice."""
    return _json_files(resolved.resolve_path(resolved.config.tune.dir))


def user_tuning_files(resolved: ResolvedConfig) -> list[str]:
    """The user cache's tuning files, below the project's; none unless `[tune] user_cache`
    (`--user-cache`) asks for them, so that a tune in one project does not change what
    every other project on the machine runs."""
    from tile_downloads import resolve_cache_dir

    if not resolved.config.tune.user_cache:
        return []
    return _json_files(resolve_cache_dir() / "tuning")


def _json_files(directory: Path) -> list[str]:
    return [str(p) for p in sorted(directory.glob("*.json"))] if directory.is_dir() else []


def _plugins(cfg: TileConfig, sel: Selection) -> list[str] | None:
    """Which kernel plugins to load; None loads every installed one."""
    if sel.plugins:
        return [*(cfg.project.plugins or []), *sel.plugins]
    if cfg.project.plugins is not None:
        return list(cfg.project.plugins)
    # A project with kernels of its own includes plugins only when named; with no
    # project at all, every installed plugin (tile-std) is the default workload.
    return [] if cfg.project.modules or cfg.project.paths else None


def _peaks(cfg: TileConfig) -> tp.Peaks | None:
    m = cfg.machine
    if m.peak_bandwidth_gbps is None and not m.peak_tflops:
        return None
    return tp.Peaks(
        bandwidth_gbps=m.peak_bandwidth_gbps, tflops=dict(m.peak_tflops), source="config"
    )


def _downloads(cfg: TileConfig) -> dict[str, tp.DownloadSpec]:
    return {
        name: tp.DownloadSpec(
            url=e.url,
            sha256=e.sha256,
            archive=e.archive,
            members=list(e.members) if e.members is not None else None,
            description=e.description,
        )
        for name, e in cfg.downloads.items()
    }
