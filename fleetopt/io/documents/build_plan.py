"""Building the plan document: a :class:`~fleetopt.core.planner.FleetPlan` as a typed
:class:`~fleetopt.io.documents.plan.PlanDocument` (its fields and schema: ``plan.py``).

What ``fleetopt plan --format json|yaml`` prints and ``--output`` writes (atomically, by
:func:`fleetopt.io.plans.write_document_atomically`); read back by the one plan reader,
:func:`fleetopt.io.plans.read_plan`. The document carries words (the routing rule, why a pool is
infeasible, the notes and warnings): they come from :mod:`fleetopt.io.documents.words`. No rich:
the Python API builds it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from fleetopt import __version__
from fleetopt.core.planner import FleetCandidate, FleetPlan, PlanOptions, hardware_position
from fleetopt.core.routing import Routing
from fleetopt.core.service import PoolHardware
from fleetopt.core.sizing import PoolSizing
from fleetopt.core.workload import Workload
from fleetopt.defaults import CHAT_TPOT_NOTICE_S, DEFAULT_DISPATCH, HOURS_PER_YEAR
from fleetopt.io.documents.plan import (
    PLAN_KIND,
    SCHEMA_VERSION,
    Baselines,
    CompressionReliance,
    FleetDocument,
    FleetRouting,
    GridCell,
    HardwareOption,
    HardwareSearchDocument,
    PlanDocument,
    PlanInputs,
    PoolCountBest,
    PoolDocument,
    Profiles,
    RateBasis,
    RefinedFleetDocument,
    RefinedPoolDocument,
    RefinementDocument,
    Savings,
    ScheduleDocument,
    ScheduleWindowDocument,
    WorkloadReader,
)
from fleetopt.io.documents.words import (
    basis_notes,
    context_notes,
    fleet_reason,
    headroom_warnings,
    plan_notes,
    pool_model_notes,
    pool_reason,
    rate_notes,
    regime_warnings,
    workload_notes,
)
from fleetopt.io.plans import workload_fingerprint


def pool_headroom(pool: PoolSizing, options: PlanOptions) -> dict[str, Any]:
    """How far a serving pool sits below its SLOs: TTFT against the SLO, TPOT against the TPOT SLO
    (or, without one, against :data:`~fleetopt.defaults.CHAT_TPOT_NOTICE_S`). None where the pool
    serves nothing or is infeasible."""
    serves = pool.feasible and pool.instances > 0 and pool.arrival_rate_per_s > 0
    ttft_ok = serves and math.isfinite(pool.p99_ttft_s)
    tpot_ok = serves and math.isfinite(pool.iteration_s)
    tpot_limit = options.tpot_slo_s if options.tpot_slo_s is not None else CHAT_TPOT_NOTICE_S
    return {
        "ttft_headroom_s": options.ttft_slo_s - pool.p99_ttft_s if ttft_ok else None,
        "ttft_headroom_fraction": 1.0 - pool.p99_ttft_s / options.ttft_slo_s if ttft_ok else None,
        "tpot_limit_s": tpot_limit,
        "tpot_limit_kind": "tpot_slo" if options.tpot_slo_s is not None else "chat_reading_pace",
        "tpot_headroom_s": tpot_limit - pool.iteration_s if tpot_ok else None,
        "tpot_headroom_fraction": 1.0 - pool.iteration_s / tpot_limit if tpot_ok else None,
    }


def pool_document(
    pool: PoolSizing, hardware: PoolHardware, total_rate_per_s: float, options: PlanOptions
) -> PoolDocument:
    """One pool: what to deploy (instances, GPUs, max_num_seqs, max_model_len) and how it behaves."""
    return PoolDocument(
        serving_profile=hardware.serving_name,
        model=hardware.model_name,
        gpu=hardware.gpu_name,
        gpus_per_instance=hardware.gpus_per_instance,
        instances=pool.instances,
        gpus=pool.gpus,
        slots_per_instance=pool.slots_per_instance,
        kv_slot_limit=pool.kv_slot_limit,
        context_tokens=pool.context_tokens,
        arrival_rate_per_s=pool.arrival_rate_per_s,
        traffic_fraction=pool.arrival_rate_per_s / total_rate_per_s if total_rate_per_s > 0 else 0.0,
        mean_service_s=pool.mean_service_s,
        service_scv=pool.service_scv,
        service_rate_per_instance_per_s=pool.service_rate_per_instance_per_s,
        utilization=pool.utilization,
        compute_utilization=pool.compute_utilization,
        p99_wait_s=pool.p99_wait_s,
        mean_wait_s=pool.mean_wait_s,
        p99_prefill_s=pool.p99_prefill_s,
        iteration_s=pool.iteration_s,
        p99_ttft_s=pool.p99_ttft_s,
        arrival_scv=pool.arrival_scv,
        binding_constraint=pool.binding_constraint,
        slots_binding=pool.slots_binding,
        feasible=pool.feasible,
        reason=pool_reason(pool),
        min_achievable_ttft_s=pool.min_achievable_ttft_s,
        fewer_instances=pool.fewer_instances,
        p99_ttft_fewer_instances_s=pool.p99_ttft_fewer_instances_s,
        slot_wait_over_slo=pool.slot_wait_over_slo,
        cost_per_year_usd=pool.cost_per_hour_usd * HOURS_PER_YEAR if pool.feasible else None,
        **pool_headroom(pool, options),
        spare_instances=pool.spare_instances,
    )


def routing_rule(routing: Routing) -> str:
    """The routing rule in words, for the people reading a plan file (shortest pool first)."""
    names, bounds = routing.pool_names, routing.boundaries_tokens
    b, band_top = bounds[0], routing.band_top_tokens
    parts = [f"{names[0]} if L_in + max_tokens ≤ {b}"]
    if band_top is not None and band_top > b:
        cut = routing.max_cut_fraction
        cap = f", cutting at most {cut:.0%} of the prompt" if cut < 1 else ""
        parts.append(
            f"compress prompts with {b} < L_in + max_tokens ≤ {band_top} to L_in = {b} − max_tokens"
            f" (p_c = {routing.compressibility:g}{cap}), then {names[0]}"
        )
    parts += [
        f"{name} if L_in + max_tokens ≤ {bound}" for name, bound in zip(names[1:], bounds[1:], strict=False)
    ]
    return "; ".join(parts) + f"; otherwise {names[-1]}"


def fleet_document(
    candidate: FleetCandidate, plan: FleetPlan, token_costs: Callable[[FleetCandidate], Any] | None = None
) -> FleetDocument:
    """One fleet (best, a baseline or a grid cell) with its pools, by name, and its routing rule;
    ``token_costs``: its :class:`~fleetopt.core.hardware_search.TokenCosts` (cost per million tokens)."""
    rate = plan.options.sizing_rate_per_s
    pools = {
        name: pool_document(pool, hardware, rate, plan.options)
        for name, pool, hardware in zip(
            candidate.pool_names, candidate.pools, candidate.hardware, strict=True
        )
    }
    routing = None
    if candidate.routing.boundaries_tokens:
        routing = FleetRouting(
            rule=routing_rule(candidate.routing),
            b_short_tokens=candidate.b_short_tokens,
            compress_up_to_tokens=candidate.routing.band_top_tokens,
            boundaries_tokens=list(candidate.routing.boundaries_tokens),
        )
    return FleetDocument(
        label=candidate.label,
        feasible=candidate.feasible,
        reason=fleet_reason(candidate),
        b_short_tokens=candidate.b_short_tokens,
        gamma=candidate.gamma,
        alpha=candidate.alpha,
        beta=candidate.beta,
        short_traffic_fraction=candidate.short_traffic_fraction,
        pool_count=candidate.pool_count,
        total_instances=candidate.total_instances,
        total_gpus=candidate.total_gpus,
        cost_per_hour_usd=candidate.cost_per_hour_usd if candidate.feasible else None,
        cost_per_year_usd=candidate.cost_per_year_usd if candidate.feasible else None,
        routing=routing,
        pools=pools,
        **_token_cost_fields(token_costs(candidate) if token_costs is not None else None),
    )


def _token_cost_fields(costs: Any) -> dict[str, float | None]:
    """The fleet document's cost per million tokens and requests (null without them)."""
    return {
        "cost_per_million_input_tokens_usd": getattr(costs, "per_million_input_tokens_usd", None),
        "cost_per_million_output_tokens_usd": getattr(costs, "per_million_output_tokens_usd", None),
        "cost_per_million_requests_usd": getattr(costs, "per_million_requests_usd", None),
        "prompt_cost_fraction": getattr(costs, "prompt_cost_fraction", None),
    }


def hardware_search_document(search: Any, best: FleetCandidate) -> HardwareSearchDocument:
    """``plan --hardware``: the catalog and every profile's sizing of each pool of the best fleet
    (``search``: a :class:`~fleetopt.core.hardware_search.HardwareSearchOutcome`)."""
    return HardwareSearchDocument(
        catalog=[h.serving_name for h in search.catalog],
        prices_usd_per_gpu_hour=dict(search.prices_usd_per_gpu_hour),
        max_gpus=dict(search.max_gpus),
        inventory_method=search.inventory_method,
        pools={
            name: [
                HardwareOption(
                    serving_profile=c.hardware.serving_name,
                    gpu=c.hardware.gpu_name,
                    gpus_per_instance=c.hardware.gpus_per_instance,
                    gpu_hour_usd=c.hardware.gpu_hour_usd,
                    feasible=c.pool.feasible,
                    instances=c.pool.instances if c.pool.feasible else None,
                    gpus=c.pool.gpus if c.pool.feasible else None,
                    cost_per_hour_usd=c.pool.cost_per_hour_usd if c.pool.feasible else None,
                    binding_constraint=c.pool.binding_constraint,
                    reason=None if c.pool.feasible else pool_reason(c.pool),
                    chosen=c.chosen,
                )
                for c in options
            ]
            for name, options in zip(best.pool_names, search.choices, strict=True)
        },
    )


def _savings(best: FleetCandidate | None, baseline: FleetCandidate | None) -> float | None:
    if best is None or baseline is None or not baseline.feasible or not best.feasible:
        return None
    base = baseline.cost_per_hour_usd
    return (base - best.cost_per_hour_usd) / base if base > 0 else None


def _reader_document(reader_options: dict[str, Any] | None, workload: Workload) -> WorkloadReader:
    """How the workload was read (format and column overrides; the split model of a CDF)."""
    reader = {
        key: value for key, value in (reader_options or {}).items() if value is not None and key != "split"
    }
    if workload.kind == "cdf":
        reader["split_model"] = workload.split_model
    return WorkloadReader(**reader)


def rate_basis_document(options: PlanOptions, arrivals: Any = None) -> RateBasis:
    """What the plan sized for: the basis, its window, sizing rate / mean, the log's rate profile
    (None without one), whether its windows are over-dispersed, and the dispersion curve (τ s, D)."""
    profile = getattr(arrivals, "profile", None)
    return RateBasis(
        basis=options.rate_basis,
        window_s=options.rate_window_s,
        mean_rate_per_s=options.mean_rate_per_s,
        sizing_rate_per_s=options.sizing_rate_per_s,
        factor=options.basis_factor,
        # the basis of the profile as observed, and how much of it was Poisson counting noise (left out
        # of the factor: fleetopt.core.arrivals.denoised_counts)
        observed_factor=getattr(arrivals, "observed_factor", None),
        counting_noise_factor=getattr(arrivals, "counting_noise_factor", None),
        peak_to_mean_ratio=None if profile is None else profile.peak_to_mean_ratio,
        profile=profile,
        overdispersed=bool(getattr(arrivals, "overdispersed", False)),
        arrival_dispersion=[tuple(point) for point in options.arrival_dispersion],
    )


def schedule_document(schedule: Any) -> ScheduleDocument:
    """The plan's time-of-day schedule (:class:`fleetopt.core.schedule.Schedule`)."""
    return ScheduleDocument(
        window_s=schedule.window_s,
        period_s=schedule.period_s,
        periodic=schedule.periodic,
        origin_utc=None if schedule.origin_epoch_s is None else utc_text(schedule.origin_epoch_s),
        pools=list(schedule.pool_names),
        windows=[
            ScheduleWindowDocument(
                start_s=window.start_s,
                end_s=window.end_s,
                arrival_rate_per_s=window.sizing_rate_per_s,
                mean_arrival_rate_per_s=window.mean_rate_per_s,
                instances=dict(zip(schedule.pool_names, window.instances, strict=True)),
                gpus=sum(window.gpus),
                rate_windows=window.rate_windows,
            )
            for window in schedule.windows
        ],
        rate_basis=schedule.rate_basis,
        gpu_hours_per_period=schedule.gpu_hours_per_period,
        static_gpu_hours_per_period=schedule.static_gpu_hours_per_period,
        static_instances=dict(zip(schedule.pool_names, schedule.static_instances, strict=True)),
    )


def compression_reliance(plan: FleetPlan) -> CompressionReliance | None:
    """What the best fleet needs a gateway to compress, and the fleet without compression beside it
    (None when the best fleet compresses nothing)."""
    from fleetopt.io.units import fmt_num, fmt_pct, fmt_usd

    best, without = plan.best, plan.without_compression
    if best is None or best.compressed_fraction <= 0:
        return None
    share = best.compressed_fraction
    rate = share * plan.options.sizing_rate_per_s
    routing = best.routing
    first, second = best.pool_names[:2]
    cut = routing.max_cut_fraction
    cut = f"at most {cut:.0%} of a prompt" if cut < 1 else "any cut, the papers' rule"
    message = (
        f"This plan relies on prompt compression: {fmt_pct(share)} of requests ({fmt_num(rate)} req/s "
        f"at the sizing rate) fit the {first} pool only after the gateway cuts their prompts "
        f"(γ = {best.gamma:g}, p_c = {routing.compressibility:g}, {cut}). Only fleetopt's LiteLLM "
        "plugin compresses prompts (fleetopt export --to litellm), and never code or structured data; "
        f"behind any other gateway they reach the {second} pool, which is sized without them."
    )
    extra_gpus = extra_cost = None
    if without is None:
        message += " No fleet without compression meets the SLO."
    else:
        extra_gpus = without.total_gpus - best.total_gpus
        extra_cost = without.cost_per_year_usd - best.cost_per_year_usd
        bounds = without.routing.boundaries_tokens
        where = {0: "one homogeneous pool", 1: f"B_short = {fmt_num(without.b_short_tokens)}"}.get(
            len(bounds), "boundaries " + " / ".join(fmt_num(b) for b in bounds)
        )
        message += (
            f" Without compression: {fmt_num(without.total_gpus)} GPUs, {fmt_usd(without.cost_per_year_usd)}"
            f"/year ({where}, γ = 1; {extra_gpus:+,} GPUs, {'+' if extra_cost >= 0 else ''}"
            f"{fmt_usd(extra_cost)}/year)."
        )
    return CompressionReliance(
        compressed_fraction=share,
        compressed_rate_per_s=rate,
        gateway="litellm",
        without_compression=None if without is None else fleet_document(without, plan),
        extra_gpus=extra_gpus,
        extra_cost_per_year_usd=extra_cost,
        message=message,
    )


def utc_text(epoch_s: float) -> str:
    """ISO 8601 UTC with a Z (``2023-11-16T00:00:00Z``; microseconds when not whole seconds)."""
    import datetime

    moment = datetime.datetime.fromtimestamp(epoch_s, tz=datetime.timezone.utc)
    if moment.microsecond == 0:
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def refinement_document(refinement: Any) -> RefinementDocument:
    """What ``--refine`` simulated and decided (:class:`fleetopt.core.refine.Refinement`)."""
    settings = refinement.settings

    def figure(value: float) -> float | None:
        return value if math.isfinite(value) else None

    fleets = []
    for fleet in refinement.fleets:
        analytic, refined = fleet.analytic, fleet.fleet
        fleets.append(
            RefinedFleetDocument(
                boundaries_tokens=list(analytic.routing.boundaries_tokens),
                gamma=analytic.gamma,
                analytic_gpus=analytic.total_gpus,
                refined_gpus=None if refined is None else refined.total_gpus,
                analytic_cost_per_year_usd=analytic.cost_per_year_usd,
                refined_cost_per_year_usd=None if refined is None else refined.cost_per_year_usd,
                passed=fleet.passed,
                chosen=fleet is refinement.best,
                pools=[
                    RefinedPoolDocument(
                        pool=pool.name,
                        outcome=pool.outcome,
                        analytic_instances=pool.analytic_instances,
                        refined_instances=pool.instances,
                        slots_per_instance=pool.slots_per_instance,
                        simulated_p99_ttft_s=figure(pool.p99_ttft_s),
                        p99_ttft_low_s=figure(pool.p99_ttft_low_s),
                        p99_ttft_high_s=figure(pool.p99_ttft_high_s),
                        best_instances=pool.best_instances,
                        confirmed=pool.confirmed,
                        simulations=pool.simulations,
                        requests_per_seed=pool.requests_per_seed,
                        warmup_requests=pool.warmup_requests,
                    )
                    for pool in fleet.pools
                ],
            )
        )
    return RefinementDocument(
        candidates=settings.candidates,
        service_model="physical",
        scheduler=settings.scheduler,
        dispatch=settings.dispatch,
        search_seed=settings.search_seed,
        confirm_seeds=list(settings.confirm_seeds),
        rule="the upper end of the simulated P99 TTFT's 95% interval at or below the SLO (the cross-check's "
        "rule), on the pool's own Poisson stream at its planned rate",
        max_requests_per_seed=settings.max_requests,
        bound=f"up to {settings.max_instance_factor:g}× the analytic count + {settings.max_extra_instances}",
        fleets=fleets,
    )


def _warnings(best: FleetDocument | None, options: PlanOptions, dispatch: str, refinement: Any) -> list:
    """The best fleet's warnings: headroom, and where the analytic model was not shown to hold
    (unrefined plans). A pool whose count the simulation set gets no warning about its analytic TTFT:
    its simulated P99 and interval are in ``refinement``."""
    if best is None:
        return []
    if refinement is None:
        return headroom_warnings(best.pools, options) + regime_warnings(best.pools, options, dispatch)
    simulated = {p.name for p in (refinement.best.pools if refinement.best else ()) if p.outcome == "refined"}
    return [
        warning
        for warning in headroom_warnings(best.pools, options)
        if not (warning.pool in simulated and warning.kind in ("ttft_near_slo", "ttft_flat_in_instances"))
    ]


def plan_document(
    plan: FleetPlan,
    workload: Workload,
    inputs: dict[str, Any],
    *,
    arrivals: Any = None,
    schedule: Any = None,
    calibration_interval: Any = None,
    profile_fits: Sequence[dict[str, Any]] | None = None,
    dispatch: str = DEFAULT_DISPATCH,
    refinement: Any = None,
    token_costs: Callable[[FleetCandidate], Any] | None = None,
    search: Any = None,
) -> PlanDocument:
    """The versioned plan document (fields and schema: :mod:`fleetopt.io.documents.plan`).

    ``inputs`` carries what only the caller knows: ``workload`` (name or path as given),
    ``arrival_rate_origin`` (``given`` / ``observed`` / ``default``) and the reader options;
    ``arrivals`` the :class:`fleetopt.api.ArrivalBasis` the plan sized on (its profile), ``schedule``
    the time-of-day schedule when one was asked for; ``token_costs`` a fleet's cost per million
    tokens; ``search`` the hardware search (``plan --hardware``,
    :class:`~fleetopt.core.hardware_search.HardwareSearchOutcome`).
    """
    o = plan.options
    best = plan.best
    costs = token_costs

    def fleet(candidate: FleetCandidate) -> FleetDocument:
        return fleet_document(candidate, plan, costs)

    best_document = fleet(best) if best is not None else None
    profiles = Profiles(short=plan.short_hardware, long=plan.long_hardware)
    if search is not None and best is not None:
        profiles = Profiles(
            short=best.hardware[0],
            long=best.hardware[-1],
            pools=dict(zip(best.pool_names, best.hardware, strict=True)),
        )
    origin = inputs.get("arrival_rate_origin", "given")
    return PlanDocument(
        schema_version=SCHEMA_VERSION,
        kind=PLAN_KIND,
        fleetopt_version=__version__,
        inputs=PlanInputs(
            workload=inputs.get("workload", workload.name),
            workload_reader=_reader_document(inputs.get("workload_reader"), workload),
            workload_fingerprint=workload_fingerprint(
                workload,
                best.b_short_tokens if best is not None else None,
                best.gamma if best is not None else None,
            ),
            arrival_rate_per_s=o.mean_rate_per_s,
            sizing_rate_per_s=o.sizing_rate_per_s,
            arrival_rate_origin=origin,
            rate_basis=rate_basis_document(o, arrivals),
            ttft_slo_s=o.ttft_slo_s,
            tpot_slo_s=o.tpot_slo_s,
            quantile=o.quantile,
            max_utilization=o.max_utilization,
            compressibility=o.compressibility,
            max_cut_fraction=o.max_cut_fraction,
            service_model=o.service_model,
            max_pools=o.max_pools,
            long_context_tokens=o.long_context_tokens,
            b_short_candidates=list(plan.b_short_candidates),
            gammas=list(o.gammas),
            profiles=profiles,
            spare_instances=o.spare_instances,
            ttft_headroom_fraction=o.ttft_headroom_fraction,
        ),
        feasible=plan.feasible,
        best=best_document,
        baselines=Baselines(
            homogeneous=fleet(plan.homogeneous),
            pool_routing=fleet(plan.pool_routing) if plan.pool_routing else None,
            retrofit=fleet(plan.retrofit) if plan.retrofit else None,
            best_single_hardware=(
                fleet(search.best_single) if search is not None and search.best_single is not None else None
            ),
        ),
        savings=Savings(
            vs_homogeneous=_savings(best, plan.homogeneous),
            vs_pool_routing=_savings(best, plan.pool_routing),
            vs_retrofit=_savings(best, plan.retrofit),
            vs_best_single_hardware=_savings(best, search.best_single) if search is not None else None,
        ),
        best_by_pool_count=[
            PoolCountBest(
                pool_count=count,
                feasible=fleet is not None,
                boundaries_tokens=list(fleet.routing.boundaries_tokens) if fleet is not None else None,
                gamma=fleet.gamma if fleet is not None else None,
                total_gpus=fleet.total_gpus if fleet is not None else None,
                cost_per_year_usd=fleet.cost_per_year_usd if fleet is not None else None,
            )
            for count, fleet in enumerate(plan.best_by_pool_count, start=1)
        ],
        grid=[
            GridCell(
                b_short_tokens=c.b_short_tokens,
                gamma=c.gamma,
                feasible=c.feasible,
                short_instances=c.short.instances if c.short is not None else None,
                long_instances=c.long.instances,
                total_gpus=c.total_gpus if c.feasible else None,
                cost_per_year_usd=c.cost_per_year_usd if c.feasible else None,
                reason=fleet_reason(c),
            )
            for c in plan.grid
        ],
        compression=compression_reliance(plan),
        warnings=_warnings(best_document, o, dispatch, refinement),
        notes=workload_notes(workload)
        + rate_notes(workload, o.mean_rate_per_s, origin)
        + basis_notes(o, arrivals)
        + context_notes(plan)
        + pool_model_notes(plan)
        + plan_notes(plan)
        + calibration_notes(plan, calibration_interval, profile_fits),
        schedule=None if schedule is None else schedule_document(schedule),
        calibration_interval=calibration_interval,
        dispatch=dispatch,
        refinement=None if refinement is None else refinement_document(refinement),
        hardware_search=hardware_search_document(search, best)
        if search is not None and best is not None
        else None,
    )


def calibration_notes(
    plan: FleetPlan, interval: Any, fits: Sequence[dict[str, Any]] | None = None
) -> list[str]:
    """The best fleet with its calibration interval, and the pools that serve longer requests than
    their measured profile was measured with, in words (``interval``: a
    :class:`fleetopt.io.documents.plan.CalibrationInterval` or None; ``fits``: the serving
    profiles' ``fit`` records, (every pool's) or (short, long), whose ``max_input_tokens`` +
    ``max_output_tokens`` are the longest requests measured; pool k's is the one the planner runs it
    on, :func:`fleetopt.core.planner.hardware_position`)."""
    if plan.best is None:
        return []
    notes = []
    profile_fits = fits or ({},)  # one per profile: (every pool's) or (short, long)
    pool_count = len(plan.best.pools)
    for index, (pool, hardware) in enumerate(zip(plan.best.pools, plan.best.hardware, strict=True)):
        fit = profile_fits[hardware_position(len(profile_fits), pool_count, index)]
        measured, output = fit.get("max_input_tokens"), fit.get("max_output_tokens", 0)
        if isinstance(measured, int) and isinstance(output, int) and pool.context_tokens > measured + output:
            notes.append(
                f"pool {plan.best.pool_names[index]} serves requests of up to {pool.context_tokens:,} "
                f"tokens; its profile {hardware.serving_name} was measured with prompts of up to "
                f"{measured:,} tokens: beyond, its costs are extrapolated from the shorter prompts measured"
            )
    if interval is None:
        return notes
    low, high = ("no fleet meets the SLO" if g is None else f"{g:,}" for g in interval.gpus)
    below, above = (f"{p:g}th" for p in interval.percentiles)
    return [
        f"calibration: {plan.best.total_gpus:,} GPUs; {low} to {high} under calibration error (the "
        f"measured profiles' fitted parameters at their {below} and {above} percentiles, the same pools "
        "re-sized where they still meet the SLO)",
        *notes,
    ]
