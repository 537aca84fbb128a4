"""The findings rule of tunable configurations: each case whose configuration comes with a
note (its default ruled out by the constraint, a tuning entry not used and why, no tuning for
this device) is named once, so that a run that silently fell back to a default says so."""

from __future__ import annotations

from collections.abc import Iterable

from tile_harness._noticed import Noticed, RunFacts

__all__ = ["configuration_notes"]


def configuration_notes(x: RunFacts) -> Iterable[Noticed]:
    """One finding over the cases whose configuration has a note; none when no case has one."""
    noted = [(c.case_id, c.config.note) for c in x.report.cases if c.config and c.config.note]
    if not noted:
        return
    # An entry that is there for this device and could not be used is a file to fix or a tune
    # to redo; a default the constraint moved, or no tuning for this device, is expected.
    stale = ("not used", "with jax", "other tunable values")
    redo = any(any(word in note for word in stale) for _, note in noted)
    yield Noticed(
        "low" if redo else "info",
        "tuning",
        f"{len(noted)} case(s) run a configuration other than their tuned or declared one"
        if redo
        else f"{len(noted)} case(s) run their default or the nearest one their constraint allows",
        [f"{case_id}: {note}" for case_id, note in noted],
        "the config column marks these cases with `*`; each note says which values ran and why",
        "tune them on this device and JAX version: `tile tune -k CASE`" if redo else None,
        "low",
    )
