"""One configuration per case wherever it runs: the runner, `tile.configure`, direct calls."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest

import tile_protocol as proto
import tile_runner as tile
from tile_protocol import Done, Failure, Plan, TestResult
from tile_runner._plan import make_plan
from tile_runner._tuning import choose, unit_id

KERNELS = Path(__file__).parent / "fixtures" / "tunable_kernels.py"
ROWS = "fxt/rows"
OVERRIDES: dict[str, dict[str, str]] = {
    "none": {},
    "warps": {"warps": "8"},  # fxt/plain has no tunables: the name is still welcome
    # fxt/rows[n=16] and [n=32] cannot run block 4 (a plain `block=4` would be refused as a
    # whole: fxt/huge has no block 4)
    "ruled_out": {"fxt/rows:block": "4"},
    # Two kernels share `block`: a `KERNEL:` name sets one kernel's, the plain name the rest.
    "one_kernel": {"fxt/rows:block": "1", "block": "16"},
}


def _eight(case: tile.Case, key: Any) -> tuple[Any, ...]:
    return (tile.normal(key, (8,), "float32"),)


def _thrice(x: Any) -> Any:
    return x * 3.0


def _twice(x: Any) -> Any:
    return x * 2.0


def _thrice_plus_one(x: Any) -> Any:
    return x * 3.0 + 1


@tile.kernel(
    "cfgtest/times",
    inputs=_eight,
    reference=_thrice,
    tunables=tile.axes(factor=[2, 3], pad=[0, 1]),
    default={"factor": 3},
)
def times(x: Any, *, factor: int, pad: int) -> Any:
    """Its output shows which factor ran; `pad` shows that unbound values get the default."""
    return x * factor + pad


@pytest.fixture(scope="module", autouse=True)
def _fixture_kernels() -> None:
    assert tile.discover(paths=[str(KERNELS)], plugins=[]) == []


def _cases(kernel: str) -> dict[str, tile.Case]:
    return {c.id: c for c in tile.cases(kernel, "test", backend="cpu")}


@pytest.fixture(scope="module")
def tuning_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One entry: fxt/rows[n=32] runs block=2, warps=8 (for the runner's CPU and this process's
    device, so the in-process side finds it wherever the tests run)."""
    from tile_runner._jaxapi import devices

    tunables = tile.get_kernel(ROWS).tunables
    assert tunables is not None
    entries = [
        proto.TuningEntry(
            kernel=ROWS,
            case_id="fxt/rows[n=32]",
            signature=tunables.signature,
            device_kind=kind,
            values={"block": "2", "warps": "8"},
        )
        for kind in sorted({"cpu", devices()[0].device_kind})
    ]
    path = tmp_path_factory.mktemp("tuning") / "cpu.json"
    path.write_bytes(proto.encode_tuning(proto.TuningFile(device_kind="cpu", entries=entries)))
    return path


@pytest.fixture(scope="module")
def runs(runner: Any, tuning_file: Path) -> dict[str, Any]:
    """`test` runs of the fixture kernels in a real runner, one per set of overrides."""
    return {
        name: runner(
            {
                "command": "test",
                "paths": [str(KERNELS)],
                "plugins": [],
                "kernels": ["fxt/*"],
                "tuning_files": [str(tuning_file)],
                "tunables": overrides,
            }
        )
        for name, overrides in OVERRIDES.items()
    }


@pytest.mark.parametrize("name", list(OVERRIDES))
def test_the_runner_runs_what_configure_says(
    runs: dict[str, Any], tuning_file: Path, name: str
) -> None:
    run, overrides = runs[name], OVERRIDES[name]
    results, skips = run.by_case(TestResult), run.by_case(Failure)
    compared = 0
    for kernel in ("fxt/rows", "fxt/huge", "fxt/plain"):
        definition = tile.get_kernel(kernel)
        for case_id, case in _cases(kernel).items():
            try:
                configured = tile.configure(
                    definition, case, tuning=[tuning_file], overrides=overrides
                )
            except tile.Skip as exc:
                assert skips[case_id].status == "skipped", run.stderr[-2000:]
                assert skips[case_id].message == str(exc)
            else:
                assert results[case_id].check.passed
                assert results[case_id].config == configured.info
            compared += 1
    assert compared == 5


def _values(run: Any) -> dict[str, tuple[dict[str, str], str] | str]:
    """Each case's configuration and its source, or why it was skipped."""
    out: dict[str, tuple[dict[str, str], str] | str] = {}
    for result in run.of(TestResult):
        if result.config is not None:
            out[result.case_id] = (result.config.values, result.config.source)
    for failure in run.of(Failure):
        out[failure.case_id] = failure.message
    return out


def test_default_tuned_and_overridden_configurations(runs: dict[str, Any]) -> None:
    def b(block: int, warps: int) -> dict[str, str]:
        return {"block": str(block), "warps": str(warps)}

    # The default (block 4) does not fit n=16: the first configuration that does runs.
    assert _values(runs["none"]) == {
        "fxt/rows[n=16]": (b(1, 4), "default"),
        "fxt/rows[n=32]": (b(2, 8), "tuned"),
        "fxt/rows[n=128]": (b(4, 4), "default"),
        "fxt/huge[n=16]": "tunables {block=8} ruled out: block 8 needs n >= 128 "
        "(and so is every other configuration)",
    }
    warps = _values(runs["warps"])
    assert warps["fxt/rows[n=16]"] == (b(1, 8), "override")
    assert warps["fxt/rows[n=32]"] == (b(2, 8), "override")
    assert warps["fxt/rows[n=128]"] == (b(4, 8), "override")
    assert runs["warps"].by_case(TestResult)["fxt/plain[n=16]"].config is None
    ruled_out = _values(runs["ruled_out"])
    assert (
        ruled_out["fxt/rows[n=16]"] == "tunables {block=4,warps=4} ruled out: block 4 needs n >= 64"
    )
    assert ruled_out["fxt/rows[n=128]"] == (b(4, 4), "override")
    # rows has no block 16 (the plain name would be refused there): only its own
    # `fxt/rows:block` reaches it. huge's one case fits no block at all, override or not.
    one_kernel = _values(runs["one_kernel"])
    assert one_kernel["fxt/rows[n=16]"] == (b(1, 4), "override")
    assert one_kernel["fxt/rows[n=128]"] == (b(1, 4), "override")
    assert one_kernel["fxt/huge[n=16]"] == _values(runs["none"])["fxt/huge[n=16]"]


def test_the_default_is_the_nearest_allowed_configuration_where_the_declared_one_is_not() -> None:
    rows, huge = tile.get_kernel(ROWS).tunables, tile.get_kernel("fxt/huge").tunables
    assert rows is not None and huge is not None
    cases = _cases(ROWS)
    assert rows.default == {"block": 4, "warps": 4}
    assert rows.default_for(cases["fxt/rows[n=16]"]) == {"block": 1, "warps": 4}
    # block=2 is one step from the default's block=4, block=1 two: the nearer one runs (the
    # first allowed in declaration order would be block=1), and the note says why.
    nearest, note = rows.default_note(cases["fxt/rows[n=32]"])
    assert nearest == {"block": 2, "warps": 4}
    assert note == (
        "default {block=4,warps=4} ruled out for this case (block 4 needs n >= 64): "
        "runs the nearest allowed, {block=2,warps=4}"
    )
    assert rows.default_note(cases["fxt/rows[n=128]"]) == ({"block": 4, "warps": 4}, None)
    assert rows.default_for(cases["fxt/rows[n=128]"]) == {"block": 4, "warps": 4}
    with pytest.raises(tile.Skip, match="block 8 needs n >= 128"):
        huge.default_for(_cases("fxt/huge")["fxt/huge[n=16]"])
    # A tuning entry the constraint now rules out is as good as none.
    small = cases["fxt/rows[n=16]"]
    entry = proto.TuningEntry(
        kernel=ROWS,
        case_id=small.id,
        signature=rows.signature,
        device_kind="cpu",
        values={"block": "4", "warps": "8"},
    )
    config, info = choose(rows, small, overrides={}, tuning=tile.TuningIndex([entry]))
    assert config == {"block": 1, "warps": 4} and info is not None and info.source == "default"
    assert info.note is not None
    assert info.note.startswith("the tuned entry not used: {block=4,warps=8} is ruled out")


def test_plan_marks_the_default_the_case_runs(runner: Any) -> None:
    run = runner(
        {
            "command": "list",
            "paths": [str(KERNELS)],
            "plugins": [],
            "kernels": [ROWS],
            "filters": ["n=16]"],
            "units": True,
        }
    )
    planned = {c.case_id: c for c in run.of(Plan)[0].cases}
    assert len(planned) == 6
    assert [i for i, c in planned.items() if c.default] == [
        unit_id("fxt/rows[n=16]", {"block": 1, "warps": 4})
    ]
    assert planned[unit_id("fxt/rows[n=16]", {"block": 4, "warps": 4})].skip is not None


def test_a_tunable_no_selected_kernel_has_plans_nothing(runner: Any) -> None:
    run = runner(
        {
            "command": "test",
            "paths": [str(KERNELS)],
            "plugins": [],
            "kernels": ["fxt/*"],
            "tunables": {"block_row": "64", "warps": "8"},
        }
    )
    assert run.of(Plan)[0].cases == []
    (failure,) = run.of(Failure)
    assert failure.error_type == "UnknownTunable" and failure.phase == "plan"
    assert "`block_row`" in failure.message and "`warps`" not in failure.message
    assert "fxt/huge (block); fxt/rows (block, warps)" in failure.message
    assert run.of(Done)[0].ok is False and run.returncode == 1
    plan = make_plan("test", "cpu", kernels=["fxt/plain"], tunables={"warps": "8"})
    assert plan.cases == [] and [f.error_type for f in plan.failures] == ["UnknownTunable"]
    assert "none (no selected kernel declares tunables)" in plan.failures[0].message
    plan = make_plan("test", "cpu", kernels=["fxt/*"], tunables={"warps": "8"})
    assert len(plan.cases) == 5 and plan.failures == []
    # A `KERNEL:NAME` must name a selected kernel that has that tunable.
    plan = make_plan("test", "cpu", kernels=["fxt/*"], tunables={"fxt/huge:warps": "8"})
    assert plan.cases == [] and "`fxt/huge:warps`" in plan.failures[0].message
    plan = make_plan("test", "cpu", kernels=["fxt/huge"], tunables={"fxt/rows:block": "1"})
    assert plan.cases == [] and "`fxt/rows:block`" in plan.failures[0].message
    plan = make_plan("test", "cpu", kernels=["fxt/*"], tunables={"fxt/rows:warps": "8"})
    assert len(plan.cases) == 5 and plan.failures == []


def test_a_tunable_value_fixes_it_in_a_tune_and_one_it_does_not_take_plans_nothing() -> None:
    tile.get_kernel(ROWS)  # registered by the module's import of the fixtures
    plan = make_plan("bench", "cpu", kernels=[ROWS], filters=["n=16"], units=True,
                     tunables={"warps": "8"})  # fmt: skip
    assert [u[2] for u in plan.units] == [{"block": b, "warps": "8"} for b in ("1", "2", "4")]
    assert plan.failures == []
    # `KERNEL:NAME` wins over the plain name, for that kernel alone.
    plan = make_plan("bench", "cpu", kernels=[ROWS], filters=["n=16"], units=True,
                     tunables={"warps": "8", f"{ROWS}:warps": "4", "block": "2"})  # fmt: skip
    assert [u[2] for u in plan.units] == [{"block": "2", "warps": "4"}]
    # A value the tunable does not take: nothing planned, bench or tune alike.
    for units in (True, False):
        plan = make_plan("bench", "cpu", kernels=["fxt/*"], units=units, tunables={"warps": "6"})
        assert plan.cases == [] and plan.units == []
        (failure,) = plan.failures
        assert failure.error_type == "TunableValue" and failure.phase == "plan"
        assert (
            failure.message
            == f"kernel `{ROWS}`: `--tunable` warps=6 is not among its values (4, 8)"
        )


def test_configure_takes_paths_or_a_loaded_index(tuning_file: Path) -> None:
    definition, case = tile.get_kernel(ROWS), _cases(ROWS)["fxt/rows[n=32]"]
    by_path = tile.configure(definition, case, tuning=str(tuning_file))
    index = tile.TuningIndex.load([tuning_file], device_kind="cpu", jax_version="0")
    by_index = tile.configure(definition, case, tuning=index)
    assert by_path.config == by_index.config == {"block": 2, "warps": 8}
    assert by_path.info == by_index.info and by_path.info is not None
    assert by_path.info.source == "tuned"
    untuned = tile.configure(definition, case)
    assert untuned.config == {"block": 2, "warps": 4}  # the nearest the constraint allows
    assert untuned.fn.__name__ == "rows"


def test_check_and_measure_a_kernel_with_required_tunables() -> None:
    import jax.numpy as jnp

    x = jnp.arange(8, dtype=jnp.float32)
    assert tile.check(times, _thrice, x).passed  # the declared default: factor 3
    assert not tile.check(times, _twice, x).passed
    # Values the caller binds win; the others keep their default.
    assert tile.check(functools.partial(times, factor=2), _twice, x).passed
    assert tile.check(functools.partial(times, pad=1), _thrice_plus_one, x).passed
    measured = tile.measure(times, x, timer="wall", warmup=0, min_runs=2, max_runs=3)
    assert 2 <= len(measured.samples) <= 3
    configured = tile.configure(tile.get_kernel("cfgtest/times"), None)
    assert configured.config == {"factor": 3, "pad": 0}
    assert configured.info is not None and configured.info.source == "default"
