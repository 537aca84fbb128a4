"""What tile noticed about a run, and what to do next: report.json's `findings` and
`recommended_actions`, shown in summary.md.

Each rule reads only what the run recorded (cases, failures, the comparison, the GPU clocks),
so a finding always comes with its evidence. Findings a command added itself (`tile tune`'s
winners) are kept, first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Final

from tile_harness._calibration import accelerator_calibration
from tile_harness._config_notes import configuration_notes
from tile_harness._noticed import Noticed, Priority, RunFacts, Severity
from tile_harness._plausible import (
    CPU_NO_PEAKS,
    CPU_PEAKS_HINT,
    impossible_calibration,
    impossible_rates,
)
from tile_protocol import precision_on
from tile_protocol.format import (
    PRECISION_CATEGORY,
    PRECISION_HINT,
    format_change,
    format_change_ci,
    format_ci_pct,
    format_p,
    missed_precision,
)

if TYPE_CHECKING:
    import tile_artifacts as ta
    from tile_config import ResolvedConfig
    from tile_harness._telemetry import ClockWatch

__all__ = ["Noticed", "RunFacts", "add_findings", "notice"]

_EVIDENCE: Final = 20
"""Evidence lines kept per finding: enough to act on, bounded for a run of thousands."""
_KERNEL_PHASES: Final = frozenset({"inputs", "compile", "run", "reference", "check", "work"})


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _failed_checks(x: RunFacts) -> Iterable[Noticed]:
    bad = [c for c in x.report.cases if c.check is not None and not c.check.passed]
    if not bad:
        return
    evidence: list[str] = []
    for c in bad:
        k = c.check
        assert k is not None
        if k.rel_l2_err is not None and k.tol is not None:
            evidence.append(
                f"{c.case_id}: rel L2 error {k.rel_l2_err:.3g} > tol {k.tol:.3g} "
                f"(max abs error {k.max_abs_err:.3g} at {k.worst_index})"
            )
        else:
            evidence.append(f"{c.case_id}: {k.message or 'check failed'}")
    yield Noticed(
        "high",
        "correctness",
        f"{_plural(len(bad), 'case')} failed the check against the reference",
        evidence,
        "the kernel's output does not match its reference; its speed means nothing "
        "until it does (no speedup is reported)",
        f"fix the kernel and rerun `tile test -k {bad[0].case_id}`; loosen `[test] tolerances` "
        "only where the reference itself is less precise",
        "high",
    )


def _failures(x: RunFacts) -> Iterable[Noticed]:
    groups: dict[str, list[ta.FailureRecord]] = {}
    for f in x.report.failures:
        if f.exception_type == "Skip":
            continue  # the kernel said why it does not apply: nothing went wrong
        if f.exception_type == "RunnerCrash":
            key = "crash"
        elif f.exception_type == "RunnerTimeout" or f.status == "timed_out":
            key = "timeout"
        elif f.status == "skipped":
            key = "not_run"
        elif f.case_id is None:
            key = "setup"
        else:
            key = "error" if f.phase in _KERNEL_PHASES else "setup"
        groups.setdefault(key, []).append(f)
    for key, found in groups.items():
        yield _failure_finding(key, found, x)


# kind -> severity, title, interpretation, action, priority; `{n}` cases, `{first}` case id,
# `{timeout}` the case timeout and `{longer}` four times it.
_FAILURE_KINDS: Final[dict[str, tuple[Severity, str, str, str, Priority]]] = {
    "crash": (
        "high",
        "the runner crashed in {n}",
        "the process died (signal or exit) while the case ran; the other cases went on in a "
        "fresh runner",
        "rerun it alone with `tile bench --isolate -k {first}`; its stderr log says why it died",
        "high",
    ),
    "timeout": (
        "high",
        "{n} timed out",
        "the runner said nothing for `[runner] case_timeout` ({timeout} s) and was killed",
        "look for a hang in the kernel; if it is only slow, raise the limit: "
        "`tile bench runner.case_timeout={longer}`",
        "high",
    ),
    "error": (
        "high",
        "{n} raised",
        "the kernel, its inputs or its reference raised an exception",
        "read the traceback in report.json (`failures[].stderr_excerpt`) and rerun with "
        "`tile test -k {first} -v`",
        "high",
    ),
    "not_run": (
        "medium",
        "{n} did not run",
        "their runner ended before reaching them",
        "fix the failures above, then rerun these cases",
        "medium",
    ),
    "setup": (
        "high",
        "{n} before any case could run",
        "kernel modules, the plan or the runner itself failed",
        "run `tile list` to see what loads; check `[project]` and the flags given",
        "high",
    ),
}


def _failure_finding(key: str, found: list[ta.FailureRecord], x: RunFacts) -> Noticed:
    evidence = [
        f"{f.case_id or '(run)'}: {f.message.splitlines()[0] if f.message else f.phase}"
        + (f" (stderr: `{f.stderr_log}`)" if f.stderr_log else "")
        for f in found
    ]
    severity, title, interpretation, action, priority = _FAILURE_KINDS[key]
    words = {
        "n": _plural(len(found), "problem" if key == "setup" else "case"),
        "first": next((f.case_id for f in found if f.case_id), None) or "CASE_ID",
        "timeout": f"{x.case_timeout:g}",
        "longer": f"{x.case_timeout * 4:g}",
    }
    return Noticed(
        severity,
        key,
        title.format(**words),
        evidence,
        interpretation.format(**words),
        action.format(**words),
        priority,
    )


def _noise(x: RunFacts) -> Iterable[Noticed]:
    if x.command == "tune":
        return  # its pruned configurations were timed briefly on purpose
    target = x.target_precision
    evidence: list[str] = []
    for c in x.report.cases:
        s = c.stats
        # The rule behind the ⚠ of the tables and summary.md, so all three name the same cases.
        if s is None or not missed_precision(s.ci_low, s.ci_high, s.median, target, s.stop_reason):
            continue
        evidence.append(
            f"{c.case_id}: {format_ci_pct(s.ci_low, s.ci_high, s.median)} "
            f"(target ±{target * 100:g}%), {s.n} samples, stopped by {s.stop_reason or 'unknown'}"
        )
    if evidence:
        yield Noticed(
            "medium",
            PRECISION_CATEGORY,
            f"{_plural(len(evidence), 'case')} did not reach the target precision",
            evidence,
            "the 95% CI of their median is wider than "
            "`[bench] target_precision`: small differences between runs are not real there",
            f"before comparing, {PRECISION_HINT}",
        )


def _peaks(x: RunFacts) -> Iterable[Noticed]:
    timed = [c for c in x.report.cases if c.stats is not None]
    if not timed:
        return
    device = x.report.device.device_kind or "this device"
    none = [c.case_id for c in timed if c.roofline.peak_source is None]
    builtin = [c.case_id for c in timed if c.roofline.peak_source == "builtin"]
    action = (
        "measure the peaks with `tile device --calibrate`, or set `[machine] "
        "peak_bandwidth_gbps` and `peak_tflops`"
    )
    on_cpu = x.report.device.backend == "cpu"
    if none:
        yield Noticed(
            "info",
            "roofline",
            f"no peak numbers for {device}: % of peak and bound are unknown",
            none,
            CPU_NO_PEAKS
            if on_cpu
            else "neither `[machine]`, a calibration nor the built-in "
            "table knows this device's peaks",
            CPU_PEAKS_HINT if on_cpu else action,
            "low",
        )
    if builtin:
        yield Noticed(
            "info",
            "roofline",
            f"peaks of {device} come from the built-in table",
            builtin,
            "datasheet numbers, not measured here: % of peak may be off for "
            "this machine's clocks and memory",
            action,
            "low",
        )


def _throttling(x: RunFacts) -> Iterable[Noticed]:
    from tile_harness._telemetry import throttle_reasons

    evidence: list[str] = []
    for s in x.clocks:
        reasons = throttle_reasons(s)
        if reasons:
            clock = f"SM {s.sm_mhz:g}/{s.max_sm_mhz:g} MHz" if s.sm_mhz and s.max_sm_mhz else ""
            evidence.append(
                f"{s.at} GPU {s.index}: {', '.join(reasons)}; {clock}, "
                f"{s.temperature_c}°C, {s.power_w} W"
            )
    if evidence:
        yield Noticed(
            "medium",
            "throttling",
            "the GPU slowed itself down while the run measured",
            evidence,
            "power or thermal limits lowered the clocks: times are slower than the "
            "kernel is, and compare badly with runs that were not throttled",
            "check cooling and power limits (`nvidia-smi -q -d PERFORMANCE`); rerun before "
            "trusting a regression; `telemetry/clocks.json` has every sample",
            "medium",
        )
    elif x.clock_problem is not None and x.report.device.backend not in (None, "cpu"):
        yield Noticed(
            "info",
            "telemetry",
            "GPU clocks were not recorded",
            [x.clock_problem],
            "throttling during the run cannot be ruled out",
        )


def _comparison(x: RunFacts) -> Iterable[Noticed]:
    doc = x.comparison
    if doc is None:
        return
    worse = [r for r in doc.rows if r.judgement == "regression"]
    if worse:
        # The change and its CI in one unit (percent), as the compare table shows them.
        evidence = [
            f"{r.case_id}: {format_change(r.ratio)} "
            f"(CI {format_change_ci(r.ratio_ci_low, r.ratio_ci_high)}, "
            f"p={format_p(r.p_value)})"
            if r.ratio is not None
            else f"{r.case_id}: {r.reason or 'slower'}"
            for r in worse
        ]
        yield Noticed(
            "high",
            "regression",
            f"{_plural(len(worse), 'case')} regressed against "
            f"{doc.baseline.label or 'the baseline'}",
            evidence,
            "slower beyond the noise "
            f"floor (±{doc.thresholds.noise_floor_pct:g}%) with significance "
            f"α={doc.thresholds.alpha:g}",
            "find the change that slowed them (`tile history "
            "regressions`, or bisect); rerun once to rule out a noisy machine",
            "high",
        )
    apart = [r for r in doc.rows if r.judgement == "not_comparable"]
    if apart:
        yield Noticed(
            "low",
            "comparison",
            f"{_plural(len(apart), 'case')} could not be compared with the baseline",
            [f"{r.case_id}: {r.reason}" for r in apart],
            "different device, timer or mode, or no samples on one side",
            "save a baseline from this machine and settings: `tile baseline save`",
            "low",
        )


_RULES: Final[tuple[Callable[[RunFacts], Iterable[Noticed]], ...]] = (
    _failed_checks,
    _failures,
    _comparison,
    impossible_rates,
    impossible_calibration,
    _throttling,
    _noise,
    _peaks,
    configuration_notes,
)


def notice(x: RunFacts) -> list[Noticed]:
    """Every rule over one run, most severe kinds first."""
    return [n for rule in _RULES for n in rule(x)]


def _peak_origins(resolved: ResolvedConfig) -> dict[str, str]:
    return {k: o.detail for k, o in resolved.origins.items() if k.startswith("machine.peak")}


def add_findings(
    report: ta.Report,
    comparison: ta.compare.ComparisonDoc | None,
    *,
    resolved: ResolvedConfig,
    command: str,
    clocks: ClockWatch | None,
) -> ta.Report:
    """The report with tile's findings (after those already there) and recommended actions."""
    import tile_artifacts as ta

    cfg = resolved.config
    calibration_file, calibration = accelerator_calibration(report.device, cfg.runner.env)
    inputs = RunFacts(
        report=report,
        comparison=comparison,
        clocks=clocks.samples if clocks is not None else (),
        clock_problem=clocks.problem if clocks is not None else None,
        target_precision=precision_on(cfg.bench.target_precision, report.device.backend),
        case_timeout=cfg.runner.case_timeout,
        command=command,
        peak_origins=_peak_origins(resolved),
        calibration=calibration,
        calibration_file=calibration_file,
    )
    noticed = notice(inputs)
    start = len(report.findings)
    findings = list(report.findings) + [
        ta.Finding(
            finding_id=f"N{start + i:03d}",
            severity=n.severity,
            category=n.category,
            title=n.title,
            evidence=n.evidence[:_EVIDENCE]
            + ([f"… {len(n.evidence) - _EVIDENCE} more"] if len(n.evidence) > _EVIDENCE else []),
            interpretation=n.interpretation,
        )
        for i, n in enumerate(noticed, start=1)
    ]
    actions = list(report.recommended_actions)
    for n in noticed:
        if n.action is not None and all(a.description != n.action for a in actions):
            actions.append(
                ta.RecommendedAction(
                    action_id=f"A{len(actions) + 1:03d}", priority=n.priority, description=n.action
                )
            )
    agent = report.summary.agent_summary.model_copy(
        update={
            "key_observations": [f"{n.severity}: {n.title}" for n in noticed],
            "risks": [n.title for n in noticed if n.severity in ("high", "critical")],
            "next_actions": [a.description for a in actions],
        }
    )
    summary = report.summary.model_copy(update={"agent_summary": agent})
    return report.model_copy(
        update={"findings": findings, "recommended_actions": actions, "summary": summary}
    )
