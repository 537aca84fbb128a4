"""The plugin's options, and the tile configuration that `tile bench` and `tile test` would use.

Benchmarks inside pytest take their sampling budget, seed, tolerances and comparison rules
from the same place as the `tile` command (tile.toml or `[tool.tile]` found from pytest's
rootdir, a `TILE_PROFILE`, `TILE_*` variables), so a pytest benchmark and a `tile bench` of
the same project measure alike and judge alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from tile_pytest._errors import TilePytestError

if TYPE_CHECKING:
    import pytest

    from tile_config import MachineConfig

__all__ = [
    "Options",
    "Settings",
    "add_options",
    "load_settings",
    "parallel_workers",
    "xdist_worker",
]

Basis = Literal["auto", "absolute", "relative"]


def add_options(parser: pytest.Parser) -> None:
    """Register `--tile-*` options; all prefixed, so no other plugin's name is taken."""
    group = parser.getgroup("tile", "tile: kernel checks and benchmarks (tile-pytest)")
    group.addoption(
        "--tile-compare",
        metavar="BASELINE",
        default=None,
        help="fail a benchmark that regressed against BASELINE: a tile run directory, its "
        "report.json, a baseline file, or a directory of `tile baseline save` files",
    )
    group.addoption(
        "--tile-fail-on-inconclusive",
        action="store_true",
        default=False,
        help="with --tile-compare, fail (not warn) when a comparison is inconclusive",
    )
    group.addoption(
        "--tile-allow-missing",
        action="store_true",
        default=False,
        help="with --tile-compare, pass a benchmark the baseline has no case for (by default "
        "it fails, like every benchmark that could not be judged)",
    )
    group.addoption(
        "--tile-save",
        metavar="DIR",
        default=None,
        help="write this session's checks and benchmarks as a tile run directory DIR "
        "(missing or empty), readable by `tile compare` and `tile schema-check`",
    )


@dataclass(frozen=True)
class Options:
    """The plugin's command-line options, paths made absolute against the invocation dir."""

    compare: Path | None
    save: Path | None
    fail_on_inconclusive: bool
    allow_missing: bool = False

    @classmethod
    def from_config(cls, config: pytest.Config) -> Options:
        """Read the options; TilePytestError for paths that cannot work."""
        where = config.invocation_params.dir
        compare: str | None = config.getoption("tile_compare")
        save: str | None = config.getoption("tile_save")
        options = cls(
            compare=(where / compare) if compare else None,
            save=(where / save) if save else None,
            fail_on_inconclusive=bool(config.getoption("tile_fail_on_inconclusive")),
            allow_missing=bool(config.getoption("tile_allow_missing")),
        )
        options._check()
        return options

    def _check(self) -> None:
        if self.compare is not None and not self.compare.exists():
            raise TilePytestError(
                f"--tile-compare: `{self.compare}` does not exist",
                hint="pass a run directory (`pytest --tile-save DIR` or `tile bench -o DIR` "
                "writes one), its report.json, or a baseline file from `tile baseline save`",
            )
        if self.save is None:
            return
        if self.save.exists() and not self.save.is_dir():
            raise TilePytestError(
                f"--tile-save: `{self.save}` is a file, not a directory",
                hint="pass a new directory for the run",
            )
        if self.save.is_dir() and any(self.save.iterdir()):
            raise TilePytestError(
                f"--tile-save: directory `{self.save}` already exists and is not empty",
                hint="pass a new directory (a run directory is written once), or remove the "
                "old run",
            )

    @property
    def wants_run(self) -> bool:
        """Whether the session's results go anywhere beyond the test outcomes."""
        return self.compare is not None or self.save is not None


def parallel_workers(config: pytest.Config) -> str | None:
    """The `-n` of pytest-xdist when it runs tests in parallel workers, else None."""
    if not config.pluginmanager.hasplugin("xdist"):
        return None
    # 0 (`-n 0`) runs the tests in this process, as does no `-n` at all.
    workers: object = config.getoption("numprocesses", None)
    return str(workers) if workers else None


def xdist_worker(config: pytest.Config) -> str | None:
    """The id of this pytest-xdist worker (`gw0`, ...), or None in the main process."""
    workerinput: object = getattr(config, "workerinput", None)
    if not isinstance(workerinput, dict):
        return None
    return str(cast("dict[str, object]", workerinput).get("workerid", "?"))


@dataclass(frozen=True)
class Settings:
    """What tile's configuration says about measuring, checking and judging."""

    measure: dict[str, Any] = field(default_factory=dict[str, Any])
    seed: int = 0
    tolerances: dict[str, float] = field(default_factory=dict[str, float])
    noise_floor_pct: float = 2.0
    alpha: float = 0.05
    basis: Basis = "auto"
    fail_on_inconclusive: bool = False
    allow_missing: bool = False
    config_file: Path | None = None
    profile: str | None = None
    tuning_files: tuple[str, ...] = ()
    """The project's tuning files, which a runner of `tile bench` here would read first."""
    user_tuning_files: tuple[str, ...] = ()
    """The user cache's tuning files, below the project's (only with `[tune] user_cache`)."""
    machine: MachineConfig | None = None
    """`[machine]`: the peaks and L2 the report's device records, as `tile bench`'s does."""


def load_settings(rootpath: Path) -> Settings:
    """Resolve tile's configuration from pytest's rootdir, as `tile bench` run there would;
    TilePytestError when it is bad."""
    import tile_harness as th

    try:
        resolved = th.resolve_config(None, {}, cwd=rootpath)
    except th.CliError as exc:
        raise TilePytestError(f"tile configuration: {exc.message}", hint=exc.hint) from None
    config = resolved.config
    bench = th.bench_settings(config)
    return Settings(
        # The keyword arguments of `tile_runner.measure`, from the settings a runner gets.
        measure={
            "timer": bench.timer,
            "warmup": bench.warmup_runs,
            "min_runs": bench.min_runs,
            "max_runs": bench.max_runs,
            "max_time": bench.max_time,
            "min_time": bench.min_time,
            # As configured: 0 is the backend's target, which `measure` resolves where it runs.
            "target_precision": config.bench.target_precision,
            "cold": bench.cold,
            "batch": bench.batch,
            "cache_bytes": bench.cache_bytes,
        },
        seed=config.test.seed,
        tolerances=dict(config.test.tolerances),
        noise_floor_pct=config.compare.noise_floor,
        alpha=config.compare.alpha,
        basis=config.compare.basis,
        fail_on_inconclusive=config.compare.fail_on_inconclusive,
        allow_missing=config.compare.allow_missing,
        config_file=resolved.config_file,
        profile=resolved.profile,
        tuning_files=tuple(th.tuning_files(resolved)),
        user_tuning_files=tuple(th.user_tuning_files(resolved)),
        machine=config.machine,
    )
