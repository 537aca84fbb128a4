"""The bench tables judge a median's CI against the target the runner applied: `[bench]
target_precision` 0 (the default) is the backend's, a value set is itself."""

from __future__ import annotations

import pytest

from tile_cli.terminal._tables import BenchRows


@pytest.mark.parametrize(
    ("configured", "backend", "target"),
    [
        (0.0, "cpu", 0.02),
        (0.0, "gpu", 0.01),
        (0.0, None, 0.01),
        (0.005, "cpu", 0.005),
        (None, "cpu", None),
    ],
)
def test_the_tables_target_is_the_runners(
    configured: float | None, backend: str | None, target: float | None
) -> None:
    rows = BenchRows(
        results=[], failures=[], planned=[], target_precision=configured, backend=backend
    )
    assert rows.target == target
