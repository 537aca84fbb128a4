"""A case's and a run's wall-time accounting: where the seconds went, parts adding up."""

from __future__ import annotations

from typing import Annotated, Self

from pydantic import Field, model_validator

from tile_artifacts._base import ArtifactModel

__all__ = ["Accounting", "RunTiming", "Seconds"]

Seconds = Annotated[float, Field(ge=0)]
_Seconds = Seconds


class Accounting(ArtifactModel):
    """Where one case's wall time went in the runner, in seconds; the parts add up to `total_s`.

    `compile_s` is the kernel's trace + lower + compile, `check_s` its first call with the
    reference call and the comparison, `sample_s`/`reference_sample_s` the wall time of the
    timed calls, `other_s` whatever no part names.
    """

    inputs_s: _Seconds = 0.0
    compile_s: _Seconds = 0.0
    reference_compile_s: _Seconds = 0.0
    check_s: _Seconds = 0.0
    warmup_s: _Seconds = 0.0
    sample_s: _Seconds = 0.0
    reference_sample_s: _Seconds = 0.0
    other_s: _Seconds = 0.0
    total_s: _Seconds = 0.0

    @property
    def parts(self) -> dict[str, float]:
        """Every named part and `other`, by field name (without the total)."""
        return {k: float(v) for k, v in self.model_dump().items() if k != "total_s"}

    @model_validator(mode="after")
    def _parts_add_up(self) -> Self:
        named = sum(self.parts.values())
        if abs(named - self.total_s) > 1e-6 * max(1.0, self.total_s):
            raise ValueError(f"the parts add up to {named:.6g} s, not total_s {self.total_s:.6g}")
        return self


class RunTiming(ArtifactModel):
    """How the wall time of a run divides: what it must spend and what it spent around that.

    `runner_start_s` runs from spawning each runner to its `hello` (interpreter, JAX, devices),
    summed over runners; `compile_s` is the kernels' and references' compilation and
    `sampled_s` the timed samples themselves (kernel and reference), summed over cases.
    `overhead_ratio` = `wall_s` / (`runner_start_s` + `compile_s` + `sampled_s`): 1.0 would
    mean tile spent nothing beyond starting, compiling and measuring. `parts` sums the cases'
    accounting.
    """

    wall_s: _Seconds
    runner_start_s: _Seconds
    compile_s: _Seconds
    sampled_s: _Seconds
    overhead_ratio: float | None = None
    parts: Accounting = Field(default_factory=Accounting)
