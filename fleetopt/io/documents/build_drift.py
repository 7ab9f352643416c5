"""Building the drift report: core's :class:`~fleetopt.core.drift.DriftResult` and the plan it
checked as a typed :class:`~fleetopt.io.documents.drift.DriftDocument` (fields and schema:
``drift.py``; the checks: docs/ci.md). Its reasons are worded by
:mod:`fleetopt.io.documents.words`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fleetopt.core.drift import (
    DriftResult,
    FleetFit,
    PlannedFleet,
    Tolerances,
    WorkloadSummary,
    relative_change,
)
from fleetopt.core.planner import FleetCandidate, PlanOptions
from fleetopt.defaults import HOURS_PER_YEAR
from fleetopt.io.documents.drift import (
    DRIFT_KIND,
    ChangeDocument,
    DriftDocument,
    DriftPlan,
    DriftReasonDocument,
    DriftToday,
    DriftTolerances,
    FleetFitDocument,
    KsDocument,
    LiveDocument,
    PoolFitDocument,
    QuantileChanges,
    ReplanDocument,
    ReplanPool,
    ShiftDocument,
)
from fleetopt.io.documents.plan import PlanDocument, PoolDocument
from fleetopt.io.documents.typed import finite_or_none
from fleetopt.io.documents.words import KS_NOT_CHECKED_LIVE, drift_reason_sentence, fit_problem_sentence


def _change(planned: float | None, today: float | None) -> ChangeDocument:
    return ChangeDocument(planned=planned, today=today, change=relative_change(today, planned))


def _fit_document(
    fit: FleetFit,
    planned_pools: Mapping[str, PoolDocument],
    options: PlanOptions,
    rate_factor: float | None = None,
) -> FleetFitDocument:
    pools = {}
    for pool in fit.pools:
        s = pool.sizing
        planned = planned_pools.get(pool.name)
        unstable = s.arrival_rate_per_s > 0 and (s.instances < 1 or not s.utilization < 1.0)
        pools[pool.name] = PoolFitDocument(
            instances=s.instances,
            slots_per_instance=s.slots_per_instance,
            gpus=s.gpus,
            context_tokens=s.context_tokens,
            arrival_rate_per_s=s.arrival_rate_per_s,
            planned_arrival_rate_per_s=None if planned is None else planned.arrival_rate_per_s,
            utilization=finite_or_none(s.utilization),
            planned_utilization=None if planned is None else planned.utilization,
            max_utilization=options.max_utilization,
            utilization_headroom=finite_or_none(pool.utilization_headroom),
            rate_headroom=finite_or_none(pool.rate_headroom),
            p99_ttft_s=None if unstable else finite_or_none(s.p99_ttft_s),
            planned_p99_ttft_s=None if planned is None else planned.p99_ttft_s,
            ttft_slo_s=options.ttft_slo_s,
            ttft_headroom_s=None if unstable else finite_or_none(pool.ttft_headroom_s),
            unstable=unstable,
            fits=pool.fits,
            problems=[fit_problem_sentence(problem, s, options) for problem in pool.problems],
        )
    return FleetFitDocument(
        rate_factor=rate_factor,
        fits=fit.fits,
        arrival_rate_per_s=fit.sizing_rate_per_s,
        alpha=fit.alpha,
        beta=fit.beta,
        short_traffic_fraction=fit.short_traffic_fraction,
        pools=pools,
    )


def _replan_document(replan: FleetCandidate | None, result: DriftResult) -> ReplanDocument:
    if replan is None:
        return ReplanDocument(feasible=False)
    pools = dict(zip(replan.pool_names, replan.pools, strict=True))
    return ReplanDocument(
        feasible=True,
        b_short_tokens=replan.b_short_tokens,
        boundaries_tokens=list(replan.routing.boundaries_tokens),
        gamma=replan.gamma if replan.b_short_tokens is not None else None,
        total_gpus=replan.total_gpus,
        cost_per_year_usd=replan.cost_per_year_usd,
        gpu_change=result.gpu_change,
        cost_change=result.cost_change,
        pools={
            name: ReplanPool(instances=p.instances, slots_per_instance=p.slots_per_instance, gpus=p.gpus)
            for name, p in pools.items()
        },
    )


def drift_document(
    result: DriftResult,
    *,
    plan: PlanDocument,
    plan_path: str,
    today_label: str,
    today_requests: int | None,
    rate_origin: str,
    options: PlanOptions,
    tolerances: Tolerances,
    planned: WorkloadSummary,
    current: WorkloadSummary,
    fleet: PlannedFleet,
    live: LiveDocument | None = None,
    live_reasons: Sequence[DriftReasonDocument] = (),
) -> DriftDocument:
    """The drift report (schema: :mod:`fleetopt.io.documents.drift`; docs/ci.md). ``plan``: the
    plan document as read; ``fleet``: its best fleet as its reader checked it (routing and GPUs come
    from there); ``options``: the plan's options at today's rate.

    On live metrics (``fleetopt drift --prometheus``; :mod:`fleetopt.io.documents.build_observe`)
    ``live`` is the observation and ``live_reasons`` what only live metrics show; they are reasons
    like the others: the verdict is drift when there is any reason at all. The KS distance is then
    no check (``result`` was made without it) and says so."""
    inputs = plan.inputs
    best_pools = plan.best.pools if plan.best is not None else {}
    homogeneous = fleet.routing.pool_count == 1
    planned_sizing_rate = (
        inputs.arrival_rate_per_s if inputs.sizing_rate_per_s is None else inputs.sizing_rate_per_s
    )
    tokens: dict[str, QuantileChanges] = {}
    for column in ("total", "input", "output"):
        before, after = planned.token_quantiles.get(column), current.token_quantiles.get(column)
        if before is None or after is None:
            continue
        tokens[column] = QuantileChanges(*(_change(b, a) for b, a in zip(before, after, strict=True)))
    ks = result.ks
    reasons = [
        DriftReasonDocument(
            check=r.check.value, pool=r.pool, message=drift_reason_sentence(r, result, options, tolerances)
        )
        for r in result.reasons
    ]
    reasons += live_reasons
    return DriftDocument(
        kind=DRIFT_KIND,
        verdict="drift" if reasons else "fits",
        exit_code=1 if reasons else 0,
        reasons=reasons,
        plan=DriftPlan(
            file=plan_path,
            workload=inputs.workload,
            fleetopt_version=plan.fleetopt_version,
            arrival_rate_per_s=inputs.arrival_rate_per_s,
            sizing_rate_per_s=planned_sizing_rate,
            rate_basis=options.rate_basis,
            ttft_slo_s=options.ttft_slo_s,
            max_utilization=options.max_utilization,
            service_model=options.service_model,
            compressibility=options.compressibility,
            b_short_tokens=None if homogeneous else fleet.b_short_tokens,
            gamma=None if homogeneous else fleet.gamma,
            total_gpus=fleet.total_gpus,
            cost_per_year_usd=fleet.cost_per_hour_usd * HOURS_PER_YEAR,
        ),
        today=DriftToday(
            workload=today_label,
            requests=today_requests,
            arrival_rate_per_s=options.mean_rate_per_s,
            arrival_rate_origin=rate_origin,
            sizing_rate_per_s=result.sizing_rate_per_s,
            longest_request_tokens=result.longest_request_tokens,
            beyond_long_context_fraction=result.beyond_long_context_fraction,
        ),
        tolerances=DriftTolerances(
            max_cost_change=tolerances.max_cost_change,
            max_ks=tolerances.max_ks,
            min_headroom=tolerances.min_headroom,
        ),
        fit=None if result.fit is None else _fit_document(result.fit, best_pools, options),
        headroom_check=None
        if result.headroom_fit is None
        else _fit_document(result.headroom_fit, {}, options, rate_factor=1.0 + tolerances.min_headroom),
        replan=None if result.fit is None else _replan_document(result.replan, result),
        shift=ShiftDocument(
            ks_total_tokens=KsDocument(
                lower=ks.lower,
                upper=ks.upper,
                estimate=ks.estimate,
                resolution=ks.resolution,
                exact=ks.exact,
                note=None if live is None else KS_NOT_CHECKED_LIVE,
            ),  # fmt: skip
            tokens=tokens,
            mean_total_tokens=_change(planned.mean_total_tokens, current.mean_total_tokens),
            alpha=_change(planned.alpha, current.alpha),
            beta=_change(planned.beta, current.beta),
            arrival_rate_per_s=_change(inputs.arrival_rate_per_s, options.mean_rate_per_s),
            sizing_rate_per_s=_change(planned_sizing_rate, result.sizing_rate_per_s),
            interarrival_scv=_change(planned.interarrival_scv, current.interarrival_scv),
        ),
        live=live,
    )
