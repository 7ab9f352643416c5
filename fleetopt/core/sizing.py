"""Sizing one pool: the fewest instances (and the slot count) that meet the SLO and the cap.

A pool with n instances of s slots is an M/G/c queue with c = n·s servers (FleetOpt §3.1).
Its P99 TTFT is the P99 slot wait plus the prefill and first-decode time (FleetOpt Eq. 7–8,
with the P99 prefill); n* is the smallest n with utilization ≤ ρ_max and P99 TTFT ≤ SLO
(Eq. 11 and §4.1). The slot count s ≤ the KV limit is a decision too: fewer slots iterate
faster (t = W + H·s), which can make a pool whose SLO binds cheaper below its KV limit.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import Enum
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np

from fleetopt.core.backends import ARRAYS, FLOATS, backend_of
from fleetopt.core.occupancy import (
    ChainState,
    local_wait_given_wait_s,
    negative_binomial_log_tail_bound,
    occupancy_quantile,
    occupancy_state,
    prefill_stall_variance_factor,
    widened_chain,
)
from fleetopt.core.poolstats import PoolMoments
from fleetopt.core.queueing import (
    mean_wait,
    unchecked_wait_statistics,
    unchecked_wait_statistics_arrays,
)
from fleetopt.core.search import MAX_DOUBLINGS, smallest_passing, smallest_passing_from
from fleetopt.core.service import (
    IterationCosts,
    PoolHardware,
    ServiceModel,
    SlotServiceTime,
    SlotServiceTimes,
    get_service_model,
    iteration_costs,
    one_slot_service_time,
    service_time_formulas,
    slot_service_times,
)
from fleetopt.core.ttft import TtftCumulants
from fleetopt.defaults import DEFAULT_MAX_UTILIZATION, FEWER_INSTANCES_FRACTION
from fleetopt.errors import ValidationError


class ProblemKind(Enum):
    """What keeps a pool from meeting its targets (``fleetopt.render.words`` words it)."""

    KV_MISFIT = "kv_misfit"  # one context-length sequence does not fit: value = context, limit = KV tokens
    TPOT_OVER_SLO = "tpot_over_slo"  # value = iteration time at ``slots``, limit = TPOT SLO (s)
    PREFILL_OVER_SLO = "prefill_over_slo"  # value = least prefill + first decode (at ``slots``), limit = SLO
    NO_INSTANCES = "no_instances"  # an evaluated pool with traffic and no instances
    SLOTS_OVER_KV = "slots_over_kv"  # value = slots, limit = the KV limit at the pool's context
    OVER_CAP = "over_cap"  # value = utilization, limit = ρ_max
    TTFT_OVER_SLO = "ttft_over_slo"  # value = P99 TTFT, limit = SLO (s)
    # value = least P99 TTFT, limit = SLO (s): the prompt's compute at the GPU's peak FLOP/s alone breaks it
    COMPUTE_FLOOR = "compute_floor"


@dataclass(frozen=True)
class PoolProblem:
    """One reason a pool is infeasible, with its numbers (see :class:`ProblemKind` for units)."""

    kind: ProblemKind
    value: float = math.nan
    limit: float = math.nan
    slots: int | None = None


@dataclass(frozen=True)
class PoolSizing:
    """A sized (or evaluated) pool: counts, rates, latencies and what binds.

    Attributes:
        feasible: the pool meets its SLO and utilization cap (always true for a sizing that succeeded).
        instances: serving instances (tensor-parallel groups); 0 for an empty pool.
        gpus: instances × GPUs per instance.
        slots_per_instance: concurrent sequences per instance (vLLM ``max_num_seqs``).
        kv_slot_limit: the most slots the KV cache allows at ``context_tokens``.
        context_tokens: the pool's context window (vLLM ``max_model_len``), tokens.
        servers: instances × slots (the M/G/c servers).
        arrival_rate_per_s: requests per second reaching the pool.
        mean_service_s: E[S], seconds a request holds a slot.
        service_scv: C_s².
        service_rate_per_instance_per_s: μ per instance = s / E[S].
        utilization: λ·E[S] / (n·s).
        p99_wait_s, mean_wait_s: slot wait (q-quantile and mean), seconds.
        p99_prefill_s: prefill part of the TTFT, seconds.
        iteration_s: iteration time (TPOT), seconds.
        p99_ttft_s: P99 TTFT under the service model, seconds.
        binding_constraint: ``utilization`` (the cap sets n), ``ttft`` (the SLO forces more), ``minimum``
            (one instance, below the cap), ``none`` (empty pool), ``infeasible``.
        slots_binding: what set the slot count: ``kv`` (KV limit), ``ttft`` (the SLO made fewer slots
            cheaper or feasible), ``tpot`` (the TPOT cap), ``fixed`` (given).
        problems: why the pool is infeasible (empty when it is feasible).
        min_achievable_ttft_s: for an infeasible pool, the smallest TTFT any size reaches.
        cost_per_hour_usd: gpus × $/GPU-hour.
        compute_utilization: for an occupancy-aware model, the instances' compute utilization
            x = λ·(H·E[L_out] + τ·E[L_in] + κ·E[I·L]) / n (None otherwise).
        chain_mean_wait_s: for an occupancy-aware model, the chain's mean wait, seconds.
        arrival_scv: C_a², the arrival variability the pool was sized or evaluated for (1: Poisson).
        fewer_instances, p99_ttft_fewer_instances_s: for a pool the TTFT SLO sized under the engine
            model, n − max(1, round(f·n)) instances (f = FEWER_INSTANCES_FRACTION) and the P99 TTFT
            there (slots as sized, seconds; ∞ when unstable): how steeply the P99 falls with n, so
            how much a small error in the TTFT law moves the pool (None otherwise).
        slot_wait_over_slo: under the engine model, the share of requests over the TTFT SLO because
            they waited for a slot: P(TTFT > SLO) − P(T′ > SLO), T′ the same law without the wait
            (None for other models and unstable pools). Against 1 − q (1% at the P99) it says how
            much of the quantile's budget the slot wait takes.

    ``p99_ttft_s``, ``p99_prefill_s``, ``p99_ttft_fewer_instances_s`` and ``slot_wait_over_slo``
    may be given as a
    :class:`Deferred`: the figure is then computed on first read (and on comparison, hashing,
    ``dataclasses.replace`` or pickling), so a sweep does not pay for the quantiles of the pools no
    plan reports. Readers see a float either way.
    """

    feasible: bool
    instances: int
    gpus: int
    slots_per_instance: int
    kv_slot_limit: int
    context_tokens: int
    servers: int
    arrival_rate_per_s: float
    mean_service_s: float
    service_scv: float
    service_rate_per_instance_per_s: float
    utilization: float
    p99_wait_s: float
    p99_prefill_s: float
    iteration_s: float
    p99_ttft_s: float
    binding_constraint: str
    slots_binding: str
    problems: tuple[PoolProblem, ...]
    min_achievable_ttft_s: float | None
    cost_per_hour_usd: float
    compute_utilization: float | None = None
    chain_mean_wait_s: float | None = None
    arrival_scv: float = 1.0
    fewer_instances: int | None = None
    p99_ttft_fewer_instances_s: float | None = None
    slot_wait_over_slo: float | None = None

    def __getstate__(self) -> dict[str, Any]:
        """Pickled with every deferred figure computed (a :class:`Deferred` holds a closure)."""
        for name in _DEFERRED_FIELDS:
            getattr(self, name)
        return dict(self.__dict__)

    @property
    def load_utilization(self) -> float:
        """What the utilization cap bounds: ρ, or for an occupancy-aware model the larger of the slot
        occupancy and the compute utilization."""
        if self.compute_utilization is None:
            return self.utilization
        return max(self.utilization, self.compute_utilization)

    @cached_property
    def mean_wait_s(self) -> float:
        """Mean slot wait, seconds (computed on first use: the sweep never needs it for most cells)."""
        if self.chain_mean_wait_s is not None:
            return self.chain_mean_wait_s
        if self.servers == 0 or not self.arrival_rate_per_s > 0:
            return 0.0 if self.feasible else math.nan
        z = peakedness(self.arrival_scv)  # Hayward's (c/z, λ/z), as in _wait_one
        return float(
            mean_wait(
                self.servers / z, self.arrival_rate_per_s / z, 1.0 / self.mean_service_s,
                self.service_scv / z, self.arrival_scv / z,
            )
        )  # fmt: skip


class Deferred:
    """A figure of a :class:`PoolSizing` computed on first read: ``compute()`` returns it."""

    __slots__ = ("compute",)

    def __init__(self, compute: Callable[[], float]) -> None:
        self.compute = compute


class _DeferredField:
    """The descriptor behind a :class:`PoolSizing` field that may be given as a :class:`Deferred`:
    the dataclass's ``__init__`` stores what it gets; the first read computes a deferred value and
    keeps the float."""

    def __init__(self, name: str) -> None:
        self.key = f"_deferred_{name}"

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        value = instance.__dict__[self.key]
        if isinstance(value, Deferred):
            value = instance.__dict__[self.key] = float(value.compute())
        return value

    def __set__(self, instance: Any, value: Any) -> None:
        instance.__dict__[self.key] = value


_DEFERRED_FIELDS = ("p99_ttft_s", "p99_prefill_s", "p99_ttft_fewer_instances_s", "slot_wait_over_slo")
for _name in _DEFERRED_FIELDS:  # after @dataclass, so the fields keep no default and their order
    setattr(PoolSizing, _name, _DeferredField(_name))


def _empty_pool(hardware: PoolHardware, context_tokens: int, kv_limit: int, slots: int) -> PoolSizing:
    return PoolSizing(
        feasible=True, instances=0, gpus=0, slots_per_instance=slots, kv_slot_limit=kv_limit,
        context_tokens=context_tokens, servers=0, arrival_rate_per_s=0.0, mean_service_s=math.nan,
        service_scv=math.nan, service_rate_per_instance_per_s=math.nan, utilization=0.0, p99_wait_s=0.0,
        p99_prefill_s=0.0, iteration_s=math.nan, p99_ttft_s=0.0, binding_constraint="none",
        slots_binding="kv", problems=(), min_achievable_ttft_s=None, cost_per_hour_usd=0.0,
    )  # fmt: skip


def _infeasible(
    hardware: PoolHardware,
    context_tokens: int,
    kv_limit: int,
    rate: float,
    problem: PoolProblem,
    best_ttft: float | None,
) -> PoolSizing:
    return PoolSizing(
        feasible=False, instances=0, gpus=0, slots_per_instance=0, kv_slot_limit=kv_limit,
        context_tokens=context_tokens, servers=0, arrival_rate_per_s=rate, mean_service_s=math.nan,
        service_scv=math.nan, service_rate_per_instance_per_s=math.nan, utilization=math.nan,
        p99_wait_s=math.nan, p99_prefill_s=math.nan, iteration_s=math.nan,
        p99_ttft_s=math.nan, binding_constraint="infeasible", slots_binding="kv", problems=(problem,),
        min_achievable_ttft_s=best_ttft, cost_per_hour_usd=math.nan,
    )  # fmt: skip


_LOG_2 = math.log(2.0)


def _no_wait_log_bound(servers: Any, offered_load: Any, xp: Any) -> Any:
    """An upper bound on ln C(c, a), valid where c ≥ a + 1 and a > 0 (``xp``: the float or array
    backend of :mod:`fleetopt.core.queueing`, so one formula serves both paths).

    C = B / (1 − ρ(1 − B)) ≤ B / (1 − ρ) and B = pmf(c; a) / cdf(c; a) ≤ 2·pmf(c; a) once
    c ≥ a + 1 (the Poisson median is below a + 1/3). ln c! is bounded below by Stirling,
    c·ln c − c + ½·ln(2πc), so the bound on ln pmf is an upper bound.
    """
    log_factorial_lower = servers * xp.log(servers) - servers + 0.5 * xp.log(2.0 * math.pi * servers)
    log_pmf_upper = servers * xp.log(offered_load) - offered_load - log_factorial_lower
    return _LOG_2 + log_pmf_upper - xp.log1p(-offered_load / servers)


def _surely_no_wait(servers: Any, offered_load: Any, quantile: float) -> Any:
    """True where Erlang C ≤ 1 − q is certain from :func:`_no_wait_log_bound` (then the q-wait is
    exactly 0); an extra e⁻¹ margin absorbs rounding. Skips the exact Erlang C in the many-server
    regime, where C is astronomically small. One point (floats) or arrays of them."""
    xp = backend_of(servers)
    if xp is ARRAYS:
        servers, offered_load = np.asarray(servers, np.float64), np.asarray(offered_load, np.float64)
    usable = (servers >= offered_load + 1.0) & (offered_load > 0)
    if not xp.any(usable):
        return usable
    # (the bound where it is valid; elsewhere it is computed at a harmless point and not used)
    c, a = xp.where(usable, servers, 2.0), xp.where(usable, offered_load, 1.0)
    with xp.quiet():
        log_bound = _no_wait_log_bound(c, a, xp)
    return usable & (log_bound <= math.log1p(-quantile) - 1.0)


def peakedness(arrival_scv: float) -> float:
    """z = (1 + C_a²)/2, the peakedness of an arrival stream with SCV C_a² (Whitt 1992): 1 for Poisson."""
    return 0.5 * (1.0 + arrival_scv)


def _wait_one(
    servers: float, rate: float, mean_service_s: float, scv: float, quantile: float, arrival_scv: float = 1.0
) -> float:
    """The q-quantile of the slot wait at c servers (one point, plain floats), seconds.

    Arrivals with SCV C_a² (peakedness z = (1 + C_a²)/2) wait as in Hayward's approximation: the
    probability of waiting is Erlang C at (c/z, a/z) (Fredericks 1980; Whitt 1992), and the wait
    given a wait is exponential with mean ((C_a² + C_s²)/2)/(cμ − λ) (Kimura's two-moment form, as
    for Poisson arrivals). Both reduce to the M/G/c formulas at C_a² = 1. Passing (c/z, λ/z) with
    SCVs divided by z to the M/G/c formula gives exactly that: its slack (c/z)μ − λ/z = (cμ − λ)/z
    cancels the 1/z of the variability.
    """
    z = peakedness(arrival_scv)
    servers, rate = servers / z, rate / z
    if _surely_no_wait(servers, rate * mean_service_s, quantile):
        return 0.0  # C ≤ 1 − q for certain, so the q-quantile of the wait is exactly 0
    return unchecked_wait_statistics(quantile, servers, rate, 1.0 / mean_service_s, scv / z, arrival_scv / z)[
        0
    ]


def _utilization_bound(rate: float, mean_service_s: Any, slots: Any, cap: float) -> Any:
    """Smallest n with λ·E[S] / (n·s) ≤ cap (exact, guarding float rounding on both sides), for one
    slot count (an int) or per slot count (an int array)."""
    xp = backend_of(slots)
    load = rate * mean_service_s
    n = xp.maximum(xp.ceil(load / (cap * slots)), 1)
    n = n + (load / (n * slots) > cap)
    fewer = n - 1
    return xp.as_int(n - ((fewer >= 1) & (load / (xp.maximum(fewer, 1) * slots) <= cap)))


def _describe(
    hardware: PoolHardware,
    context_tokens: int,
    kv_limit: int,
    rate: float,
    instances: int,
    times: SlotServiceTime,
    quantile: float,
    binding: str,
    slots_binding: str,
    feasible: bool = True,
    p99_wait: float | None = None,
    arrival_scv: float = 1.0,
) -> PoolSizing:
    """The PoolSizing of n instances of ``times.slots`` slots (``p99_wait``: already computed, s)."""
    slots = times.slots
    mean_s = times.mean_service_s
    servers = instances * slots
    if p99_wait is None:
        p99_wait = _wait_one(float(servers), rate, mean_s, times.service_scv, quantile, arrival_scv)
    return PoolSizing(
        feasible=feasible,
        instances=instances,
        gpus=instances * hardware.gpus_per_instance,
        slots_per_instance=slots,
        kv_slot_limit=kv_limit,
        context_tokens=context_tokens,
        servers=servers,
        arrival_rate_per_s=rate,
        mean_service_s=mean_s,
        service_scv=times.service_scv,
        service_rate_per_instance_per_s=slots / mean_s,
        utilization=rate * mean_s / servers,
        p99_wait_s=p99_wait,
        p99_prefill_s=times.prefill_s,
        iteration_s=times.iteration_s,
        p99_ttft_s=p99_wait + times.ttft_overhead_s,
        binding_constraint=binding,
        slots_binding=slots_binding,
        problems=(),
        min_achievable_ttft_s=None,
        cost_per_hour_usd=instances * hardware.instance_hour_usd,
        arrival_scv=arrival_scv,
    )


def _one(times: SlotServiceTimes, index: int) -> SlotServiceTime:
    """Entry ``index`` of per-slot-count arrays, as plain numbers."""
    return SlotServiceTime(
        int(times.slots[index]), float(times.mean_service_s[index]), float(times.service_scv[index]),
        float(times.ttft_overhead_s[index]), float(times.prefill_s[index]), float(times.iteration_s[index]),
    )  # fmt: skip


def _tpot_problem(slots: int, iteration_s: float, tpot_slo_s: float) -> PoolProblem:
    return PoolProblem(ProblemKind.TPOT_OVER_SLO, iteration_s, tpot_slo_s, slots)


def _prefill_problem(best_ttft_s: float, slots: int, ttft_slo_s: float) -> PoolProblem:
    return PoolProblem(ProblemKind.PREFILL_OVER_SLO, best_ttft_s, ttft_slo_s, slots)


def _binding(instances: int, n_util: int, rate: float, mean_s: float, slots: float, cap: float) -> str:
    if instances > n_util:
        return "ttft"
    if instances == 1 and rate * mean_s < cap * slots:
        return "minimum"  # one instance is the least a pool with traffic can have
    return "utilization"


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
    """The cheapest (instances, slots) for one pool: fewest instances, then the most slots.

    For every candidate slot count s (1 … KV limit, or ``fixed_slots``): the TTFT budget left for
    the wait is SLO − prefill − first decode; s is dropped if that is negative (or t_iter > TPOT
    SLO). n*(s) = max(utilization bound, wait bound), the wait bound found by bisection (the
    wait quantile is non-increasing in n). The answer is min_s n*(s), ties going to the largest
    s. Never returns a pool that breaks its SLO or cap: if no s can meet them it returns
    ``feasible=False`` with the problem and the smallest TTFT any size reaches.

    ``arrival_scv``: C_a² ≥ 1 of the pool's arrivals (1: Poisson); it enters the wait through
    Hayward's peakedness (:func:`_wait_one`, and the occupancy chain at n/z instances and λ/z).
    ``instances_hint``: a guess of the answer (a similar pool's), where the engine model's search
    starts its bracket; it saves evaluations and never changes the answer.
    """
    _check_arrival_scv(arrival_scv)
    if not (0.0 < max_utilization <= 1.0):
        raise ValidationError(f"max utilization: {max_utilization!r} must be in (0, 1]")
    if arrival_rate_per_s < 0 or not math.isfinite(arrival_rate_per_s):
        raise ValidationError(f"arrival rate: {arrival_rate_per_s!r} req/s must be ≥ 0 and finite")
    service_model = get_service_model(service_model)
    kv_limit = hardware.max_slots(context_tokens)
    if kv_limit < 1:
        return _infeasible(
            hardware, context_tokens, kv_limit, arrival_rate_per_s,
            PoolProblem(ProblemKind.KV_MISFIT, context_tokens, hardware.kv_capacity_tokens), None,
        )  # fmt: skip
    if fixed_slots is not None and not (1 <= fixed_slots <= kv_limit):
        raise ValidationError(
            f"slots per instance: {fixed_slots} must be between 1 and the KV limit {kv_limit} "
            f"at {context_tokens:,} tokens"
        )
    if arrival_rate_per_s == 0 or moments.is_empty:
        return _empty_pool(hardware, context_tokens, kv_limit, fixed_slots or kv_limit)
    args = (arrival_rate_per_s, moments, hardware, context_tokens, kv_limit, service_model, ttft_slo_s)
    if service_model.occupancy_aware:
        return _size_engine(*args, max_utilization, tpot_slo_s, fixed_slots, arrival_scv, instances_hint)
    if fixed_slots is not None:
        return _size_fixed_slots(*args, max_utilization, tpot_slo_s, fixed_slots, arrival_scv)
    return _size_any_slots(*args, max_utilization, tpot_slo_s, arrival_scv)


def _check_arrival_scv(arrival_scv: float) -> None:
    if not (arrival_scv >= 1.0 and math.isfinite(arrival_scv)):
        raise ValidationError(
            f"arrival SCV: {arrival_scv!r} must be a finite number ≥ 1 (1 is Poisson; fleetopt never "
            "sizes for arrivals smoother than Poisson)"
        )


def _size_fixed_slots(
    rate: float, moments: PoolMoments, hardware: PoolHardware, context_tokens: int, kv_limit: int,
    service_model: ServiceModel, ttft_slo_s: float, cap: float, tpot_slo_s: float | None, slots: int,
    arrival_scv: float = 1.0,
) -> PoolSizing:  # fmt: skip
    """``size_pool`` with one slot count: the same search on plain floats (no array overhead)."""
    times = one_slot_service_time(moments, hardware, slots, service_model)
    if tpot_slo_s is not None and not times.iteration_s <= tpot_slo_s:
        problem = _tpot_problem(slots, times.iteration_s, tpot_slo_s)
        return _infeasible(hardware, context_tokens, kv_limit, rate, problem, None)
    budget_s = ttft_slo_s - times.ttft_overhead_s
    if not budget_s >= 0:
        problem = _prefill_problem(times.ttft_overhead_s, slots, ttft_slo_s)
        return _infeasible(hardware, context_tokens, kv_limit, rate, problem, times.ttft_overhead_s)
    q = moments.quantile
    mean_s, scv, s = times.mean_service_s, times.service_scv, float(slots)

    def wait(instances: int) -> tuple[bool, float]:
        p99_wait = _wait_one(instances * s, rate, mean_s, scv, q, arrival_scv)
        return p99_wait <= budget_s, p99_wait

    n_util = _utilization_bound(rate, mean_s, s, cap)
    fits, p99_wait = wait(n_util)
    instances = n_util
    if not fits:
        instances, p99_wait = smallest_passing(wait, failing=n_util)
    binding = _binding(instances, n_util, rate, mean_s, s, cap)
    return _describe(
        hardware, context_tokens, kv_limit, rate, instances, times, q, binding, "fixed", p99_wait=p99_wait,
        arrival_scv=arrival_scv,
    )  # fmt: skip


def _size_any_slots(
    rate: float, moments: PoolMoments, hardware: PoolHardware, context_tokens: int, kv_limit: int,
    service_model: ServiceModel, ttft_slo_s: float, max_utilization: float, tpot_slo_s: float | None,
    arrival_scv: float = 1.0,
) -> PoolSizing:  # fmt: skip
    """``size_pool`` over every slot count 1 … KV limit, vectorized over the slot counts."""
    quantile = moments.quantile
    most = _most_allowed_slots(moments, hardware, kv_limit, service_model, ttft_slo_s, tpot_slo_s)
    if most == 0:
        return _no_slot_count_fits(rate, moments, hardware, context_tokens, kv_limit, service_model,
                                   ttft_slo_s, tpot_slo_s)  # fmt: skip
    # The usual answer without arrays: when λ·E[S](s)/s falls with s by far more than rounding,
    # the utilization bound is least at s_max, and s_max is the largest slot count reaching it; if
    # the wait fits there too, that is (fewest instances, most slots).
    at_most = one_slot_service_time(moments, hardware, most, service_model)
    if _load_per_slot_falls(moments, hardware, most, service_model):
        least = _utilization_bound(rate, at_most.mean_service_s, float(most), max_utilization)
        p99_wait = _wait_one(
            least * float(most), rate, at_most.mean_service_s, at_most.service_scv, quantile, arrival_scv
        )
        if p99_wait <= ttft_slo_s - at_most.ttft_overhead_s:
            binding = _binding(least, least, rate, at_most.mean_service_s, float(most), max_utilization)
            slots_binding = _slots_binding(moments, hardware, most, kv_limit, service_model, tpot_slo_s)
            return _describe(
                hardware, context_tokens, kv_limit, rate, least, at_most, quantile, binding, slots_binding,
                p99_wait=p99_wait, arrival_scv=arrival_scv,
            )  # fmt: skip

    slots = np.arange(1.0, most + 1.0)  # every one of them is allowed
    times = slot_service_times(moments, hardware, slots, service_model)
    mean_s, scv = times.mean_service_s, times.service_scv
    budget = ttft_slo_s - times.ttft_overhead_s
    n_util = _utilization_bound(rate, mean_s, slots, max_utilization)

    # No slot count can use fewer instances than the least utilization bound; if the largest slot
    # count reaching it also meets the wait there, that is the answer (the usual case).
    least = int(n_util.min())
    last = int(np.flatnonzero(n_util == least)[-1])
    at_last = (rate, float(mean_s[last]), float(scv[last]), quantile, arrival_scv)
    p99_wait: float | None = _wait_one(least * float(slots[last]), *at_last)
    if p99_wait <= float(budget[last]):
        instances, choice = least, last
    else:
        instances, choice = _search_slots(rate, slots, mean_s, scv, budget, n_util, quantile, arrival_scv)
        p99_wait = None

    binding = _binding(instances, int(n_util[choice]), rate, float(mean_s[choice]), float(slots[choice]),
                       max_utilization)  # fmt: skip
    slots_binding = _slots_binding(moments, hardware, int(slots[choice]), kv_limit, service_model, tpot_slo_s)
    chosen = _one(times, choice)
    return _describe(
        hardware, context_tokens, kv_limit, rate, instances, chosen, quantile, binding, slots_binding,
        p99_wait=p99_wait, arrival_scv=arrival_scv,
    )  # fmt: skip


def _slots_binding(
    moments: PoolMoments, hardware: PoolHardware, slots: int, kv_limit: int, service_model: ServiceModel,
    tpot_slo_s: float | None,
) -> str:  # fmt: skip
    """What set a chosen slot count below the KV limit: ``kv`` (none: it is the limit), ``tpot`` (one
    slot more breaks the TPOT cap) or ``ttft`` (the SLO made fewer slots cheaper or feasible)."""
    if slots == kv_limit:
        return "kv"
    if tpot_slo_s is not None and not (
        one_slot_service_time(moments, hardware, slots + 1, service_model).iteration_s <= tpot_slo_s
    ):
        return "tpot"
    return "ttft"


def _load_per_slot_falls(
    moments: PoolMoments, hardware: PoolHardware, most: int, service_model: ServiceModel
) -> bool:
    """True when E[S](s)/s strictly falls over s = 1 … ``most`` by a relative step above 1e-9.

    Under both service models E[S] = a + b·s (a, b ≥ 0). With a > 0 the step from s to s + 1 is
    a / ((s + 1)(a + b·s)) of the value, smallest at s = ``most``; far above float rounding
    (~1e-16), the computed utilization bound is then non-increasing in s, exactly as its array
    form. False (use the arrays) when a = 0, or when E[S] is not affine after all.
    """
    at_one = service_time_formulas(moments, hardware, 1.0, service_model)[0]
    slope = service_time_formulas(moments, hardware, 2.0, service_model)[0] - at_one
    intercept = at_one - slope
    at_most = service_time_formulas(moments, hardware, float(most), service_model)[0]
    if not (intercept > 0 and slope >= 0):
        return False
    if abs(intercept + slope * most - at_most) > 1e-9 * at_most:
        return False
    return intercept / ((most + 1) * (intercept + slope * most)) > 1e-9


def _most_allowed_slots(
    moments: PoolMoments, hardware: PoolHardware, kv_limit: int, service_model: ServiceModel,
    ttft_slo_s: float, tpot_slo_s: float | None,
) -> int:  # fmt: skip
    """The largest s ≤ the KV limit whose prefill + first decode leaves a wait budget ≥ 0 (and whose
    iteration time meets the TPOT cap), or 0 if even s = 1 does not.

    Both grow with s under either service model, and so do their float evaluations (each step
    is a monotone IEEE operation on W + H·s), so the allowed slot counts are exactly 1 … s_max.
    Both are affine in s, so s_max is guessed from the ends and checked at s and s + 1; bisection
    with the same scalar formulas finishes if the guess is off. The arrays then stop at s_max.
    """

    def margins(slots: int) -> tuple[float, float]:
        """(SLO − prefill − first decode, TPOT SLO − iteration time) at ``slots``, seconds."""
        _, _, overhead_s, _, iteration_s = service_time_formulas(
            moments, hardware, float(slots), service_model
        )
        return ttft_slo_s - overhead_s, (math.inf if tpot_slo_s is None else tpot_slo_s - iteration_s)

    def fits(margin: tuple[float, float]) -> bool:
        return margin[0] >= 0 and margin[1] >= 0

    def allowed(slots: int) -> bool:
        return fits(margins(slots))

    first, last = margins(1), margins(kv_limit)
    if not fits(first):
        return 0
    if fits(last):
        return kv_limit
    lo, hi = 1, kv_limit  # allowed at lo, not at hi
    # Probe where the binding margin crosses zero, and one past it: when the guess is right (the
    # usual case) that settles it.
    crossings = [
        1 + (kv_limit - 1) * a / (a - b) for a, b in zip(first, last, strict=True) if b < 0 and a - b > 0
    ]
    guess = math.floor(min(crossings)) if crossings else lo
    for probe in (guess, guess + 1):
        if lo < probe < hi:
            if allowed(probe):
                lo = probe
            else:
                hi = probe
    first_refused, _ = smallest_passing(lambda slots: (not allowed(slots), None), failing=lo, passing=hi)
    return first_refused - 1


def _no_slot_count_fits(
    rate: float, moments: PoolMoments, hardware: PoolHardware, context_tokens: int, kv_limit: int,
    service_model: ServiceModel, ttft_slo_s: float, tpot_slo_s: float | None,
) -> PoolSizing:  # fmt: skip
    """The infeasible result when no slot count meets the SLO (or TPOT cap), with the problem."""
    candidates = np.arange(1, kv_limit + 1)
    times = slot_service_times(moments, hardware, candidates, service_model)
    tpot_ok = np.ones(candidates.size, bool) if tpot_slo_s is None else times.iteration_s <= tpot_slo_s
    if not tpot_ok.any():
        problem = _tpot_problem(int(candidates[0]), float(times.iteration_s[0]), tpot_slo_s)
        return _infeasible(hardware, context_tokens, kv_limit, rate, problem, None)
    best = int(np.argmin(np.where(tpot_ok, times.ttft_overhead_s, np.inf)))
    best_ttft = float(times.ttft_overhead_s[best])
    problem = _prefill_problem(best_ttft, int(candidates[best]), ttft_slo_s)
    return _infeasible(hardware, context_tokens, kv_limit, rate, problem, best_ttft)


def _search_slots(
    rate: float, slots: np.ndarray, mean_s: np.ndarray, scv: np.ndarray, budget: np.ndarray,
    n_util: np.ndarray, quantile: float, arrival_scv: float = 1.0,
) -> tuple[int, int]:  # fmt: skip
    """(min_s n*(s), the largest s reaching it) by vectorized bisection over every slot count
    (waits as :func:`_wait_one`: Hayward's (c/z, λ/z) with the SCVs divided by z)."""
    z = peakedness(arrival_scv)

    def wait_ok(instances: np.ndarray, subset: np.ndarray) -> np.ndarray:
        servers = instances * slots[subset] / z
        offered = rate * mean_s[subset] / z
        passed = _surely_no_wait(servers, offered, quantile)
        unsure = ~passed
        if unsure.any():
            rest = subset[unsure]
            c = servers[unsure]
            waits, _ = unchecked_wait_statistics_arrays(
                quantile, c, np.full(c.shape, rate / z), 1.0 / mean_s[rest],
                0.5 * (arrival_scv + scv[rest]) / z,
            )  # fmt: skip
            passed[unsure] = waits <= budget[rest]
        return passed

    never = np.iinfo(np.int64).max // 4
    ok = wait_ok(n_util, np.arange(slots.size))
    n_best = np.where(ok, n_util, never)
    best_ok = int(n_util[ok].min()) if ok.any() else None
    # Slot counts whose wait fails at their utilization bound: find their wait bound by bisection,
    # but only where it could still beat (or tie) the best count found so far.
    pending = np.flatnonzero(~ok & (n_util < (best_ok if best_ok is not None else never)))
    if pending.size and best_ok is not None:
        pending = pending[wait_ok(np.full(pending.size, best_ok), pending)]
        hi = np.full(pending.size, best_ok, dtype=np.int64)
    elif pending.size:
        hi = n_util[pending] * 2
        for _ in range(MAX_DOUBLINGS):
            passed = wait_ok(hi, pending)
            if passed.all():
                break
            hi = np.where(passed, hi, hi * 2)
    if pending.size:
        lo = n_util[pending].copy()  # the wait fails at lo, passes at hi
        searching = hi - lo > 1
        while searching.any():
            mid = (lo + hi) // 2
            passed = wait_ok(mid, pending)
            hi = np.where(searching & passed, mid, hi)
            lo = np.where(searching & ~passed, mid, lo)
            searching = hi - lo > 1
        n_best[pending] = hi

    instances = int(n_best.min())
    return instances, int(np.flatnonzero(n_best == instances)[-1])  # ties: most slots


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

    ``feasible`` is true when utilization ≤ cap and P99 TTFT ≤ SLO; ``problems`` lists what breaks.
    ``arrival_scv``: C_a² of the pool's arrivals, as in :func:`size_pool`.
    """
    _check_arrival_scv(arrival_scv)
    service_model = get_service_model(service_model)
    kv_limit = hardware.max_slots(context_tokens)
    if arrival_rate_per_s == 0 or moments.is_empty:
        empty = _empty_pool(hardware, context_tokens, kv_limit, slots_per_instance)
        return _with_instances(empty, instances, hardware)
    if instances < 1:
        return _infeasible(
            hardware, context_tokens, kv_limit, arrival_rate_per_s,
            PoolProblem(ProblemKind.NO_INSTANCES, arrival_rate_per_s),
            None,
        )  # fmt: skip
    if service_model.occupancy_aware:
        return _evaluate_engine(
            arrival_rate_per_s, moments, hardware, context_tokens, kv_limit, service_model, instances,
            slots_per_instance, ttft_slo_s, max_utilization, arrival_scv,
        )  # fmt: skip
    times = one_slot_service_time(moments, hardware, slots_per_instance, service_model)
    result = _describe(
        hardware, context_tokens, kv_limit, arrival_rate_per_s, instances, times, moments.quantile,
        "evaluated", "fixed", arrival_scv=arrival_scv,
    )  # fmt: skip
    problems = []
    if slots_per_instance > kv_limit:
        problems.append(PoolProblem(ProblemKind.SLOTS_OVER_KV, slots_per_instance, kv_limit))
    if result.utilization > max_utilization:
        problems.append(PoolProblem(ProblemKind.OVER_CAP, result.utilization, max_utilization))
    if not result.p99_ttft_s <= ttft_slo_s:
        problems.append(PoolProblem(ProblemKind.TTFT_OVER_SLO, result.p99_ttft_s, ttft_slo_s))
    if problems:
        return _replace(result, feasible=False, problems=tuple(problems))
    return result


def _replace(sizing: PoolSizing, **changes: object) -> PoolSizing:
    """``dataclasses.replace``, keeping deferred figures deferred."""
    for name in _DEFERRED_FIELDS:
        changes.setdefault(name, sizing.__dict__[f"_deferred_{name}"])
    return replace(sizing, **changes)


def _with_instances(sizing: PoolSizing, instances: int, hardware: PoolHardware) -> PoolSizing:
    return _replace(
        sizing,
        instances=instances,
        gpus=instances * hardware.gpus_per_instance,
        cost_per_hour_usd=instances * hardware.instance_hour_usd,
    )


# --------------------------------------------------------------------------------------------
# Occupancy-aware models (the ``engine`` service model): the state-dependent chain
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _EngineContext:
    """What an occupancy-aware evaluation of one pool needs besides (n, s).

    ``decode_per_sequence_s``: c_d, the decode-side cost one sequence adds to an iteration;
    ``prompt_work_s``: τ·E[L_in], the compute of one request's prompt (so the prompt share of an
    instance's time is u = λ/n · τ·E[L_in]); ``work_per_request_s``: E[I]·c₁ = E[I]·c_d + τ·E[L_in];
    ``prompt_square_work_s2``: τ²·E[L_in²] (NaN without prompt levels: no stall widening).
    """

    rate: float
    moments: PoolMoments
    hardware: PoolHardware
    service_model: ServiceModel
    costs: IterationCosts
    decode_per_sequence_s: float
    prompt_work_s: float
    work_per_request_s: float
    ttft_slo_s: float
    cap: float
    tpot_slo_s: float | None
    arrival_scv: float = 1.0
    prompt_square_work_s2: float = math.nan
    #: evaluations at (n, s) already made: the search's last one is the one the report describes
    evaluated: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def peakedness(self) -> float:
        return peakedness(self.arrival_scv)


#: The least decode cost per sequence the occupancy chain uses, as a share of W (see _engine_context).
_LEAST_DECODE_SHARE = 1e-6
#: Below this log of a bound on P(wait) the prefill-stall widening of the chain is skipped (e^-230 ≈
#: 10⁻¹⁰⁰: no TTFT quantile can see it), in the point and the array evaluations alike.
NEGLIGIBLE_LOG_WAIT = -230.0


def _engine_context(
    rate: float, moments: PoolMoments, hardware: PoolHardware, service_model: ServiceModel,
    ttft_slo_s: float, cap: float, tpot_slo_s: float | None, arrival_scv: float = 1.0,
) -> _EngineContext:  # fmt: skip
    costs = iteration_costs(hardware)
    decode, prompt = service_model.decode_and_prompt_costs(moments, costs)
    # A pool whose requests all ask for no output tokens decodes nothing (c_d = 0), where the
    # chain's NB(r, x) has r = W/(c_d/n) + 1 = ∞ (its Poisson limit); c_d ≥ 10⁻⁶·W keeps r finite
    # and moves an iteration by at most 10⁻⁶·W per sequence.
    decode = max(decode, _LEAST_DECODE_SHARE * costs.base_s)
    levels = moments.prompt_levels
    tau = costs.per_prefill_token_s
    prompt_square = math.nan if levels is None else tau * tau * levels.mean_square_tokens
    return _EngineContext(
        rate, moments, hardware, service_model, costs, decode, prompt,
        moments.mean_iterations * decode + prompt, ttft_slo_s, cap, tpot_slo_s, arrival_scv, prompt_square,
    )  # fmt: skip


def _stall_factor(ctx: _EngineContext, instances: float) -> float:
    """:func:`fleetopt.core.occupancy.prefill_stall_variance_factor` at n = ``instances``."""
    return prefill_stall_variance_factor(ctx.rate / instances, ctx.prompt_work_s, ctx.prompt_square_work_s2)


def _slot_wait(ctx: _EngineContext, p_wait: Any, drain_rate_per_s: Any, instances: float) -> tuple[Any, Any]:
    """(P(wait), m): the slot wait is 0 with probability 1 − P(wait), else exponential with mean
    m = :func:`fleetopt.core.occupancy.local_wait_given_wait_s` of the chain's drain rate μ(c) − λ
    (the two-moment factor v = (C_a² + C_I²)/2 on the queue's build-up; C_a² = 1 for Poisson)."""
    variability = 0.5 * (ctx.arrival_scv + ctx.moments.iterations_scv)
    return p_wait, local_wait_given_wait_s(drain_rate_per_s, ctx.rate, instances, variability)


class EnginePoint(NamedTuple):
    """The engine model's answer at n instances of s slots (:func:`_engine_point`): floats at one
    slot count, arrays over a sweep of them.

    Attributes:
        ok: stable, within the cap (slot occupancy and compute), meets the TTFT SLO and TPOT cap.
        margin: how far the tests pass (< 0: fail), the least of log(limit / value) over the caps,
            the TPOT cap and (when the caps pass) log((1 − q) / P(TTFT > SLO)); one point only
            (NaN over a sweep): it places the search's next instance count.
        utilization: the slot occupancy E[min(K, c)]/c (the offered load σ ≥ 1 where unstable).
        compute: the instances' compute utilization λ·E[I]·c₁/n.
        seen_iteration_s: the iteration at the q-quantile of the occupancy an arrival finds, seconds
            (NaN without a TPOT cap).
        p_wait, wait_given_s: P(wait for a slot) and the mean wait given a wait, seconds.
        mean_busy: the chain's mean sequences in flight in the pool.
        law: the TTFT law (:class:`fleetopt.core.ttft.TtftCumulants`) at one stable point; None
            where unstable and over a sweep.
    """

    ok: Any
    margin: float
    utilization: Any
    compute: float
    seen_iteration_s: Any
    p_wait: Any
    wait_given_s: Any
    mean_busy: Any
    law: TtftCumulants | None


def _engine_point(
    ctx: _EngineContext, instances: float, slots: Any, *, last_fails: bool = False
) -> EnginePoint:
    """The chain's figures at n ``instances`` (one count) of s ``slots`` (a float: one point, every
    figure, in plain floats, the sizing hot path; or an array: a sweep over slot counts that only
    decides ``ok``), and ``ok``: the pool is stable, within the cap (slot occupancy and compute),
    meets the TTFT SLO and TPOT cap.

    Other requests' prompts take the share u = λ_i·τ·E[L_in] of an instance's time, stretching
    every iteration by 1/(1 − u); with k sequences in flight per instance an iteration lasts
    (W + c_d·k)/(1 − u), which is the chain of :mod:`fleetopt.core.occupancy` with W' = W/(1 − u)
    and c' = c_d/(1 − u). The P99 TTFT is the q-quantile of :meth:`EngineModel.ttft_law` at the
    chain's mean occupancy per instance, with its slot wait; the TPOT cap is checked at the
    q-quantile of the occupancy an arrival finds. Over slot counts only t_d = W + c_d·k and the
    wait change: the law is evaluated over an array of t_d, and the SLO test uses its survival
    function. ``last_fails`` (a sweep): the last slot count is known to fail the SLO; a slot count
    whose mean occupancy is no lower than the last one's then fails too (the law grows with t_d and
    the wait, and fewer slots only add waiting), so its law is not evaluated.

    Arrivals with SCV C_a² (peakedness z = (1 + C_a²)/2) wait as in Hayward's approximation for
    M/G/c: the probability of waiting and the occupancy an arrival finds come from the chain of
    n/z instances fed λ/z (the same load per instance, so the same iteration times and compute
    utilization, but a z times wider occupancy distribution), scaled back by z; the wait given a
    wait is exponential with mean (C_a² + C_I²)/2 over the unscaled drain rate. The mean occupancy
    (what the iteration times and the slot utilization see) stays the chain's own: Hayward's
    equivalent pool has c/z slots, and its truncated mean would understate a bursty pool's
    occupancy. At C_a² = 1 this is the Poisson chain exactly. The slot wait is its own part of the
    TTFT mixture (:class:`fleetopt.core.ttft.TtftCumulants`), so the P99 grows with the wait and a
    bursty pool is never sized below a Poisson one without a second check under the Poisson chain.
    """
    xp = backend_of(slots)
    report = xp is FLOATS  # one point is reported whatever its verdict; a sweep only decides
    m = ctx.moments
    q = m.quantile
    peak = ctx.peakedness
    n = float(instances)
    s = np.asarray(slots, dtype=np.float64) if xp is ARRAYS else float(slots)
    prompt_share = ctx.rate / n * ctx.prompt_work_s
    compute = ctx.rate / n * ctx.work_per_request_s
    servers = n * s
    stretch = 1.0 / max(1.0 - prompt_share, 1e-12)
    base_s, per_sequence_s = ctx.costs.base_s * stretch, ctx.decode_per_sequence_s * stretch
    chain = occupancy_state(ctx.rate, n, s, m.mean_iterations, base_s, per_sequence_s)
    stable = chain.stable & (prompt_share < 1.0)
    if not xp.any(stable):
        # unstable: report the offered slot load σ = λ·E[I]·t(s)/c ≥ 1, as M/G/c reports ρ ≥ 1
        utilization = xp.maximum(chain.sigma, 1.0)
        margin = _log_margin(ctx.cap, utilization) if report else math.nan
        full_iteration_s = base_s + per_sequence_s * s
        return EnginePoint(
            xp.full_like(s, False), margin, utilization, compute, full_iteration_s, xp.full_like(s, 1.0),
            xp.full_like(s, math.inf), servers, None,
        )  # fmt: skip
    utilization = xp.where(stable, chain.mean_busy / servers, xp.maximum(chain.sigma, 1.0))
    within_caps = stable & (utilization <= ctx.cap) & (compute <= ctx.cap)
    # the waiting (and the occupancy an arrival finds); the mean in flight stays the chain's own
    waiting = _waiting_chain(ctx, n, s, chain, stable if report else within_caps, base_s, per_sequence_s)
    drain = peak * waiting.drain_rate_per_s
    ok = within_caps
    seen_iteration_s: Any = math.nan
    if ctx.tpot_slo_s is not None:
        with xp.quiet():
            seen_iteration_s = _seen_iteration_s(ctx, n, s, waiting, servers, stretch)
        within_tpot = seen_iteration_s <= ctx.tpot_slo_s
        ok = ok & within_tpot
    if report:
        slot_wait = _slot_wait(ctx, waiting.p_wait, drain, n)
        law = ctx.service_model.ttft_law(
            m, ctx.hardware, ctx.costs, rate_per_instance_per_s=ctx.rate / n, instances=n,
            occupancy_per_instance=chain.mean_busy / n, slot_wait=slot_wait,
            decode_and_prompt=(ctx.decode_per_sequence_s, ctx.prompt_work_s),
        )  # fmt: skip
        margin = min(_log_margin(ctx.cap, compute), _log_margin(ctx.cap, utilization))
        if within_caps:
            tail = law.survival_one(ctx.ttft_slo_s)
            ok = ok and not tail > 1.0 - q  # (the test of TtftCumulants.exceeds_one)
            margin = min(margin, _log_margin(1.0 - q, tail))
        if ctx.tpot_slo_s is not None:
            margin = min(margin, _log_margin(ctx.tpot_slo_s, seen_iteration_s))
        wait_given_s = slot_wait[1]
        return EnginePoint(
            ok,
            margin,
            utilization,
            compute,
            seen_iteration_s,
            waiting.p_wait,
            wait_given_s,
            chain.mean_busy,
            law,
        )
    if last_fails and ctx.tpot_slo_s is None:  # (with a TPOT cap the last may fail on TPOT alone)
        ok &= chain.mean_busy < chain.mean_busy[-1]
    chosen = np.flatnonzero(ok)
    if chosen.size:
        with xp.quiet():
            law = ctx.service_model.ttft_law(
                m, ctx.hardware, ctx.costs, rate_per_instance_per_s=ctx.rate / n, instances=n,
                occupancy_per_instance=chain.mean_busy[chosen] / n,
                slot_wait=_slot_wait(ctx, waiting.p_wait[chosen], drain[chosen], n),
                decode_and_prompt=(ctx.decode_per_sequence_s, ctx.prompt_work_s),
            )  # fmt: skip
            ok[chosen] = ~law.exceeds(ctx.ttft_slo_s, q)
    return EnginePoint(
        ok, math.nan, utilization, compute, seen_iteration_s, waiting.p_wait, math.nan, chain.mean_busy, None
    )


def _waiting_chain(
    ctx: _EngineContext,
    n: float,
    s: Any,
    chain: ChainState,
    needed: Any,
    base_s: float,
    per_sequence_s: float,
) -> ChainState:
    """The chain for the waiting (and the occupancy an arrival finds): ``chain`` (the chain itself)
    widened by the prefill stalls (:func:`_stall_factor`), at Hayward's equivalent pool (n/z
    instances at λ/z) for peakedness z ≠ 1. Where the widened chain's P(wait) is negligible (below
    e^NEGLIGIBLE_LOG_WAIT by a Chernoff bound), or the point is not ``needed``, its P(wait) and
    normalizer are the chain's own (only its (r, x) widen)."""
    xp = backend_of(s)
    z, m = ctx.peakedness, ctx.moments
    widen = _stall_factor(ctx, n)
    if z != 1.0:
        return occupancy_state(
            ctx.rate / z, n / z, s, m.mean_iterations, base_s, per_sequence_s, widen, wait_only=True
        )
    if widen == 1.0:
        return chain
    wide_r, wide_x = widened_chain(chain.r, chain.x, widen)
    with xp.quiet():
        log_bound = negative_binomial_log_tail_bound(wide_r, wide_x, n * s)
        log_bound = log_bound - xp.log1p(-xp.where(chain.stable, chain.sigma, 0.0))
    widened = needed & chain.stable & xp.logical_not(log_bound < NEGLIGIBLE_LOG_WAIT)

    def wide(xp: Any, s: Any, p_wait: Any, z: Any) -> tuple[Any, Any]:
        part = occupancy_state(ctx.rate, n, s, m.mean_iterations, base_s, per_sequence_s, widen, True)
        return part.p_wait, part.z

    def own(xp: Any, s: Any, p_wait: Any, z: Any) -> tuple[Any, Any]:
        return p_wait, z

    p_wait, chain_z = xp.piecewise(widened, wide, own, s, chain.p_wait, chain.z)
    return chain._replace(r=wide_r, x=wide_x, p_wait=p_wait, z=chain_z)


def _seen_iteration_s(
    ctx: _EngineContext, n: float, s: Any, waiting: ChainState, servers: Any, stretch: float
) -> Any:
    """The iteration time at the q-quantile of the occupancy an arrival finds (all slots when the
    q-quantile arrival waits): (W + c_d·m_q/n)/(1 − u), m_q the NB quantile by Cornish–Fisher
    (``waiting``: the chain of n/z instances for arrivals of peakedness z)."""
    xp = backend_of(s)
    q, peak = ctx.moments.quantile, ctx.peakedness
    full = servers / peak
    target = xp.minimum(1.0, q * waiting.z)
    seen = xp.where(waiting.p_wait > 1.0 - q, full, occupancy_quantile(target, waiting.r, waiting.x))
    finite = xp.isfinite(seen)
    seen = xp.where(finite, xp.ceil(xp.where(finite, seen, 0.0)), full)
    per_instance = xp.minimum(s, seen / (n / peak))
    return (ctx.costs.base_s + ctx.decode_per_sequence_s * per_instance) * stretch


def _engine_eval_one(ctx: _EngineContext, instances: float, slots: float) -> EnginePoint:
    """:func:`_engine_point` at one point, memoized per (n, s)."""
    known = ctx.evaluated.get((instances, slots))
    if known is None:
        known = ctx.evaluated[(instances, slots)] = _engine_point(ctx, instances, slots)
    return known


def _log_margin(limit: float, value: float) -> float:
    """log(limit / value): ≥ 0 when value ≤ limit (∞ for value ≤ 0, NaN for NaN)."""
    return math.log(limit) - math.log(value) if value > 0.0 else (math.nan if math.isnan(value) else math.inf)


def _engine_could_pass(ctx: _EngineContext, instances: float) -> bool:
    """A necessary condition for some slot count to pass at n ``instances``: the TTFT law with the
    fewest sequences in flight any slot count has and no slot wait meets the SLO (the law grows
    with t_d and the wait), and the TPOT cap allows an iteration of W/(1 − u).

    The fewest in flight: each of the λ/n requests per second an instance takes holds its slot for
    E[I] iterations of at least W/(1 − u), so by Little's law the chain's mean occupancy per
    instance is at least k₀ = (λ/n)·E[I]·W/(1 − u), whatever the slot count (taken 10⁻⁶ lower, for
    rounding)."""
    prompt_share = ctx.rate / instances * ctx.prompt_work_s
    if not prompt_share < 1.0:
        return False
    least_iteration_s = ctx.costs.base_s / (1.0 - prompt_share)
    if ctx.tpot_slo_s is not None and not least_iteration_s <= ctx.tpot_slo_s:
        return False
    fewest = ctx.rate / instances * ctx.moments.mean_iterations * least_iteration_s * (1.0 - 1e-6)
    law = ctx.service_model.ttft_law(
        ctx.moments, ctx.hardware, ctx.costs, rate_per_instance_per_s=ctx.rate / instances,
        instances=instances, occupancy_per_instance=fewest,
        decode_and_prompt=(ctx.decode_per_sequence_s, ctx.prompt_work_s),
    )  # fmt: skip
    return not law.exceeds_one(ctx.ttft_slo_s, ctx.moments.quantile)


def _engine_ok_one(ctx: _EngineContext, instances: float, slots: float) -> bool:
    """``_engine_point(...).ok`` at one point, in plain floats."""
    return bool(_engine_eval_one(ctx, instances, slots).ok)


def _engine_floor(ctx: _EngineContext) -> TtftCumulants:
    """The TTFT law at no load (no other request, no sequence decoding, no wait): no pool size does
    better."""
    return ctx.service_model.ttft_law(
        ctx.moments, ctx.hardware, ctx.costs, rate_per_instance_per_s=0.0, instances=1.0,
        occupancy_per_instance=0.0,
    )  # fmt: skip


def _slot_wait_over_slo(law: TtftCumulants, ttft_slo_s: float, overhead_s: float) -> float:
    """P(TTFT > SLO) − P(T′ > SLO): the share of requests over the SLO because they waited for a slot
    (T′: the law without the wait; T0 is a constant shift of both)."""
    without = law.without_wait_and_overhead(overhead_s).survival_one(ttft_slo_s - overhead_s)
    return max(0.0, law.survival_one(ttft_slo_s) - without)


def _engine_describe(
    ctx: _EngineContext, context_tokens: int, kv_limit: int, instances: int, slots: int,
    binding: str, slots_binding: str,
) -> PoolSizing:  # fmt: skip
    ev = _engine_eval_one(ctx, float(instances), float(slots))
    mean_busy = float(ev.mean_busy)
    law, q = ev.law, ctx.moments.quantile
    # the slot wait: 0 with probability 1 − P(wait), else exponential with mean ``wait_given_s``
    p_wait, wait_given_s = ev.p_wait, ev.wait_given_s
    wait_q = wait_given_s * math.log(p_wait / (1.0 - q)) if p_wait > 1.0 - q else 0.0
    # The P99 TTFT, and the P99 from a free slot to the first token (the same law without the slot
    # wait and T0): mixture quantiles, computed when first read (a sweep reports few of its pools).
    stable = law is not None
    ttft_q: float | Deferred = math.inf
    prefill_q: float | Deferred = math.nan
    wait_over: float | Deferred | None = None
    if stable:
        overhead_s = ctx.hardware.ttft_overhead_s
        ttft_q = Deferred(lambda: law.quantile_s(q))
        prefill_q = Deferred(lambda: law.without_wait_and_overhead(overhead_s).quantile_s(q))
        wait_over = Deferred(lambda: _slot_wait_over_slo(law, ctx.ttft_slo_s, overhead_s))
    fewer: int | None = None
    fewer_q: float | Deferred | None = None
    if binding == "ttft":
        fewer = instances - max(1, round(FEWER_INSTANCES_FRACTION * instances))
        if fewer >= 1:
            fewer_q = Deferred(lambda: _p99_ttft_at(ctx, fewer, slots))
        else:
            fewer = None
    mean_service_s = mean_busy / ctx.rate
    servers = instances * slots
    return PoolSizing(
        feasible=bool(ev.ok),
        instances=instances,
        gpus=instances * ctx.hardware.gpus_per_instance,
        slots_per_instance=slots,
        kv_slot_limit=kv_limit,
        context_tokens=context_tokens,
        servers=servers,
        arrival_rate_per_s=ctx.rate,
        mean_service_s=mean_service_s,
        service_scv=ctx.moments.iterations_scv,
        service_rate_per_instance_per_s=slots / mean_service_s,
        utilization=float(ev.utilization),
        p99_wait_s=wait_q if stable else math.inf,
        p99_prefill_s=prefill_q,
        iteration_s=(ctx.costs.base_s + ctx.decode_per_sequence_s * mean_busy / instances)
        / max(1.0 - ctx.rate / instances * ctx.prompt_work_s, 1e-12),
        p99_ttft_s=ttft_q,
        binding_constraint=binding,
        slots_binding=slots_binding,
        problems=(),
        min_achievable_ttft_s=None,
        cost_per_hour_usd=instances * ctx.hardware.instance_hour_usd,
        compute_utilization=float(ev.compute),
        chain_mean_wait_s=p_wait * wait_given_s if p_wait > 0.0 else 0.0,
        arrival_scv=ctx.arrival_scv,
        fewer_instances=fewer,
        p99_ttft_fewer_instances_s=fewer_q,
        slot_wait_over_slo=wait_over,
    )


def _p99_ttft_at(ctx: _EngineContext, instances: int, slots: int) -> float:
    """The P99 TTFT of the pool at n ``instances`` of s ``slots`` (∞ when unstable), seconds."""
    law = _engine_eval_one(ctx, float(instances), float(slots)).law
    return math.inf if law is None else float(law.quantile_s(ctx.moments.quantile))


def _size_engine(
    rate: float, moments: PoolMoments, hardware: PoolHardware, context_tokens: int, kv_limit: int,
    service_model: ServiceModel, ttft_slo_s: float, cap: float, tpot_slo_s: float | None,
    fixed: int | None, arrival_scv: float = 1.0, hint: int | None = None,
) -> PoolSizing:  # fmt: skip
    """Fewest instances, then most slots, under the occupancy chain (see :func:`_engine_eval`).

    Every test is monotone in n for a fixed s (more instances: fewer requests per instance,
    shorter iterations, less waiting). The most slots are sized first, in plain floats, by
    :func:`fleetopt.core.search.smallest_passing_from` (started at ``hint``, placed by the
    evaluation's margin); one vectorized evaluation over every slot count at one instance fewer
    then decides whether fewer slots could do with fewer instances (doubling and bisection over n
    when they can).
    """
    ctx = _engine_context(rate, moments, hardware, service_model, ttft_slo_s, cap, tpot_slo_s, arrival_scv)
    least_iteration_s = ctx.costs.base_s
    if tpot_slo_s is not None and not least_iteration_s <= tpot_slo_s:
        problem = _tpot_problem(1, least_iteration_s, tpot_slo_s)
        return _infeasible(hardware, context_tokens, kv_limit, rate, problem, None)
    most = fixed if fixed is not None else kv_limit
    # No pool with fewer instances than the compute bound λ·E[I]·c₁ / cap is allowed (x ≤ cap).
    start = max(1, math.ceil(rate * ctx.work_per_request_s / cap))
    # The no-load floor (the TTFT law with no other request and no wait; no pool size does better)
    # decides feasibility. When the search's first instance count passes, so does the floor (the
    # law only grows with load), and the floor's law is not needed.
    first = hint if hint is not None and hint > start else start
    if not _engine_eval_one(ctx, float(first), float(most)).ok:
        least_law = _engine_floor(ctx)
        # (the survival test at the SLO, as sizing uses; the quantile only for the report)
        if least_law.exceeds_one(ttft_slo_s, moments.quantile):
            least_ttft_s = float(least_law.quantile_s(moments.quantile))
            floor_binds = ctx.costs.prefill_floor_binds
            kind = ProblemKind.COMPUTE_FLOOR if floor_binds else ProblemKind.PREFILL_OVER_SLO
            problem = PoolProblem(kind, least_ttft_s, ttft_slo_s, 1)
            return _infeasible(hardware, context_tokens, kv_limit, rate, problem, least_ttft_s)

    def passes_at_most(instances: int) -> tuple[bool, float | None]:
        ev = _engine_eval_one(ctx, float(instances), float(most))
        return bool(ev.ok), ev.margin

    def passes(instances: int) -> tuple[bool, np.ndarray]:
        # called only below the fewest instances at which the most slots pass (they fail here)
        ok = _engine_point(ctx, float(instances), slots, last_fails=True).ok
        return bool(ok.any()), ok

    # The usual answer, without arrays: the most slots, at the fewest instances they need; then
    # one vectorized look at one instance fewer decides whether fewer slots could do better.
    instances, chosen = smallest_passing_from(passes_at_most, start, hint), most
    if instances > start:
        if fixed is None and _engine_could_pass(ctx, float(instances - 1)):
            slots = np.arange(1.0, kv_limit + 1.0)
            fewer, ok = passes(instances - 1)
            if fewer:  # rare: fewer slots iterate faster when the pool is full
                if passes(start)[0]:
                    instances = start
                else:
                    instances, _ = smallest_passing(passes, failing=start, passing=instances - 1)
                chosen = int(slots[np.flatnonzero(passes(instances)[1])[-1]])
    if instances == start and instances > 1:
        binding = "utilization"
    elif instances == 1:
        binding = "minimum"
    else:
        binding = "ttft"
    if fixed is not None:
        slots_binding = "fixed"
    elif chosen == kv_limit:
        slots_binding = "kv"
    elif tpot_slo_s is not None and not bool(
        _engine_eval_one(ctx, float(instances), float(chosen + 1)).seen_iteration_s <= tpot_slo_s
    ):
        slots_binding = "tpot"
    else:
        slots_binding = "ttft"
    return _engine_describe(ctx, context_tokens, kv_limit, instances, chosen, binding, slots_binding)


def _evaluate_engine(
    rate: float, moments: PoolMoments, hardware: PoolHardware, context_tokens: int, kv_limit: int,
    service_model: ServiceModel, instances: int, slots: int, ttft_slo_s: float, cap: float,
    arrival_scv: float = 1.0,
) -> PoolSizing:  # fmt: skip
    ctx = _engine_context(rate, moments, hardware, service_model, ttft_slo_s, cap, None, arrival_scv)
    result = _engine_describe(ctx, context_tokens, kv_limit, instances, slots, "evaluated", "fixed")
    problems = []
    if slots > kv_limit:
        problems.append(PoolProblem(ProblemKind.SLOTS_OVER_KV, slots, kv_limit))
    if not result.utilization <= cap:
        problems.append(PoolProblem(ProblemKind.OVER_CAP, result.utilization, cap))
    elif not (result.compute_utilization or 0.0) <= cap:
        problems.append(PoolProblem(ProblemKind.OVER_CAP, result.compute_utilization, cap))
    # the SLO test sizing uses (the law's survival function at the SLO), so a sized pool re-evaluated
    # passes exactly when sizing passed it; the reported P99 is the same law's quantile
    law = _engine_eval_one(ctx, float(instances), float(slots)).law
    if law is None or law.exceeds_one(ttft_slo_s, moments.quantile):
        problems.append(PoolProblem(ProblemKind.TTFT_OVER_SLO, result.p99_ttft_s, ttft_slo_s))
    return _replace(result, feasible=not problems, problems=tuple(problems))
