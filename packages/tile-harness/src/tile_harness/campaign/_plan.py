"""`tile campaign plan`: a campaign file expanded into units, each one `tile bench` command.

A unit is one variant (x one value of each perturbed variable) on one machine over the
selected cases. Its overrides become `tile bench` arguments (`--profile`, `--set KEY=VALUE`,
`--slurm-arg`), so the ordinary config layering applies and the unit's run directory records
exactly what ran. Each unit's configuration is resolved here first: a bad combination (a
missing profile, `min_runs` above `max_runs`) is refused before anything runs.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import tile_artifacts as ta
from tile_harness._errors import CliError, ExitCode
from tile_harness.campaign._estimate import METHOD, estimate_unit
from tile_harness.campaign._history import History, bench_fingerprint, read_history
from tile_harness.campaign._select import Listing, axis_flags, list_cases, select_cases, smoke_cases

if TYPE_CHECKING:
    from tile_config import Campaign, MachineSpec, ResolvedConfig, VariantSpec

__all__ = [
    "CampaignSetup",
    "Variant",
    "campaigns_root",
    "expand_variants",
    "make_plan",
    "producer",
]


def producer() -> ta.Producer:
    """tile-cli as the producer of campaign documents, with the git state of the cwd."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        tool_version = version("tile-cli")
    except PackageNotFoundError:
        tool_version = "0+unknown"
    return ta.producer_info("tile", tool_version, Path.cwd())


@dataclass(frozen=True)
class Variant:
    """One expanded variant: `[variants.NAME]` with one value of each `[perturb]` variable."""

    variant_id: str
    name: str
    spec: VariantSpec
    perturbed: dict[str, str]


@dataclass(frozen=True)
class CampaignSetup:
    """A checked campaign, its plan, and every unit's resolved settings (for the snapshot)."""

    campaign: Campaign
    resolved: ResolvedConfig
    plan: ta.campaign.CampaignPlan
    unit_settings: dict[str, dict[str, object]]


def campaigns_root(resolved: ResolvedConfig) -> Path:
    """Where campaign directories go: `campaigns/` beside `[output] dir`'s runs (`.tile/`)."""
    runs = resolved.resolve_path(resolved.config.output.dir).absolute()
    return (runs.parent if runs.name == "runs" else runs) / "campaigns"


def expand_variants(campaign: Campaign) -> list[Variant]:
    """Variants x perturbation values, in file order: `cold+noautotune`, ..."""
    from tile_config import VariantSpec

    named = dict(campaign.spec.variants) or {"default": VariantSpec()}
    axes = [
        [(var, label, value) for label, value in values.items()]
        for var, values in campaign.spec.perturb.items()
    ]
    out: list[Variant] = []
    for name, spec in named.items():
        for combo in itertools.product(*axes):
            variant_id = "+".join([name, *(label for _, label, _ in combo)])
            out.append(Variant(variant_id, name, spec, {var: value for var, _, value in combo}))
    return out


def _baseline(campaign: Campaign, variants: list[Variant]) -> str:
    wanted = campaign.spec.compare.baseline
    if wanted is None:
        return variants[0].variant_id
    for variant in variants:
        if wanted in (variant.variant_id, variant.name):
            return variant.variant_id
    raise CliError(
        f"{campaign.where('compare', 'baseline')}: `compare.baseline` = `{wanted}` is none of "
        f"the variants: {', '.join(v.variant_id for v in variants)}",
        hint="name a variant, or a variant with its perturbation labels (`warm+base`)",
    )


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _machine_sets(machine: MachineSpec) -> dict[str, object]:
    keys: dict[str, object] = {
        "launcher.kind": machine.launcher,
        "launcher.shards": machine.shards,
        "launcher.partition": machine.partition,
        "launcher.time_limit": machine.time_limit,
        "launcher.gres": machine.gres,
        "runner.python": machine.python,
        "machine.peak_bandwidth_gbps": machine.peak_bandwidth_gbps,
        "machine.l2_bytes": machine.l2_bytes,
    }
    sets: dict[str, object] = {k: v for k, v in keys.items() if v is not None}
    sets |= {f"machine.peak_tflops.{k}": v for k, v in machine.peak_tflops.items()}
    return sets | {f"runner.env.{k}": v for k, v in machine.env.items()}


def _variant_sets(variant: Variant, smoke: Mapping[str, object] | None) -> dict[str, object]:
    spec = variant.spec
    sets: dict[str, object] = {
        f"bench.{k}": v for k, v in spec.bench.model_dump(exclude_none=True).items()
    }
    sets |= {f"bench.{k}": v for k, v in (smoke or {}).items()}
    sets |= {f"runner.{k}": v for k, v in spec.runner.model_dump(exclude_none=True).items()}
    return sets | {f"runner.env.{k}": v for k, v in spec.env.items()}


def _resolve(
    campaign: Campaign, unit_id: str, where: str, profile: str | None, sets: Mapping[str, object]
) -> ResolvedConfig:
    from tile_config import ConfigError, load_config

    try:
        return load_config(cwd=Path.cwd(), profile=profile, environ=os.environ, overrides=sets)
    except ConfigError as exc:
        # The unit's overrides reach the loader as flags: say they came from the campaign.
        text = str(exc).replace("from cli)", "from the campaign)")
        lines = [line.removeprefix("cli: ") for line in text.splitlines()]
        hint = f"edit the {where}" if "command-line" in exc.hint else exc.hint
        raise CliError(
            f"unit `{unit_id}` of campaign `{campaign.name}` ({where}) cannot be configured: "
            + "\n  ".join(lines),
            hint=f"{hint}; `tile config` shows the values the campaign builds on",
            code=ExitCode.USAGE,
        ) from None


def _unit_sets(
    campaign: Campaign,
    unit_id: str,
    variant: Variant,
    machine: MachineSpec,
    smoke: Mapping[str, object] | None,
) -> tuple[dict[str, object], ResolvedConfig]:
    """The unit's `--set` overrides (perturbations last) and its resolved configuration.

    A perturbed `XLA_FLAGS` adds its flags to those the unit has without it (from the variant,
    `[runner] env` or the environment): varying one flag must not drop the others.
    """
    where = f"variant at {campaign.where('variants', variant.name)}"
    if campaign.spec.machines:
        where += f", machine at {campaign.where('machines', unit_id.rpartition('@')[2])}"
    sets = _machine_sets(machine) | _variant_sets(variant, smoke)
    resolved = _resolve(campaign, unit_id, where, variant.spec.profile, sets)
    for name, value in variant.perturbed.items():
        text = value
        if name == "XLA_FLAGS":
            base = resolved.config.runner.env.get(name, os.environ.get(name, ""))
            text = " ".join(part for part in (base, value) if part)
        sets[f"runner.env.{name}"] = text
    if variant.perturbed:
        resolved = _resolve(campaign, unit_id, where, variant.spec.profile, sets)
    return sets, resolved


def _args(campaign: Campaign, case_ids: list[str], unit: _Configured) -> list[str]:
    """`tile bench` arguments of a unit, without the output directory."""
    variant, sets, machine = unit.variant, unit.sets, unit.machine
    select = campaign.spec.select
    args = ["bench", *(a for c in case_ids for a in ("--case", c))]
    args += [a for p in select.plugins for a in ("--plugin", p)]
    args += [a for f in axis_flags(dict(select.axes)) for a in ("-a", f)]
    if select.cases is not None:  # resolved by the plan's configuration, as the listing read it
        args += ["--cases", str(unit.resolved.resolve_path(select.cases))]
    if variant.spec.profile:
        args += ["--profile", variant.spec.profile]
    args += [a for k, v in sets.items() for a in ("--set", f"{k}={_text(v)}")]
    return args + [f"--slurm-arg={a}" for a in machine.extra_args]


def _budget(campaign: Campaign, units: list[ta.campaign.PlannedUnit]) -> ta.campaign.BudgetRecord:
    from tile_protocol.format import format_seconds

    budget = campaign.spec.budget
    estimated = sum(u.estimate.total_s for u in units)
    case_runs = sum(len(u.case_ids) for u in units)
    reasons: list[str] = []
    if budget.wall_time is not None and estimated > budget.wall_time:
        reasons.append(
            f"estimated {format_seconds(estimated)} is over `budget.wall_time` = "
            f"{format_seconds(budget.wall_time)} ({campaign.where('budget', 'wall_time')})"
        )
    if budget.max_cases is not None and case_runs > budget.max_cases:
        reasons.append(
            f"{case_runs} case runs are over `budget.max_cases` = {budget.max_cases} "
            f"({campaign.where('budget', 'max_cases')})"
        )
    return ta.campaign.BudgetRecord(
        wall_time_s=budget.wall_time,
        max_cases=budget.max_cases,
        estimated_s=estimated,
        case_runs=case_runs,
        over=bool(reasons),
        reasons=reasons,
    )


@dataclass(frozen=True)
class _Configured:
    """A unit before its cases are known: its variant, machine, overrides and resolved config."""

    unit_id: str
    variant: Variant
    machine_name: str
    machine: MachineSpec
    sets: dict[str, object]
    resolved: ResolvedConfig


def _configure(campaign: Campaign, smoke: bool) -> list[_Configured]:
    """Every variant x machine with its configuration resolved: bad ones fail before listing."""
    from tile_config import MachineSpec

    smoke_bench = None
    if smoke:
        defaults = type(campaign.spec.smoke)().bench.model_dump(exclude_none=True)
        smoke_bench = defaults | campaign.spec.smoke.bench.model_dump(exclude_none=True)
    machines = dict(campaign.spec.machines) or {"local": MachineSpec()}
    out: list[_Configured] = []
    for variant in expand_variants(campaign):
        for machine_name, machine in machines.items():
            unit_id = f"{variant.variant_id}@{machine_name}"
            sets, resolved = _unit_sets(campaign, unit_id, variant, machine, smoke_bench)
            out.append(_Configured(unit_id, variant, machine_name, machine, sets, resolved))
    return out


def _units(
    campaign: Campaign,
    configured: list[_Configured],
    listing: Listing,
    case_ids: list[str],
    history: History,
) -> tuple[list[ta.campaign.PlannedUnit], dict[str, dict[str, object]]]:
    from tile_config import flatten

    units: list[ta.campaign.PlannedUnit] = []
    settings: dict[str, dict[str, object]] = {}
    for c in configured:
        cfg = c.resolved.config
        local = cfg.launcher.kind == "local"
        kind = c.machine.device_kind or (listing.device_kind if local else None)
        flat = flatten(cfg)
        estimate, cases = estimate_unit(
            history,
            device_kind=kind,
            case_ids=case_ids,
            settings=bench_fingerprint(flat),
            max_time=cfg.bench.max_time,
            shards=cfg.launcher.shards,
            lists_first=not local or cfg.launcher.shards > 1,
        )
        units.append(
            ta.campaign.PlannedUnit(
                unit_id=c.unit_id,
                variant=c.variant.variant_id,
                machine=c.machine_name,
                device_kind=kind,
                shards=cfg.launcher.shards,
                case_ids=case_ids,
                args=_args(campaign, case_ids, c),
                estimate=estimate,
                cases=cases,
            )
        )
        settings[c.unit_id] = flat
    return units, settings


def make_plan(name: str, *, smoke: bool, output_dir: Path | None = None) -> CampaignSetup:
    """Load, check and expand campaign `name` into its plan (listing the cases runs a runner)."""
    from tile_config import ConfigError, load_campaign
    from tile_harness._settings import resolve_config

    resolved = resolve_config(None, {})
    try:
        campaign = load_campaign(name, resolved)
    except ConfigError as exc:
        raise CliError(str(exc), hint=exc.hint, code=ExitCode.USAGE) from None
    configured = _configure(campaign, smoke)
    baseline = _baseline(campaign, expand_variants(campaign))
    select = campaign.spec.select
    # `[select] cases`, else the project's `[bench] cases`, which each unit's bench reads too.
    named = select.cases if select.cases is not None else resolved.config.bench.cases
    cases_file = resolved.resolve_path(named) if named is not None else None
    listing = list_cases(select.plugins, dict(select.axes), select.modes, cases_file)
    where = {key: campaign.where("select", key) for key in ("kernels", "filters", "axes")}
    where["select"] = campaign.where("select")
    cases, matched = select_cases(
        listing, kernels=select.kernels, filters=select.filters, axes=dict(select.axes), where=where
    )
    if smoke:
        cases = smoke_cases(cases, campaign.spec.smoke.cases_per_kernel)
    root = campaigns_root(resolved)
    history = read_history(resolved.resolve_path(resolved.config.output.dir), root)
    case_ids = [c.case_id for c in cases]
    units, settings = _units(campaign, configured, listing, case_ids, history)
    variants = list(dict.fromkeys(u.variant for u in units))
    directory = output_dir or root / (f"{name}-smoke" if smoke else name)
    plan = ta.campaign.CampaignPlan(
        producer=producer(),
        run=ta.RunInfo(
            run_id=ta.new_run_id("campaign"),
            created_at=ta.utc_now(),
            status="dry_run",
            output_directory=str(directory.absolute()),
        ),
        campaign=name,
        source=campaign.display,
        smoke=smoke,
        listed_device_kind=listing.device_kind,
        variants=variants,
        machines=list(dict.fromkeys(u.machine for u in units)),
        baseline_variant=baseline,
        selectors=matched,
        units=units,
        budget=_budget(campaign, units),
        estimate_method=METHOD,
    )
    return CampaignSetup(campaign=campaign, resolved=resolved, plan=plan, unit_settings=settings)
