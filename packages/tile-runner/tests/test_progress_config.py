"""A case's first progress step names the configuration it runs with (protocol 1.20), so the
screen can show it while the case runs: made ready ahead in a batch or in its own turn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tile_protocol import BenchResult, Progress

TUNABLE = Path(__file__).parent / "fixtures" / "tunable_kernels.py"


@pytest.mark.parametrize("ahead", [True, False])
def test_the_inputs_step_carries_the_configuration_the_case_runs(
    runner: Any, tmp_path: Path, ahead: bool
) -> None:
    request = {
        "command": "bench",
        "paths": [str(TUNABLE)],
        "modules": [],
        "plugins": [],
        "kernels": ["fxt/rows", "fxt/plain"],
        "jax_cache_dir": str(tmp_path / "jaxcache"),
        "progress": True,
        "compile_ahead": ahead,
        "bench": {"warmup_runs": 1, "min_runs": 3, "max_runs": 5, "max_time": 0.02, "batch": 2},
    }
    run = runner(request)
    results = run.by_case(BenchResult)
    assert len(results) == 4, run.stderr[-3000:]
    said = {p.case_id: p.config for p in run.of(Progress) if p.step == "inputs"}
    assert set(said) == set(results)
    for case_id, result in results.items():
        assert said[case_id] == result.config, case_id
    # n=16 rules the default block=4 out: the screen is told the values that really run.
    small = said["fxt/rows[n=16]"]
    assert small is not None and small.values["block"] == "1" and small.note
    assert said["fxt/plain[n=16]"] is None  # no tunables, nothing to name
