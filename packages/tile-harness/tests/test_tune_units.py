"""`tile tune` reads each unit id of its plan once, as the plan comes in, and keeps the units."""

from __future__ import annotations

import pytest

import tile_protocol as tp
from tile_harness.tune import allowed_counts
from tile_harness.tune._run import TuneState, measured, small_enough

A, B, PLAIN = "k[n=1]", "k[n=10]", "plain[n=1]"


def _info(case_id: str, *, skip: str | None = None, default: bool = False) -> tp.CaseInfo:
    return tp.CaseInfo(
        case_id=case_id, kernel=case_id.partition("[")[0], skip=skip, default=default
    )


def _unit(case_id: str, block: int) -> str:
    return tp.TuneUnit(case_id=case_id, values={"block": str(block)}).unit_id


PLAN = [
    _info(_unit(A, 1), default=True),
    _info(_unit(A, 2)),
    _info(_unit(A, 4), skip="block 4 does not divide n"),
    _info(_unit(B, 1)),
    _info(PLAIN),  # a kernel without tunables: planned as itself
]


def _bench(unit_id: str, median: float) -> tp.BenchResult:
    stats = tp.Stats(n=3, min=median, max=median, mean=median, median=median, stdev=0.0,
                     mad=0.0, q1=median, q3=median, p5=median, p95=median, ci_low=median,
                     ci_high=median)  # fmt: skip
    return tp.BenchResult(case_id=unit_id, kernel="k", timer="wall", samples=[median] * 3,
                          stats=stats)  # fmt: skip


def test_the_plan_is_parsed_once_and_the_units_serve_every_later_question(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    state = TuneState()
    state.take_plan(tp.Plan(command="tune", cases=PLAN))
    assert state.units[_unit(A, 2)] == tp.TuneUnit(case_id=A, values={"block": "2"})
    assert PLAIN not in state.units

    def parse_again(text: str) -> None:
        raise AssertionError(f"{text} parsed again")

    monkeypatch.setattr(tp.TuneUnit, "parse", parse_again)
    # Grouped by case, not by id prefix: `k[n=10]`'s unit is not one of `k[n=1]`'s.
    assert {c: [i.case_id for i in infos] for c, infos in state.units_of().items()} == {
        A: [_unit(A, 1), _unit(A, 2), _unit(A, 4)],
        B: [_unit(B, 1)],
        PLAIN: [PLAIN],
    }
    assert allowed_counts(PLAN, state.units) == {A: 2, B: 1}
    assert small_enough(state, [_unit(A, 1), _unit(A, 2), _unit(B, 1), PLAIN], eta=2)
    # Three left of a case: with eta 3 another rung would keep two, so the three are final.
    assert small_enough(state, [_unit(A, 1), _unit(A, 2), _unit(A, 4)], eta=3)
    assert not small_enough(state, [_unit(A, 1), _unit(A, 2), _unit(A, 4)], eta=2)

    state.latest = {u: _bench(u, t) for u, t in [(_unit(A, 1), 2.0), (_unit(A, 2), 1.0)]}
    found = measured(state)[A]
    assert [(m.unit_id, m.values, m.order, m.is_default) for m in found] == [
        (_unit(A, 1), {"block": "1"}, 0, True),
        (_unit(A, 2), {"block": "2"}, 1, False),
    ]


def test_allowed_counts_parses_a_plan_it_is_given_alone() -> None:
    # What `tile tune --dry-run` shows before any rung: configurations by case.
    assert allowed_counts(PLAN) == {A: 2, B: 1}
