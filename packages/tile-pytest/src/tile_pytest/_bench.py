"""The `tile_bench` fixture: time one callable per test with tile's timers and stopping rule."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from tile_pytest._errors import TilePytestError
from tile_pytest._record import CaseName, SessionRecord

if TYPE_CHECKING:
    from pathlib import Path

    from tile_pytest._verdicts import Judge
    from tile_runner import Measurement

__all__ = ["BenchFixture"]


class BenchFixture:
    """Call it as `tile_bench(fn, *args, **settings)`; it returns a `tile_runner.Measurement`.

    `fn` is compiled ahead of time for `args` (array arguments traced, others static) and
    sampled by `tile_runner.measure` until the 95% CI of the median is within
    `target_precision` or the budget runs out. The settings default to tile.toml's `[bench]`
    and take `measure`'s keyword names (`max_time=0.5`, `timer="wall"`, ...). With
    `--tile-compare` the measurement is judged against the baseline before the call returns,
    and a regression fails the test.
    """

    def __init__(
        self,
        name: CaseName,
        record: SessionRecord,
        *,
        judge: Judge | None,
        output_dir: Path | None,
    ) -> None:
        self.name = name
        self._record = record
        self._judge = judge
        self._output_dir = output_dir
        self.measurement: Measurement | None = None

    @property
    def case_id(self) -> str:
        """The id this test's timing has in the run directory and in comparisons."""
        return self.name.case_id

    def __call__(self, fn: Callable[..., Any], *args: Any, **settings: Any) -> Measurement:
        import tile_runner as tile

        if self.measurement is not None:
            error = TilePytestError(
                f"`{self.case_id}` calls tile_bench twice",
                hint="time one callable per test; parametrize the test to time several",
            )
            pytest.fail(str(error), pytrace=False)
        options = {**self._record.settings.measure, **settings}
        try:
            measurement = tile.measure(fn, *args, **options)
        except tile.RunnerError as exc:
            pytest.fail(f"tile_bench: {exc}", pytrace=False)
        self.measurement = measurement
        try:
            self._record.measured(self.name, measurement)
            failure = self._verdict()
        except TilePytestError as exc:
            pytest.fail(str(exc), pytrace=False)
        if failure is not None:
            pytest.fail(failure, pytrace=False)
        return measurement

    def _verdict(self) -> str | None:
        if self._judge is None:
            return None
        current = self._record.report(self._output_dir, only=self.case_id)
        return self._judge.verdict(current, self.case_id)
