"""Sizing one pool: the fewest instances, then the most slots, that meet the SLO and the caps.

Model-agnostic search over (n, s): every service model answers, through its
:class:`fleetopt.core.servicemodel.PoolQueue`, whether n instances of s slots meet the targets
(its tests are monotone in n at a fixed s) and what the pool's figures are there; this module
finds the optimum "fewest n, then most s" and never asks which model it is. The most slots are
sized first, in plain floats (:func:`fleetopt.core.search.smallest_passing_from`, started at a
hint when there is one); one vectorized look at one instance fewer, over every slot count, then
decides whether fewer slots could do with fewer instances (fewer slots iterate faster: a pool
whose SLO binds can be cheaper below its KV limit), with a bisection over n when they can.
"""

from __future__ import annotations

import math

import numpy as np

from fleetopt.core.hardware import PoolHardware
from fleetopt.core.poolsizing import (
    Deferred,
    PoolProblem,
    PoolSizing,
    ProblemKind,
    empty_pool,
    infeasible_pool,
    replace_pool,
)
from fleetopt.core.poolstats import PoolMoments
from fleetopt.core.search import smallest_passing, smallest_passing_from
from fleetopt.core.service import ServiceModel, get_service_model
from fleetopt.core.servicemodel import PoolQueue, PoolTargets
from fleetopt.defaults import DEFAULT_MAX_UTILIZATION
from fleetopt.errors import ValidationError

__all__ = [
    "Deferred",
    "PoolProblem",
    "PoolSizing",
    "ProblemKind",
    "evaluate_pool",
    "size_pool",
]


def size_pool(
    *,
    arrival_rate_per_s: float,
    moments: PoolMoments,
    hardware: PoolHardware,
    context_tokens: int,
    service_model: ServiceModel | str,
    ttft_slo_s: float,
    max_utilization: float = DEFAULT_MAX_UTILIZATION,
    tpot_slo_s: float | None = None,
    fixed_slots: int | None = None,
    arrival_scv: float = 1.0,
    instances_hint: int | None = None,
) -> PoolSizing:
    """The cheapest (instances, slots) for one pool: fewest instances, then the most slots (1 … the
    KV limit, or ``fixed_slots``), under the service model's queue (module docstring). Never
    returns a pool that breaks its SLO or caps: if no size can meet them it returns
    ``feasible=False`` with the problem and the smallest TTFT any size reaches.

    ``arrival_scv``: C_a² ≥ 1 of the pool's arrivals (1: Poisson); each model takes it through
    Hayward's peakedness. ``instances_hint``: a guess of the answer (a similar pool's), where the
    search starts its bracket; it saves evaluations and never changes the answer.
    """
    _check_arrival_scv(arrival_scv)
    if not (0.0 < max_utilization <= 1.0):
        raise ValidationError(f"max utilization: {max_utilization!r} must be in (0, 1]")
    if arrival_rate_per_s < 0 or not math.isfinite(arrival_rate_per_s):
        raise ValidationError(f"arrival rate: {arrival_rate_per_s!r} req/s must be ≥ 0 and finite")
    service_model = get_service_model(service_model)
    kv_limit = hardware.max_slots(context_tokens)
    if kv_limit < 1:
        return infeasible_pool(
            hardware, context_tokens, kv_limit, arrival_rate_per_s,
            PoolProblem(ProblemKind.KV_MISFIT, context_tokens, hardware.kv_capacity_tokens), None,
        )  # fmt: skip
    if fixed_slots is not None and not (1 <= fixed_slots <= kv_limit):
        raise ValidationError(
            f"slots per instance: {fixed_slots} must be between 1 and the KV limit {kv_limit} "
            f"at {context_tokens:,} tokens"
        )
    if arrival_rate_per_s == 0 or moments.is_empty:
        return empty_pool(hardware, context_tokens, kv_limit, fixed_slots or kv_limit)
    pool = service_model.pool_queue(
        arrival_rate_per_s, moments, hardware, context_tokens,
        PoolTargets(ttft_slo_s, max_utilization, tpot_slo_s), arrival_scv,
    )  # fmt: skip
    return _fewest_then_most(pool, fixed_slots, instances_hint)


def _fewest_then_most(pool: PoolQueue, fixed_slots: int | None, hint: int | None) -> PoolSizing:
    """The search of :func:`size_pool` (module docstring) over one pool's queue."""
    limit = pool.slot_limit(fixed_slots)
    if isinstance(limit, PoolProblem):
        return _infeasible(pool, limit)
    most = limit
    start = pool.least_instances(most)
    hint = pool.search_hint(hint)
    # When the search's first point passes, the SLO is in reach; only when it fails is the model
    # asked whether any size reaches it (for the engine model, a law at no load).
    first = hint if hint is not None and hint > start else start
    if not pool.passes(first, most)[0]:
        problem = pool.out_of_reach()
        if problem is not None:
            return _infeasible(pool, problem)
    # The usual answer, without arrays: the most slots, at the fewest instances they need; then one
    # vectorized look at one instance fewer decides whether fewer slots could do better.
    instances = smallest_passing_from(lambda n: pool.passes(n, most), start, hint)
    chosen = most
    if fixed_slots is None and most > 1:
        floor = pool.least_instances_any(most)
        if instances > floor and pool.could_pass(instances - 1):
            slots = np.arange(1.0, most + 1.0)

            def passes(n: int) -> tuple[bool, np.ndarray]:
                ok = pool.passing_slots(n, slots)
                return bool(ok.any()), ok

            if passes(instances - 1)[0]:  # rare: fewer slots iterate faster when the pool is full
                if passes(floor)[0]:
                    instances = floor
                else:
                    instances, _ = smallest_passing(passes, failing=floor, passing=instances - 1)
                chosen = int(slots[np.flatnonzero(passes(instances)[1])[-1]])
    return pool.describe(
        instances,
        chosen,
        pool.binding(instances, chosen),
        _slots_binding(pool, fixed_slots, instances, chosen),
    )


def _slots_binding(pool: PoolQueue, fixed_slots: int | None, instances: int, slots: int) -> str:
    """What set the slot count: ``fixed`` (given), ``kv`` (the KV limit), ``tpot`` (one slot more
    breaks the TPOT cap) or ``ttft`` (the SLO made fewer slots cheaper or feasible)."""
    if fixed_slots is not None:
        return "fixed"
    if slots == pool.kv_limit:
        return "kv"
    tpot_slo_s = pool.targets.tpot_slo_s
    if tpot_slo_s is not None and not pool.tpot_s(instances, slots + 1) <= tpot_slo_s:
        return "tpot"
    return "ttft"


def _infeasible(pool: PoolQueue, problem: PoolProblem) -> PoolSizing:
    """The infeasible pool with ``problem``; a TTFT problem's value is the least TTFT any size reaches."""
    reaches = problem.kind in (ProblemKind.PREFILL_OVER_SLO, ProblemKind.COMPUTE_FLOOR)
    return infeasible_pool(
        pool.hardware,
        pool.context_tokens,
        pool.kv_limit,
        pool.rate,
        problem,
        problem.value if reaches else None,
    )


def _check_arrival_scv(arrival_scv: float) -> None:
    if not (arrival_scv >= 1.0 and math.isfinite(arrival_scv)):
        raise ValidationError(
            f"arrival SCV: {arrival_scv!r} must be a finite number ≥ 1 (1 is Poisson; fleetopt never "
            "sizes for arrivals smoother than Poisson)"
        )


def evaluate_pool(
    *,
    arrival_rate_per_s: float,
    moments: PoolMoments,
    hardware: PoolHardware,
    context_tokens: int,
    service_model: ServiceModel | str,
    instances: int,
    slots_per_instance: int,
    ttft_slo_s: float,
    max_utilization: float = DEFAULT_MAX_UTILIZATION,
    arrival_scv: float = 1.0,
) -> PoolSizing:
    """A given pool (n instances of s slots) under the given traffic: its latencies and whether it fits.

    ``feasible`` is true when utilization ≤ cap and P99 TTFT ≤ SLO; ``problems`` lists what breaks
    (:meth:`fleetopt.core.servicemodel.PoolQueue.evaluate`). ``arrival_scv``: C_a² of the pool's
    arrivals, as in :func:`size_pool`.
    """
    _check_arrival_scv(arrival_scv)
    service_model = get_service_model(service_model)
    kv_limit = hardware.max_slots(context_tokens)
    if arrival_rate_per_s == 0 or moments.is_empty:
        empty = empty_pool(hardware, context_tokens, kv_limit, slots_per_instance)
        return replace_pool(
            empty,
            instances=instances,
            gpus=instances * hardware.gpus_per_instance,
            cost_per_hour_usd=instances * hardware.instance_hour_usd,
        )
    if instances < 1:
        return infeasible_pool(
            hardware, context_tokens, kv_limit, arrival_rate_per_s,
            PoolProblem(ProblemKind.NO_INSTANCES, arrival_rate_per_s), None,
        )  # fmt: skip
    pool = service_model.pool_queue(
        arrival_rate_per_s, moments, hardware, context_tokens, PoolTargets(ttft_slo_s, max_utilization),
        arrival_scv,
    )  # fmt: skip
    return pool.evaluate(instances, slots_per_instance)
