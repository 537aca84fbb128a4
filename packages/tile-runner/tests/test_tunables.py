"""Tunables in the authoring API: declaration checks, configurations, which values run."""

from __future__ import annotations

from typing import Any

import pytest

import tile_protocol as proto
import tile_runner as tile
from tile_protocol import BenchSettings, Message
from tile_runner._case import run_case
from tile_runner._context import CaseContext
from tile_runner._tuning import Tunables, choose, unit_id
from tile_runner._tuning_index import TuningIndex

AXES = tile.axes(block=[1, 2, 4], warps=[4, 8])


def _limit(case: Any, config: Any) -> str | None:
    return "block 4 needs 8 warps" if config["block"] == 4 and config["warps"] == 4 else None


def _scaled_reference(x: Any) -> Any:
    return x * 2.0


@tile.kernel(
    "tun/scale",
    inputs=lambda case, key: (tile.normal(key, (64,), "float32"),),
    reference=_scaled_reference,
    bench=tile.axes(n=[1]),
    tunables=AXES,
    constraint=_limit,
    default={"block": 2},
)
def scaled(x: Any, *, block: int, warps: int) -> Any:
    return x * 2.0 + 0.0 * (block + warps)


def test_declaration_errors_name_the_kernel() -> None:
    with pytest.raises(tile.DefinitionError, match="default names `blocks`"):
        Tunables.declare("k", AXES, None, {"blocks": 1})
    with pytest.raises(tile.DefinitionError, match=r"default block=3 is not among its values"):
        Tunables.declare("k", AXES, None, {"block": 3})
    with pytest.raises(tile.DefinitionError, match="need `tunables`"):
        tile.kernel("k/x", inputs=lambda c, k: (), default={"a": 1})
    with pytest.raises(tile.DefinitionError, match="need `tunables`"):
        tile.kernel("k/x", inputs=lambda c, k: (), modes=("bwd",), tuned_modes=("fwd",))
    wrongs: list[Any] = [("bwd",), (), "fwd"]  # not declared, none, a string
    for wrong in wrongs:
        with pytest.raises(tile.DefinitionError, match="`tuned_modes` must list modes"):
            tile.kernel("k/x", inputs=lambda c, k: (), tunables=AXES, tuned_modes=wrong)


def test_a_mode_the_tunables_do_not_reach_has_no_configuration() -> None:
    @tile.kernel("tun/fwd_only", inputs=lambda case, key: (tile.normal(key, (8,), "float32"),),
                 bench=tile.axes(n=[1]), modes=("bwd", "fwd_bwd"), tunables=AXES,
                 tuned_modes=("fwd", "fwd_bwd"))  # fmt: skip
    def fwd_only(x: Any, *, block: int, warps: int) -> Any:
        return x * 2.0 + 0.0 * (block + warps)

    definition = tile.get_kernel("tun/fwd_only")
    t = definition.tunables
    assert t is not None
    fwd, bwd = (tile.Case("tun/fwd_only", {"n": 1}, mode=m) for m in ("fwd", "bwd"))
    tuning = TuningIndex()
    assert choose(t, fwd, overrides={}, tuning=tuning)[1] is not None
    config, info = choose(t, bwd, overrides={"block": "4"}, tuning=tuning)
    assert info is None and config == t.default  # the function still gets its values
    with pytest.raises(tile.RunnerError, match="do not apply to mode `bwd`"):
        choose(t, bwd, overrides={}, tuning=tuning, unit={"block": "1", "warps": "4"})


def test_configurations_constraint_and_signature() -> None:
    t = tile.get_kernel("tun/scale").tunables
    assert t is not None and t.default == {"block": 2, "warps": 4}
    case = tile.cases("tun/scale")[0]
    configs = t.configs(case)
    assert len(configs) == 6
    assert [c for c, r in configs if r is not None] == [{"block": 4, "warps": 4}]
    other = Tunables.declare("k", tile.axes(block=[1, 2, 4, 8], warps=[4, 8]), None, None)
    assert t.signature != other.signature
    assert t.signature == Tunables.declare("k", AXES, None, None).signature


def test_which_values_run_override_then_tuned_then_default() -> None:
    t = tile.get_kernel("tun/scale").tunables
    assert t is not None
    case = tile.cases("tun/scale")[0]
    none = TuningIndex()
    _, info = choose(t, case, overrides={}, tuning=none)
    assert info is not None and info.source == "default"
    entry = proto.TuningEntry(kernel="tun/scale", case_id=case.id, signature=t.signature,
                              device_kind="cpu", values={"block": "1", "warps": "8"})  # fmt: skip
    tuned = TuningIndex([entry])
    config, info = choose(t, case, overrides={}, tuning=tuned)
    assert config == {"block": 1, "warps": 8} and info is not None and info.source == "tuned"
    stale = TuningIndex([proto.TuningEntry(kernel="tun/scale", case_id=case.id, signature="old",
                                           device_kind="cpu", values={"block": "1"})])  # fmt: skip
    _, info = choose(t, case, overrides={}, tuning=stale)
    assert info is not None and info.source == "default"
    config, info = choose(t, case, overrides={"warps": "4", "other": "1"}, tuning=tuned)
    assert config == {"block": 1, "warps": 4} and info is not None and info.source == "override"
    with pytest.raises(tile.Skip, match="block 4 needs 8 warps"):
        choose(t, case, overrides={"block": "4", "warps": "4"}, tuning=none)


def test_a_unit_runs_its_configuration_and_reports_its_id() -> None:
    sent: list[Message] = []
    ctx = CaseContext(command="tune", seed=0, bench=BenchSettings(max_runs=5, max_time=0.05),
                      tolerances={}, timer="wall", peaks=None, send=sent.append,
                      warn=lambda m, c: None)  # fmt: skip
    kernel, case = tile.get_kernel("tun/scale"), tile.cases("tun/scale")[0]
    assert run_case(ctx, kernel, case, {"block": "1", "warps": "8"}) == "passed"
    [result] = sent
    assert isinstance(result, proto.BenchResult)
    assert result.case_id == unit_id(case.id, {"block": 1, "warps": 8})
    assert result.config is not None and result.config.source == "tune"
    assert result.reference is None  # a tune compares configurations, not the reference
    assert run_case(ctx, kernel, case, {"block": "4", "warps": "4"}) == "skipped"
    assert isinstance(sent[-1], proto.Failure) and "8 warps" in sent[-1].message
