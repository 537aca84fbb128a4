"""How long a runner may stay silent before the CLI gives up on it."""

from __future__ import annotations

from pathlib import Path

from tile_harness._process import STARTUP_TIMEOUT_S, RunnerSpec, hang_reason, silence_limit


def _spec(*, timeout: float | None = None, startup_timeout: float | None = 60.0) -> RunnerSpec:
    return RunnerSpec(python="python", cwd=Path(), env_overrides={}, case_timeout=10.0,
                      timeout=timeout, startup_timeout=startup_timeout)  # fmt: skip


def test_a_cases_work_gets_the_case_timeout_and_the_rest_more() -> None:
    # `in_case`: a case in flight, or a step of a batch made ready ahead of the cases' turn.
    assert silence_limit(_spec(), started=True, in_case=True) == 10.0
    assert silence_limit(_spec(), started=True, in_case=False) == STARTUP_TIMEOUT_S
    assert silence_limit(_spec(), started=False, in_case=False) == 60.0
    configured = _spec(timeout=30.0)  # `[runner] timeout` bounds only what is outside a case
    assert silence_limit(configured, started=True, in_case=False) == 30.0
    assert silence_limit(configured, started=True, in_case=True) == 10.0
    assert silence_limit(_spec(startup_timeout=None), started=False, in_case=False) is None


def test_a_hang_says_which_limit_and_where() -> None:
    assert hang_reason(10, in_case=True, configured=False) == (
        "no message from the runner for 10 s (case_timeout)"
    )
    assert hang_reason(10, in_case=True, configured=False, ahead=True) == (
        "no message from the runner for 10 s (case_timeout) while making cases ready ahead of "
        "their turn"
    )
    assert hang_reason(30, in_case=False, configured=True) == (
        "no message from the runner for 30 s (`[runner] timeout`)"
    )
