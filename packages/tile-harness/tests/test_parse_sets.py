"""`--set KEY=VALUE`: a key that can name no setting is refused where it is read."""

from __future__ import annotations

import pytest

from tile_harness import CliError
from tile_harness._settings import parse_sets


@pytest.mark.parametrize("raw", ["runner.env.A B=1", "bench.max time=2", "runner.env.A\tB=1"])
def test_a_key_with_a_blank_is_not_a_setting(raw: str) -> None:
    """Issue 39, item 11: `--set 'runner.env.A B=1'` was accepted and set a variable no
    process can have."""
    with pytest.raises(CliError, match="not a setting"):
        parse_sets([raw])


def test_a_value_may_hold_blanks() -> None:
    assert parse_sets(["runner.env.XLA_FLAGS=--a=1 --b=2"]) == {
        "runner.env.XLA_FLAGS": "--a=1 --b=2"
    }
