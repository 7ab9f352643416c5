"""``fleetopt audit``'s API: the CLI's strings → typed values and defaults → one core call."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fleetopt.api import (
    profile_search_path,
    rate_with_origin,
    resolve_pool_hardware,
)
from fleetopt.core.planner import PlanOptions
from fleetopt.defaults import DEFAULT_LONG_CONTEXT_TOKENS, PAPER_SERVING
from fleetopt.errors import ValidationError

# -- audit -----------------------------------------------------------------------------------------
# ``fleetopt audit``'s two paths, each: the CLI's strings → typed values and defaults → one core call.

if TYPE_CHECKING:  # annotations only: the audit's modules load when an audit runs
    from fleetopt.core.audit import WorkloadAudit
    from fleetopt.core.savings import AuditResult

#: The workload audit's default P99 TTFT SLO: the papers' 500 ms (FleetOpt §7.1).
DEFAULT_AUDIT_SLO = "500ms"


def audit_numbers(
    *,
    alpha: str | None = None,
    rho: float | None = None,
    mu_short: float | None = None,
    mu_long: float | None = None,
    mu_homo: float | None = None,
    rate: float | None = None,
    slots_short: int | None = None,
    slots_long: int | None = None,
    iteration_base: str | None = None,
    iteration_per_slot: str | None = None,
    headroom_short: float | None = None,
    headroom_long: float | None = None,
    headroom_homo: float | None = None,
    whole_instances: bool = False,
    beta: str | None = None,
    compressibility: str | None = None,
    gpus_per_instance: int | None = None,
    gpu_hour_usd: float | None = None,
    current_gpus: int | None = None,
    proposed_gpus: int | None = None,
) -> AuditResult:
    """``fleetopt audit``'s numbers (α, β, p_c as ``0.8``/``80%``, durations as ``8ms``) → AuditResult.

    Defaults: p_c = 1, the papers' W = 8 ms and H = 0.65 ms, headroom 1, 1 GPU per instance,
    PAPER_GPU_HOUR_USD per GPU-hour. Raises ValidationError when α + β > 1 (β lies above B).
    """
    from fleetopt.core.savings import (
        PAPER_ITERATION_BASE_S,
        PAPER_ITERATION_PER_SLOT_S,
        AuditInputs,
        audit_savings,
    )
    from fleetopt.defaults import PAPER_GPU_HOUR_USD
    from fleetopt.io.units import parse_duration_s, parse_fraction

    short_fraction = None if alpha is None else parse_fraction(alpha, field="--alpha")
    borderline_fraction = None if beta is None else parse_fraction(beta, field="--beta")
    compressible_fraction = (
        1.0 if compressibility is None else parse_fraction(compressibility, field="--compressibility")
    )
    if short_fraction is not None and borderline_fraction is not None:
        if short_fraction + borderline_fraction > 1.0:
            raise ValidationError(
                f"--alpha {alpha} plus --beta {beta} is {short_fraction + borderline_fraction:g}; "
                "the borderline band (B, γB] lies above B, so α + β = F(γB) must be ≤ 1"
            )
    base_s = PAPER_ITERATION_BASE_S
    if iteration_base is not None:
        base_s = parse_duration_s(iteration_base, field="--iteration-base")
    per_slot_s = PAPER_ITERATION_PER_SLOT_S
    if iteration_per_slot is not None:
        per_slot_s = parse_duration_s(iteration_per_slot, field="--iteration-per-slot")
    return audit_savings(
        AuditInputs(
            short_fraction=short_fraction,
            throughput_ratio=rho,
            arrival_rate_per_s=rate,
            short_throughput_per_s=mu_short,
            long_throughput_per_s=mu_long,
            homogeneous_throughput_per_s=mu_homo,
            short_slots=slots_short,
            long_slots=slots_long,
            iteration_base_s=base_s,
            iteration_per_slot_s=per_slot_s,
            headroom_short=1.0 if headroom_short is None else headroom_short,
            headroom_long=1.0 if headroom_long is None else headroom_long,
            headroom_homogeneous=1.0 if headroom_homo is None else headroom_homo,
            round_up=whole_instances,
            borderline_fraction=borderline_fraction,
            compressible_fraction=compressible_fraction,
            gpus_per_instance=1 if gpus_per_instance is None else gpus_per_instance,
            gpu_hour_usd=PAPER_GPU_HOUR_USD if gpu_hour_usd is None else gpu_hour_usd,
            current_gpus=current_gpus,
            proposed_gpus=proposed_gpus,
        )
    )


@dataclass(frozen=True)
class WorkloadAuditRun:
    """A finished workload audit with where its rate came from (``given``/``observed``/``default``)."""

    audit: WorkloadAudit
    arrival_rate_origin: str
    split_assumed: bool = False


def audit_workload_from_options(
    *,
    cdf: str,
    slo: str | None = None,
    rate: float | None = None,
    serving: str | None = None,
    serving_long: str | None = None,
    gpu: str | None = None,
    gpu_long: str | None = None,
    long_context: int | None = None,
    service_model: str | None = None,
    max_utilization: float | None = None,
    compressibility: str | None = None,
    b_short: str | None = None,
    at_b_short: int | None = None,
    gamma: float | None = None,
    rates: str | None = None,
    current_gpus: int | None = None,
    current_context: int | None = None,
    reader_options: dict[str, Any] | None = None,
    profiles_dir: Path | None = None,
) -> WorkloadAuditRun:
    """``fleetopt audit --cdf``'s strings → load the workload and profiles → ``audit_workload``.

    Defaults: SLO DEFAULT_AUDIT_SLO, the rate of ``fleetopt plan`` (observed, else
    DEFAULT_RATE_PER_S), PAPER_SERVING (the audit is the papers' estimates, on their calibration),
    DEFAULT_LONG_CONTEXT_TOKENS, the lockstep service model,
    DEFAULT_MAX_UTILIZATION, p_c = 1 and no cap on the cut (the papers' C&R rule).
    """
    from fleetopt.core.audit import HomogeneousInfeasible, WorkloadAuditOptions, audit_workload
    from fleetopt.defaults import DEFAULT_MAX_UTILIZATION
    from fleetopt.io.units import parse_duration_s, parse_fraction, parse_number_list
    from fleetopt.io.workloads import load_workload

    ttft_slo_s = parse_duration_s(slo or DEFAULT_AUDIT_SLO, field="--slo")
    p_c = 1.0 if compressibility is None else parse_fraction(compressibility, field="--compressibility")
    b_values = tuple(parse_number_list(b_short, field="--b-short", integer=True)) if b_short else None
    rate_values = tuple(parse_number_list(rates, field="--rates")) if rates else None
    workload = load_workload(cdf, **(reader_options or {}))
    dirs = profile_search_path(profiles_dir)
    hardware = resolve_pool_hardware(serving or PAPER_SERVING, serving_long, gpu, gpu_long, dirs)
    rate, origin = rate_with_origin(workload, rate)
    plan_options = PlanOptions(
        sizing_rate_per_s=float(rate),
        ttft_slo_s=ttft_slo_s,
        long_context_tokens=DEFAULT_LONG_CONTEXT_TOKENS if long_context is None else long_context,
        b_short_candidates=b_values,
        compressibility=p_c,
        max_cut_fraction=1.0,  # the papers' C&R rule, as p_c = 1: the audit is the papers' estimates
        service_model=service_model or "lockstep",
        max_utilization=DEFAULT_MAX_UTILIZATION if max_utilization is None else max_utilization,
    )
    options = WorkloadAuditOptions(
        plan=plan_options,
        b_short_tokens=at_b_short,
        gamma=gamma,
        current_gpus=None if current_gpus is None else float(current_gpus),
        current_context_tokens=current_context,
        rates_per_s=rate_values,
    )
    try:
        return WorkloadAuditRun(audit_workload(workload, hardware, options), origin, workload.split_assumed)
    except HomogeneousInfeasible as exc:
        from fleetopt.io.documents.words import fleet_reason

        raise ValidationError(
            f"the homogeneous fleet is infeasible ({fleet_reason(exc.fleet) or 'infeasible'}): the audit "
            "needs it as its baseline; relax --slo or --max-utilization"
        ) from None
