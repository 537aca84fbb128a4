"""tile-pytest samples with the settings `tile bench` run in the same directory would."""

from __future__ import annotations

from pathlib import Path

import pytest

import tile_harness as th
import tile_protocol as tp
from tile_pytest._settings import load_settings


@pytest.mark.parametrize("configured", [None, 0.005])
def test_the_target_precision_is_the_one_tile_bench_applies(
    tmp_path: Path, configured: float | None
) -> None:
    """Left at 0, `[bench] target_precision` is the backend's target: `measure` resolves it
    where the test runs, as the runner resolves it on its backend."""
    if configured is not None:
        (tmp_path / "tile.toml").write_text(f"[bench]\ntarget_precision = {configured}\n")
    settings = load_settings(tmp_path)
    sent = th.bench_settings(th.resolve_config(None, {}, cwd=tmp_path).config)
    for backend in ("cpu", "gpu"):
        mine = tp.precision_on(settings.measure["target_precision"], backend)
        assert mine == sent.target_on(backend), backend
    expected = configured if configured is not None else 0.02
    assert tp.precision_on(settings.measure["target_precision"], "cpu") == expected
