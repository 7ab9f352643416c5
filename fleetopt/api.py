"""The Python API: plan a fleet from a workload and profiles without shelling out.

>>> from fleetopt.api import plan_workload
>>> run = plan_workload("azure-2023", ttft_slo_s=0.5)          # doctest: +SKIP
>>> run.plan.best.total_gpus, run.document["best"]["b_short_tokens"]  # doctest: +SKIP

``plan_workload`` takes typed values (seconds, req/s, tokens); ``plan_from_options`` takes the
CLI's strings (``"500ms"``, ``"4096,8192"``) and returns the plan document the renderers use.
Both are thin: load (io) → one core call (:func:`fleetopt.core.planner.plan_fleet`) → document.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fleetopt.core.planner import FleetPlan, PlanOptions, plan_fleet
from fleetopt.core.service import PoolHardware
from fleetopt.core.workload import Workload
from fleetopt.defaults import (
    DEFAULT_GAMMAS,
    DEFAULT_LONG_CONTEXT_TOKENS,
    DEFAULT_MAX_UTILIZATION,
    DEFAULT_POOL_COUNT,
    DEFAULT_RATE_PER_S,
    DEFAULT_SERVING,
)
from fleetopt.errors import ValidationError


@dataclass(frozen=True)
class PlanRun:
    """A finished plan with what it was computed from."""

    plan: FleetPlan
    workload: Workload
    document: dict[str, Any]


def profile_search_path(profiles_dir: Path | None) -> tuple[Path, ...]:
    """The user's profile folder (if any) before the bundled one."""
    from fleetopt.io.data import bundled_dir

    return ((Path(profiles_dir),) if profiles_dir is not None else ()) + (bundled_dir("profiles"),)


def resolve_hardware(serving: str, gpu: str | None, dirs: Sequence[Path]) -> PoolHardware:
    """The pool hardware of a serving profile, or of its model's calibration on ``gpu``."""
    from fleetopt.io.profiles import find_serving, load_serving, pool_hardware

    if gpu is None:
        return pool_hardware(serving, dirs)
    model = load_serving(serving, dirs).model_name
    return pool_hardware(find_serving(model=model, gpu=gpu, dirs=dirs).source_file, dirs)


def resolve_pool_hardware_pair(
    serving: str, serving_long: str | None, gpu: str | None, gpu_long: str | None, dirs: Sequence[Path]
) -> tuple[PoolHardware, PoolHardware]:
    """(short, long) pool hardware: the long pool follows the short one unless told otherwise."""
    short_hardware = resolve_hardware(serving, gpu, dirs)
    if serving_long is None and gpu_long is None:
        return short_hardware, short_hardware
    return short_hardware, resolve_hardware(serving_long or serving, gpu_long, dirs)


def rate_with_origin(workload: Workload, arrival_rate_per_s: float | None) -> tuple[float, str]:
    """The rate to plan at and where it came from: ``given``, ``observed`` (the log), or ``default``."""
    if arrival_rate_per_s is not None:
        return float(arrival_rate_per_s), "given"
    observed = observed_rate_per_s(workload)
    return (observed, "observed") if observed else (DEFAULT_RATE_PER_S, "default")


def observed_rate_per_s(workload: Workload) -> float | None:
    """The log's mean arrival rate, (n − 1)/span, or None without usable timestamps."""
    from fleetopt.core.workload_stats import arrival_statistics

    times = workload.arrival_times_s
    if times is None or times.size < 2:
        return None
    return arrival_statistics(times).mean_rate_per_s


def plan_workload(
    workload: str | Workload,
    *,
    ttft_slo_s: float,
    arrival_rate_per_s: float | None = None,
    serving: str = DEFAULT_SERVING,
    serving_long: str | None = None,
    gpu: str | None = None,
    gpu_long: str | None = None,
    long_context_tokens: int = DEFAULT_LONG_CONTEXT_TOKENS,
    b_short_candidates: Sequence[int] | None = None,
    gammas: Sequence[float] = DEFAULT_GAMMAS,
    compressibility: float = 1.0,
    service_model: str = "lockstep",
    max_utilization: float = DEFAULT_MAX_UTILIZATION,
    tpot_slo_s: float | None = None,
    max_pools: int = DEFAULT_POOL_COUNT,
    profiles_dir: Path | None = None,
    reader_options: dict[str, Any] | None = None,
    workload_label: str | None = None,
) -> PlanRun:
    """Plan the cheapest fleet for a workload (a bundled name, a path, or a loaded Workload)."""
    from fleetopt.io.workloads import load_workload
    from fleetopt.render.plan_document import plan_document

    if isinstance(workload, Workload):
        loaded, label = workload, workload_label or workload.name
    else:
        loaded, label = load_workload(workload, **(reader_options or {})), workload_label or workload
    dirs = profile_search_path(profiles_dir)
    short_hardware, long_hardware = resolve_pool_hardware_pair(serving, serving_long, gpu, gpu_long, dirs)
    arrival_rate_per_s, origin = rate_with_origin(loaded, arrival_rate_per_s)
    options = PlanOptions(
        arrival_rate_per_s=float(arrival_rate_per_s),
        ttft_slo_s=ttft_slo_s,
        long_context_tokens=long_context_tokens,
        b_short_candidates=tuple(int(b) for b in b_short_candidates) if b_short_candidates else None,
        gammas=tuple(float(g) for g in gammas),
        compressibility=compressibility,
        service_model=service_model,
        max_utilization=max_utilization,
        tpot_slo_s=tpot_slo_s,
        max_pools=int(max_pools),
    )
    plan = plan_fleet(loaded, short_hardware, long_hardware, options)
    document = plan_document(
        plan, loaded, {"workload": label, "arrival_rate_origin": origin, "workload_reader": reader_options}
    )
    return PlanRun(plan=plan, workload=loaded, document=document)


def plan_from_options(
    *,
    workload: str,
    slo: str,
    rate_per_s: float | None,
    b_short: str | None,
    gamma: str | None,
    tpot_slo: str | None,
    **options: Any,
) -> dict[str, Any]:
    """``fleetopt plan``'s strings → the plan document (see :func:`plan_workload`)."""
    return plan_run_from_options(
        workload=workload,
        slo=slo,
        rate_per_s=rate_per_s,
        b_short=b_short,
        gamma=gamma,
        tpot_slo=tpot_slo,
        **options,
    ).document


def plan_run_from_options(
    *,
    workload: str,
    slo: str,
    rate_per_s: float | None,
    b_short: str | None,
    gamma: str | None,
    tpot_slo: str | None,
    **options: Any,
) -> PlanRun:
    """Like :func:`plan_from_options`, returning the whole :class:`PlanRun`."""
    from fleetopt.io.units import parse_duration_s, parse_number_list

    if rate_per_s is not None and not rate_per_s >= 0:
        raise ValidationError(f"--rate: {rate_per_s:g} req/s must be ≥ 0")
    b_values = parse_number_list(b_short, field="--b-short", integer=True) if b_short else None
    gammas = tuple(parse_number_list(gamma, field="--gamma")) if gamma else DEFAULT_GAMMAS
    return plan_workload(
        workload,
        ttft_slo_s=parse_duration_s(slo, field="--slo"),
        arrival_rate_per_s=rate_per_s,
        b_short_candidates=b_values,
        gammas=gammas,
        tpot_slo_s=parse_duration_s(tpot_slo, field="--tpot-slo") if tpot_slo else None,
        **options,
    )


# -- drift: does yesterday's plan fit today's workload? -----------------------------------------


@dataclass(frozen=True)
class DriftRun:
    """A plan checked against today's workload (``fleetopt drift``): the typed result and its inputs.

    ``rate_origin``: where today's rate came from — ``given``, ``observed`` (the log) or ``planned``.
    """

    result: Any  # fleetopt.core.drift.DriftResult
    plan: Any  # fleetopt.io.plans.PlanFile
    today: Workload
    options: PlanOptions  # the plan's options at today's rate
    tolerances: Any  # fleetopt.core.drift.Tolerances
    current: Any  # fleetopt.core.drift.WorkloadSummary of today's workload
    rate_origin: str


def check_plan_drift(
    plan_path: Path,
    workload: str,
    *,
    arrival_rate_per_s: float | None = None,
    tolerances: Any = None,
    reader_options: dict[str, Any] | None = None,
) -> DriftRun:
    """Read a plan (the one plan reader), load today's workload, pick today's rate (given, else the
    log's observed rate, else the planned one) and make the one core call,
    :func:`fleetopt.core.drift.check_drift`."""
    import dataclasses

    from fleetopt.core.drift import Tolerances, check_drift
    from fleetopt.io.plans import read_plan, workload_fingerprint, workload_summary
    from fleetopt.io.workloads import load_workload

    tolerances = Tolerances() if tolerances is None else tolerances
    if arrival_rate_per_s is not None and not (0 < arrival_rate_per_s < float("inf")):
        raise ValidationError(f"--rate: {arrival_rate_per_s:g} req/s must be positive and finite")
    plan_file = read_plan(plan_path)
    today = load_workload(workload, **(reader_options or {}))
    if arrival_rate_per_s is not None:
        rate, origin = float(arrival_rate_per_s), "given"
    elif (observed := observed_rate_per_s(today)) is not None:
        rate, origin = observed, "observed"
    else:
        rate, origin = plan_file.options.arrival_rate_per_s, "planned"
    fleet = plan_file.fleet
    current = workload_summary(
        workload_fingerprint(today, fleet.b_short_tokens, fleet.gamma), "today's workload"
    )
    options = dataclasses.replace(plan_file.options, arrival_rate_per_s=rate)
    result = check_drift(today, fleet, options, plan_file.summary, current, tolerances)
    return DriftRun(result, plan_file, today, options, tolerances, current, origin)


# -- cross-checking a plan by simulation -------------------------------------------------------


@dataclass(frozen=True)
class CrossCheck:
    """A plan's fleet simulated and set beside its predictions (``simulate``, ``plan --validate``).

    ``reevaluated_for_other_workload``: the simulated workload is not the one the plan was computed
    for, so the predictions were re-evaluated for it (same pools, the planner's own formulas).
    """

    report: Any  # fleetopt.core.crosscheck.CrossCheckReport
    workload_name: str
    arrival_process: str  # "poisson" or "replay"
    reevaluated_for_other_workload: bool = False


def crosscheck_setup_run(
    setup: Any,
    workload: Workload,
    *,
    service_model: str,
    dispatch: str = "pooled",
    requests: int | None = None,
    seeds: int = 3,
    warmup_fraction: float = 0.5,
    arrival_rate_per_s: float | None = None,
    replay: bool = False,
    progress: Any = None,
    reevaluated_for_other_workload: bool = False,
) -> CrossCheck:
    """Simulate a cross-check setup; re-evaluate its predictions first when the rate or model differ.

    ``replay``: the log's own arrival times (scaled to ``arrival_rate_per_s`` when given), else
    Poisson arrivals at that rate (default: the setup's).
    """
    from fleetopt.core.crosscheck import crosscheck_setup, reevaluate
    from fleetopt.core.simulate import DISPATCH_POLICIES, PHYSICAL, SERVICE_MODELS

    if service_model not in SERVICE_MODELS:
        raise ValidationError(f"--service-model: {service_model!r} is not one of {', '.join(SERVICE_MODELS)}")
    if dispatch not in DISPATCH_POLICIES:
        raise ValidationError(f"--dispatch: {dispatch!r} is not one of {', '.join(DISPATCH_POLICIES)}")
    if seeds < 1:
        raise ValidationError(f"seeds: {seeds} must be ≥ 1")
    if requests is not None and requests < 2:
        raise ValidationError(f"requests: {requests} must be ≥ 2")
    times = None
    rate = arrival_rate_per_s
    if replay:
        times = workload.arrival_times_s
        if times is None or times.size < 2:
            raise ValidationError(
                f"--replay: workload {workload.name!r} has no arrival times (a CDF, or a log without a "
                "time column); drop --replay to simulate Poisson arrivals"
            )
        if rate is None:
            rate = (times.size - 1) / float(times[-1] - times[0])
    elif rate is None:
        rate = setup.arrival_rate_per_s
    analytical_model = setup.analytical_model if service_model == PHYSICAL else service_model
    if rate != setup.arrival_rate_per_s or analytical_model != setup.analytical_model:
        setup = reevaluate(setup, workload, rate, analytical_model)
    report = crosscheck_setup(
        setup,
        workload,
        service_model=service_model,
        dispatch=dispatch,
        requests=requests,
        seeds=tuple(range(1, seeds + 1)),
        warmup_fraction=warmup_fraction,
        arrival_rate_per_s=rate if not replay or arrival_rate_per_s is not None else None,
        arrival_times_s=times,
        progress=progress,
    )
    return CrossCheck(
        report, workload.name, "replay" if replay else "poisson", reevaluated_for_other_workload
    )


def crosscheck_plan_run(
    run: PlanRun, *, requests: int | None = None, seeds: int = 3, progress: Any = None
) -> CrossCheck:
    """``fleetopt plan --validate``: a fresh plan's best fleet, simulated under its model and traffic."""
    from fleetopt.core.crosscheck import setup_from_plan

    setup = setup_from_plan(run.plan)
    return crosscheck_setup_run(
        setup, run.workload, service_model=setup.analytical_model, requests=requests, seeds=seeds,
        progress=progress,
    )  # fmt: skip


def crosscheck_plan_file(
    path: Path,
    *,
    workload: str | None = None,
    service_model: str | None = None,
    dispatch: str = "pooled",
    requests: int | None = None,
    seeds: int = 3,
    warmup_fraction: float = 0.5,
    arrival_rate_per_s: float | None = None,
    replay: bool = False,
    progress: Any = None,
) -> CrossCheck:
    """``fleetopt simulate --plan``: a plan file's fleet simulated on its own workload (or another).

    The plan is read by the one plan reader (:func:`fleetopt.io.plans.read_plan`); its workload is
    re-read the way the plan read it; on another workload the predictions are re-evaluated first.
    """
    from fleetopt.core.crosscheck import reevaluate, setup_from_planned
    from fleetopt.errors import FleetoptError
    from fleetopt.io.plans import read_plan, workload_fingerprint
    from fleetopt.io.workloads import load_workload

    plan_file = read_plan(path)
    if arrival_rate_per_s is not None and not arrival_rate_per_s > 0:
        raise ValidationError(f"--rate: {arrival_rate_per_s:g} req/s must be > 0")
    if not 0.0 <= warmup_fraction < 1.0:
        raise ValidationError(f"--warmup-fraction: {warmup_fraction:g} must be in [0, 1)")
    setup = setup_from_planned(plan_file.fleet, plan_file.options)
    name = workload if workload is not None else plan_file.workload
    if name is None:
        raise ValidationError(f"plan {path}: inputs.workload = None is invalid; pass --cdf")
    try:
        loaded = load_workload(name, **(plan_file.workload_reader if workload is None else {}))
    except FleetoptError as exc:
        if workload is not None:
            raise
        raise ValidationError(f"plan {path}: its workload cannot be loaded ({exc}); pass --cdf") from None
    other = workload_fingerprint(loaded, None, None)["sha256"] != plan_file.summary.digest
    if other:
        setup = reevaluate(
            setup, loaded, arrival_rate_per_s or setup.arrival_rate_per_s, setup.analytical_model
        )
    return crosscheck_setup_run(
        setup, loaded, service_model=service_model or plan_file.options.service_model,
        dispatch=dispatch, requests=requests, seeds=seeds, warmup_fraction=warmup_fraction,
        arrival_rate_per_s=arrival_rate_per_s, replay=replay, progress=progress,
        reevaluated_for_other_workload=other,
    )  # fmt: skip


# -- audit -----------------------------------------------------------------------------------------
# ``fleetopt audit``'s two paths, each: the CLI's strings → typed values and defaults → one core call.

from fleetopt.core.audit import WorkloadAudit  # noqa: E402  (kept in this block for a clean merge)
from fleetopt.core.savings import AuditResult  # noqa: E402

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
    DEFAULT_RATE_PER_S), DEFAULT_SERVING, DEFAULT_LONG_CONTEXT_TOKENS, the lockstep service model,
    DEFAULT_MAX_UTILIZATION, p_c = 1.
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
    short_hardware, long_hardware = resolve_pool_hardware_pair(
        serving or DEFAULT_SERVING, serving_long, gpu, gpu_long, dirs
    )
    rate, origin = rate_with_origin(workload, rate)
    plan_options = PlanOptions(
        arrival_rate_per_s=float(rate),
        ttft_slo_s=ttft_slo_s,
        long_context_tokens=DEFAULT_LONG_CONTEXT_TOKENS if long_context is None else long_context,
        b_short_candidates=b_values,
        compressibility=p_c,
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
        return WorkloadAuditRun(audit_workload(workload, short_hardware, long_hardware, options), origin)
    except HomogeneousInfeasible as exc:
        from fleetopt.render.words import fleet_reason

        raise ValidationError(
            f"the homogeneous fleet is infeasible ({fleet_reason(exc.fleet) or 'infeasible'}): the audit "
            "needs it as its baseline; relax --slo or --max-utilization"
        ) from None
