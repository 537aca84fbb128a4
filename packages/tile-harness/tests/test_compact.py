"""Records kept for a whole run share their field-name sets and still read and copy as before."""

from __future__ import annotations

import tile_artifacts as ta
import tile_protocol as tp
from tile_harness._compact import share_field_sets
from tile_harness._convert import case_from_bench


def _stats(xs: list[float]) -> tp.Stats:
    return tp.Stats(n=len(xs), min=min(xs), max=max(xs), mean=sum(xs) / len(xs), median=xs[0],
                    stdev=0.0, mad=0.0, q1=xs[0], q3=xs[-1], p5=xs[0], p95=xs[-1])  # fmt: skip


def _record(i: int) -> ta.CaseRecord:
    xs = [1e-3 + i * 1e-6 + k * 1e-8 for k in range(10)]
    return case_from_bench(tp.BenchResult(
        case_id=f"k/a[n={i}]", kernel="k/a", params={"n": str(i)}, timer="wall", samples=xs,
        stats=_stats(xs), reference=tp.Reference(samples=xs, stats=_stats(xs), speedup=1.0),
        check=tp.Check(passed=True, max_abs_err=0.0, rel_l2_err=0.0, tol=1e-5),
    ))  # fmt: skip


def test_shared_sets_change_nothing_a_record_says_or_copies() -> None:
    fresh = [_record(i) for i in range(3)]
    shared = [_record(i) for i in range(3)]
    for record in shared:
        share_field_sets(record)
    assert shared[0].__pydantic_fields_set__ is shared[1].__pydantic_fields_set__
    first, last = shared[0].stats, shared[2].stats
    assert first is not None and last is not None
    assert first.__pydantic_fields_set__ is last.__pydantic_fields_set__
    assert [r.model_dump_json() for r in shared] == [r.model_dump_json() for r in fresh]
    assert [r.model_dump(exclude_unset=True) for r in shared] == [
        r.model_dump(exclude_unset=True) for r in fresh
    ]
    # A copy with an update has its own set: the other records' sets stay as they were.
    copied = shared[0].model_copy(update={"status": "failed"})
    assert copied.status == "failed" and shared[1].status == "success"
    assert shared[1].model_fields_set == fresh[1].model_fields_set
