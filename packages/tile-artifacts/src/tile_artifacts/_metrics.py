"""The stable metric names and their long-form records derived from a case."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, NamedTuple

from tile_artifacts._base import Aggregation, Unit
from tile_artifacts._models import CaseRecord
from tile_artifacts._paths import REPORT_JSON
from tile_artifacts._records import MetricRecord, MetricSource

__all__ = ["STANDARD_METRICS", "MetricSpec", "case_metric_values", "case_metrics"]


class MetricSpec(NamedTuple):
    """Unit, aggregation and direction of a stable metric name."""

    unit: Unit
    aggregation: Aggregation
    higher_is_better: bool | None
    timed: bool


# Errors are dimensionless here: the unit set of the format has no "output units".
STANDARD_METRICS: Final[Mapping[str, MetricSpec]] = MappingProxyType(
    {
        "time_s": MetricSpec("s", "median", False, True),
        "ref_time_s": MetricSpec("s", "median", False, True),
        "speedup": MetricSpec("ratio", "median", True, True),
        "bandwidth_gbps": MetricSpec("GB/s", "median", True, True),
        "throughput_tflops": MetricSpec("TFLOP/s", "median", True, True),
        "compile_s": MetricSpec("s", "exact", False, False),
        "lower_s": MetricSpec("s", "exact", False, False),
        "trace_s": MetricSpec("s", "exact", False, False),
        "jax_compile_count": MetricSpec("count", "exact", False, False),
        "jax_cache_hit_count": MetricSpec("count", "exact", True, False),
        "jax_cache_miss_count": MetricSpec("count", "exact", False, False),
        "peak_device_memory_bytes": MetricSpec("bytes", "max", False, False),
        "max_abs_err": MetricSpec("ratio", "exact", False, False),
        "rel_l2_err": MetricSpec("ratio", "exact", False, False),
    }
)


def case_metric_values(case: CaseRecord) -> list[tuple[str, float, str]]:
    """The standard metrics `case` has a value for: (name, value, JSON pointer within the
    case, e.g. `/stats/median`), in the order `case_metrics` lists them."""
    found: list[tuple[str, float | int | None, str]] = [
        ("time_s", case.stats.median if case.stats else None, "/stats/median"),
        ("bandwidth_gbps", case.throughput.gbps, "/throughput/gbps"),
        ("throughput_tflops", case.throughput.tflops, "/throughput/tflops"),
        ("compile_s", case.phases.compile_s, "/phases/compile_s"),
        ("lower_s", case.phases.lower_s, "/phases/lower_s"),
        ("trace_s", case.phases.trace_s, "/phases/trace_s"),
        ("jax_compile_count", case.phases.compile_count, "/phases/compile_count"),
        ("jax_cache_hit_count", case.phases.cache_hit_count, "/phases/cache_hit_count"),
        ("jax_cache_miss_count", case.phases.cache_miss_count, "/phases/cache_miss_count"),
    ]
    if case.reference is not None:
        ref_median = case.reference.stats.median if case.reference.stats else None
        found.append(("ref_time_s", ref_median, "/reference/stats/median"))
        found.append(("speedup", case.reference.speedup, "/reference/speedup"))
    if case.check is not None:
        found.append(("max_abs_err", case.check.max_abs_err, "/check/max_abs_err"))
        found.append(("rel_l2_err", case.check.rel_l2_err, "/check/rel_l2_err"))
    return [(name, float(value), suffix) for name, value, suffix in found if value is not None]


def case_metrics(
    case: CaseRecord, *, run_id: str, index: int, artifact_path: str = REPORT_JSON
) -> list[MetricRecord]:
    """Long-form metrics of `case`, which is `cases[index]` of the report at `artifact_path`."""
    pointer = f"/cases/{index}"
    dimensions = {"kernel": case.kernel, **case.params}
    records: list[MetricRecord] = []
    for name, value, suffix in case_metric_values(case):
        spec = STANDARD_METRICS[name]
        records.append(
            MetricRecord(
                run_id=run_id,
                case_id=case.case_id,
                metric_name=name,
                value=value,
                unit=spec.unit,
                aggregation=spec.aggregation,
                higher_is_better=spec.higher_is_better,
                timer=case.timer if spec.timed else None,
                dimensions=dimensions,
                source=MetricSource(artifact_path=artifact_path, json_pointer=pointer + suffix),
            )
        )
    return records
