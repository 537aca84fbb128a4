"""What a case left changed in its runner's process, as the report's finding and a warning.

The runner compares its process state after every case with the state before the first
(tile_runner/_isolation.py) and sends a `state_change` naming the case. The report blames that
case, never the ones after it, and says whether they ran in a restored or a fresh process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import tile_protocol as tp

if TYPE_CHECKING:
    import tile_artifacts as ta

__all__ = ["describe_diff", "state_finding", "state_warning"]

_LABELS: dict[str, str] = {
    "jax_config": "JAX flag",
    "default_device": "default device",
    "cwd": "working directory",
    "environment": "environment variable",
    "sys_path": "sys.path",
    "signal_handlers": "signal handler",
    "threads": "thread",
    "stdio": "standard stream",
    "timers": "interval timer",
    "recursion_limit": "recursion limit",
    "trace_hooks": "profile/trace hook",
    "warnings": "warnings",
    "umask": "umask",
    "rlimits": "resource limit",
}


def _label(diff: tp.StateDiff) -> str:
    kind = _LABELS.get(diff.kind, diff.kind)
    return f"{kind} `{diff.name}`" if diff.name else kind


def describe_diff(diff: tp.StateDiff) -> str:
    """One change as `what: before -> after (restored)`."""
    what = _label(diff)
    before = "unset" if diff.before is None else diff.before
    after = "unset" if diff.after is None else diff.after
    if diff.kept:
        fate = "kept: set up by a module imported for the first time"
    else:
        fate = "restored" if diff.restored else "cannot be restored"
    return f"{what}: {before} -> {after} ({fate})"


def _kinds(change: tp.StateChange) -> str:
    names: list[str] = []
    for diff in change.changes:
        label = _label(diff)
        if label not in names:
            names.append(label)
    shown = ", ".join(names[:5])
    return shown + (f" and {len(names) - 5} more" if len(names) > 5 else "")


def _consequence(change: tp.StateChange) -> str:
    if change.restart:
        return (
            "it could not all be put back, so the runner was restarted before the next case; "
            "later cases ran in a fresh process"
        )
    if all(d.restored for d in change.changes):
        return (
            "it was put back before the next case; later cases ran in the state the run began with"
        )
    if _library_setup(change):
        return (
            "what a module set up in the environment while this case first imported it was kept "
            "(putting it back would break that module for every later case); the rest was put back"
        )
    return (
        "a daemon thread it started is still running (a new runner for every case that starts "
        "one would cost more than it saves); later cases ran beside it, the rest was put back"
    )


def _library_setup(change: tp.StateChange) -> bool:
    """Whether all a case left changed is a module's own setup, kept on purpose: worth a
    finding, not a warning on the screen."""
    changes = change.changes
    return (
        not change.restart
        and all(d.restored or d.kept for d in changes)
        and any(d.kept for d in changes)
    )


def state_warning(change: tp.StateChange) -> tp.Log:
    """The run's warning about one case's leftover state."""
    return tp.Log(
        level="info" if _library_setup(change) else "warning",
        message=f"{change.case_id} changed the runner's {_kinds(change)}; {_consequence(change)}",
        case_id=change.case_id,
    )


def state_finding(change: tp.StateChange, number: int) -> ta.Finding:
    """The report's finding for one case's leftover state (`S001`, `S002`, ...)."""
    import tile_artifacts as ta

    return ta.Finding(
        finding_id=f"S{number:03d}",
        severity="medium" if change.restart else "info" if _library_setup(change) else "low",
        category="isolation",
        title=f"{change.case_id} changed the runner's process state",
        evidence=[describe_diff(d) for d in change.changes[:50]],
        interpretation=(
            f"A kernel (or its inputs or reference) left the process changed: {_consequence(change)}. "
            "Its own result is kept. Make the kernel undo what it changes (a `with` block, "
            "`try`/`finally`)."
        ),
    )
