"""What `tile tune` leaves behind: the winners in the project's `tuning/<device>.json` (and,
when asked, the user cache's copy), where bench, test and library use find them, and one
finding per case in the report."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import tile_protocol as tp
from tile_harness._compare import device_slug
from tile_harness._errors import CliError, ExitCode, write_atomically

if TYPE_CHECKING:
    import tile_artifacts as ta
    from tile_config import ResolvedConfig
    from tile_harness.tune._impls import ImplDecision
    from tile_harness.tune._pick import Decision

__all__ = ["check_tuning_files", "tune_findings", "write_tuning"]


def tune_findings(
    decisions: Mapping[str, Decision],
    dropped: Mapping[str, str],
    unfinished: Mapping[str, str] | None = None,
    impls: Sequence[ImplDecision] = (),
) -> list[ta.Finding]:
    """One finding per tuned case: the winner, the runner-up and why the others dropped out;
    one per op and point whose implementation the tune chose (`impls`); then one naming the
    cases the tune could not finish (`unfinished`), if any."""
    import tile_artifacts as ta

    out: list[ta.Finding] = []
    for i, (case_id, d) in enumerate(decisions.items(), start=1):
        evidence = [f"winner {d.winner.unit_id}: median {d.winner.median:.6g} s"]
        if d.runner_up is not None:
            evidence.append(f"runner-up {d.runner_up.unit_id}: median {d.runner_up.median:.6g} s")
        gone = [f"{u}: {why}" for u, why in dropped.items() if _case_of(u) == case_id]
        evidence.extend(gone[:20])
        out.append(
            ta.Finding(
                finding_id=f"T{i:03d}",
                severity="info",
                category="tuning",
                title=f"{case_id}: {d.winner.configuration} ({d.decided_by})",
                evidence=evidence,
                interpretation=d.reason,
            )
        )
    for c in impls:
        d = c.decision
        evidence = [f"{m.values['impl']} ({m.unit_id}): median {m.median:.6g} s"
                    for m in (d.winner, d.runner_up) if m is not None]  # fmt: skip
        out.append(
            ta.Finding(
                finding_id=f"T{len(out) + 1:03d}",
                severity="info",
                category="tuning",
                title=f"op {c.op} [{c.point}]: implementation {c.impl} ({d.decided_by})",
                evidence=evidence,
                interpretation=d.reason.replace("finalist", "implementation"),
            )
        )
    if unfinished:
        out.append(
            ta.Finding(
                finding_id=f"T{len(out) + 1:03d}",
                severity="medium",
                category="tuning",
                title=f"{len(unfinished)} case(s) not tuned to the end",
                evidence=[f"{case_id}: {why}" for case_id, why in unfinished.items()],
                interpretation="a tuning entry written for a case decided on shorter timings "
                "is the best of what was measured; tune it again with a larger --budget",
            )
        )
    return out


def _case_of(unit_id: str) -> str:
    unit = tp.TuneUnit.parse(unit_id)
    return unit.case_id if unit is not None else unit_id


def write_tuning(
    resolved: ResolvedConfig,
    decisions: Mapping[str, Decision],
    winners: Mapping[str, tp.BenchResult],
    hello: tp.Hello | None,
    run_id: str,
    *,
    impls: Sequence[ImplDecision] = (),
    held: Mapping[str, str] | None = None,
) -> list[Path]:
    """Merge the winners (each decision's winning unit's result) and the implementations
    chosen (`impls`) into `tuning/<device>.json` and, with `[tune] user_cache`, the user
    cache's copy; the files written. `held`: the request's `--tunable` values, recorded on
    the entries of the kernels they reached (`TuningEntry.held`)."""
    if not decisions:
        return []
    device_kind = hello.devices[0].device_kind if hello and hello.devices else "unknown"
    device_model = hello.devices[0].model if hello and hello.devices else None
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    entries: list[tp.TuningEntry] = []
    for case_id, d in decisions.items():
        result = winners[d.winner.unit_id]
        fixed = tp.overrides_for(result.kernel, held or {})
        entries.append(
            tp.TuningEntry(
                kernel=result.kernel,
                case_id=case_id,
                signature=(result.config.signature if result.config else None) or "",
                device_kind=device_kind,
                device_model=device_model,
                jax_version=hello.jax_version if hello else None,
                jaxlib_version=hello.jaxlib_version if hello else None,
                values=d.winner.values,
                median_s=d.winner.median,
                runner_up=d.runner_up.values if d.runner_up else None,
                margin=d.margin,
                decided_by=d.decided_by,
                tuned_at=now,
                run_id=run_id,
                held={k: v for k, v in d.winner.values.items() if k in fixed} or None,
            )
        )
    where = {"device_model": device_model, "tuned_at": now, "run_id": run_id,
             "jax_version": hello.jax_version if hello else None}  # fmt: skip
    ops = [_op_choice(c, device_kind, where) for c in impls]
    name = f"{device_slug(device_kind)}.json"
    targets = [folder / name for folder in _targets(resolved)]
    for path in targets:
        _merge_into(path, device_kind, entries, ops)
    return targets


def _op_choice(c: ImplDecision, device_kind: str, where: dict[str, str | None]) -> tp.OpChoice:
    """The tuning file's record of one implementation chosen (`where`: the device model, JAX
    version, time and run, as the file's entries have them)."""
    d = c.decision
    return tp.OpChoice(
        op=c.op,
        point=c.point,
        impl=c.impl,
        kernel=c.kernels[c.impl],
        case_id=d.winner.unit_id,
        median_s=d.winner.median,
        runner_up=c.runner_up,
        margin=d.margin,
        decided_by=d.decided_by,
        device_kind=device_kind,
        **where,
    )


def _targets(resolved: ResolvedConfig) -> list[Path]:
    """The folders a tune writes into: the project's, and the user cache's when asked."""
    from tile_downloads import resolve_cache_dir

    folders = [resolved.resolve_path(resolved.config.tune.dir)]
    if resolved.config.tune.user_cache:  # shared by every project: only when asked
        folders.append(resolve_cache_dir() / "tuning")
    return folders


def check_tuning_files(resolved: ResolvedConfig) -> None:
    """Refuse to start a tune whose winners could not be merged into its tuning files: each
    existing file must parse (a file edited by hand into something else is found before
    anything is measured, not after)."""
    for folder in _targets(resolved):
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            try:
                tp.decode_tuning(path.read_bytes())
            except (OSError, tp.DecodeError) as exc:
                raise CliError(
                    f"tuning file `{path}` cannot be read: {exc}",
                    hint="fix the file (it is JSON: `tile.tuning` schema), or remove it to "
                    "have `tile tune` write it anew",
                    code=ExitCode.USAGE,
                ) from None


def _merge_into(
    path: Path, device_kind: str, entries: list[tp.TuningEntry], ops: Sequence[tp.OpChoice] = ()
) -> None:
    """Replace the entries of the same cases in `path` (created if missing), atomically.

    On a CPU an entry is a case on one CPU model: another model's entries of the case stay
    beside it (one `cpu.json` serves several machines); an entry without a model (an older
    tile's) is replaced."""
    before = tp.TuningFile(device_kind=device_kind)
    if path.exists():
        try:
            before = tp.decode_tuning(path.read_bytes())
        except (OSError, tp.DecodeError) as exc:
            raise CliError(
                f"cannot update the tuning file `{path}`: {exc}",
                hint="fix or remove it; `tile tune` rewrites it with this run's winners",
                code=ExitCode.INFRA,
            ) from None
    new_ids = {e.case_id for e in entries}
    model = entries[0].device_model if entries else None
    kept = [e for e in before.entries
            if e.case_id not in new_ids or e.device_model not in (None, model)]  # fmt: skip
    points = {(c.op, c.point) for c in ops}
    kept_ops = [c for c in before.ops
                if (c.op, c.point) not in points or c.device_model not in (None, model)]  # fmt: skip
    doc = tp.TuningFile(device_kind=device_kind, entries=kept + entries, ops=[*kept_ops, *ops])
    hint = "check that the directory is writable (`[tune] dir` in tile.toml)"
    write_atomically(path, tp.encode_tuning(doc), hint=hint, code=ExitCode.INFRA)
