"""Workload drift: does a planned fleet still fit today's traffic, and how far has the workload moved?

Three comparisons, all exact finite sums over today's workload atoms (docs/ci.md):

* **Fit** — the planned fleet, unchanged (instances and slots per pool, the plan's hardware, B, γ,
  p_c and service model), evaluated under today's workload and rate: per pool the M/G/c
  utilization λ·E[S]/(n·s) and P99 TTFT (FleetOpt Eq. 6–8, :func:`fleetopt.core.sizing.evaluate_pool`),
  against the cap ρ_max and the SLO. λ ≥ n·s/E[S] makes the queue unstable: P99 TTFT = ∞.
* **Re-plan** — the planner run again on today's workload and rate with the plan's options,
  hardware and candidate sets; the change in GPUs, cost, B* and γ*.
* **Shift** — Kolmogorov–Smirnov distance sup_x |F_today(x) − F_plan(x)| of total tokens, where
  the plan keeps only the inverted-CDF quantiles q_k = Q(ℓ_k); the quantiles bracket F_plan
  (``ks_against_quantiles``), so the distance is known to within the grid spacing (0.01 for the
  0.00…1.00 grid). Plus the shifts of quantiles, α = F(B), β = F(γB) − F(B), rate and the
  inter-arrival SCV.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from fleetopt.core.planner import FleetCandidate, Planner, PlanOptions
from fleetopt.core.pools import DeployablePool
from fleetopt.core.routing import Routing
from fleetopt.core.sizing import PoolSizing, evaluate_pool
from fleetopt.core.workload import Workload
from fleetopt.errors import ValidationError

#: Default tolerances of ``fleetopt drift`` (relative cost change, KS distance, rate headroom).
DEFAULT_MAX_COST_CHANGE = 0.10
DEFAULT_MAX_KS = 0.10
DEFAULT_MIN_HEADROOM = 0.0


@dataclass(frozen=True)
class PlannedFleet:
    """The deployed fleet of a plan: its routing and its pools, shortest first (one per routed range)."""

    routing: Routing
    pools: tuple[DeployablePool, ...]
    total_gpus: int
    cost_per_hour_usd: float

    @property
    def b_short_tokens(self) -> int | None:
        return self.routing.b_short_tokens

    @property
    def gamma(self) -> float:
        return self.routing.gamma

    def pool(self, name: str) -> DeployablePool | None:
        return next((p for p in self.pools if p.name == name), None)


@dataclass(frozen=True)
class WorkloadSummary:
    """The comparable figures of a workload (a plan's fingerprint, or today's computed the same way).

    ``quantile_levels``/``total_tokens_quantiles``: inverted-CDF quantiles of total tokens;
    ``token_quantiles``: {"input"|"output"|"total": (p50, p90, p99)}; α, β at the plan's B, γ;
    arrivals (None without timestamps); ``digest``: a hash of the atoms (equal digests ⇒ equal data).
    """

    quantile_levels: tuple[float, ...]
    total_tokens_quantiles: tuple[int, ...]
    token_quantiles: dict[str, tuple[int, ...]]
    mean_total_tokens: float | None
    alpha: float | None
    beta: float | None
    arrival_rate_per_s: float | None
    interarrival_scv: float | None
    digest: str | None = None


@dataclass(frozen=True)
class Tolerances:
    """When ``fleetopt drift`` says "drift": |cost change| > max_cost_change, KS lower bound > max_ks,
    or a pool breaking its cap/SLO at (1 + min_headroom) × today's rate."""

    max_cost_change: float = DEFAULT_MAX_COST_CHANGE
    max_ks: float = DEFAULT_MAX_KS
    min_headroom: float = DEFAULT_MIN_HEADROOM


@dataclass(frozen=True)
class KsEstimate:
    """KS distance between today's exact distribution and a plan's stored quantiles.

    The true distance lies in [lower, upper]; upper − lower ≤ the largest gap between quantile
    levels (``resolution``). ``estimate`` is the midpoint; ``exact`` when the data are identical.
    """

    lower: float
    upper: float
    estimate: float
    resolution: float
    exact: bool = False


class FitProblem(Enum):
    """What breaks when a planned pool meets today's traffic (``render/drift.py`` words it from the
    pool's evaluated figures and the options)."""

    NO_INSTANCES = "no_instances"  # traffic reaches a pool with 0 instances
    SLOTS_OVER_KV = "slots_over_kv"  # more slots than the KV cache holds at the pool's context
    UNSTABLE = "unstable"  # utilization ≥ 1: the queue grows without bound (P99 TTFT = ∞)
    OVER_CAP = "over_cap"  # utilization above ρ_max
    TTFT_OVER_SLO = "ttft_over_slo"  # P99 TTFT above the SLO
    TPOT_OVER_SLO = "tpot_over_slo"  # iteration time above the TPOT SLO


class DriftCheck(Enum):
    """Why a plan has drifted (the stable keys pipelines read)."""

    CONTEXT = "context"  # requests longer than the long pool's context
    FIT = "fit"  # a pool breaks its cap or SLO at today's rate
    HEADROOM = "headroom"  # ... at (1 + min_headroom) × today's rate
    REPLAN = "replan"  # no fleet is feasible today
    COST = "cost"  # re-planning moves the cost beyond the tolerance
    DISTRIBUTION = "distribution"  # the KS lower bound exceeds the tolerance
    # live metrics only (fleetopt drift --prometheus; core.observed.live_findings):
    SLO_MISSED = "slo_missed"  # a pool's share of requests within the TTFT SLO is surely below 99%
    TPOT_MISSED = "tpot_missed"  # ... within the TPOT cap
    UNDERUSED = "underused"  # a pool runs under --min-load of its planned mean rate


@dataclass(frozen=True)
class PoolFit:
    """One planned pool under today's traffic: the evaluated pool, its headroom, what breaks.

    ``utilization_headroom`` = ρ_max − ρ; ``ttft_headroom_s`` = SLO − P99 TTFT (−∞ when unstable);
    ``rate_headroom`` = ρ_max/ρ − 1, the traffic growth the cap still allows (∞ without traffic).
    """

    name: str
    sizing: PoolSizing
    utilization_headroom: float
    ttft_headroom_s: float
    rate_headroom: float
    problems: tuple[FitProblem, ...]

    @property
    def fits(self) -> bool:
        return not self.problems


@dataclass(frozen=True)
class FleetFit:
    """The planned fleet under a given sizing rate: α, β, α' of today's workload and each pool's fit."""

    sizing_rate_per_s: float
    alpha: float | None
    beta: float | None
    short_traffic_fraction: float | None
    pools: tuple[PoolFit, ...]

    @property
    def fits(self) -> bool:
        return all(p.fits for p in self.pools)


@dataclass(frozen=True)
class DriftReason:
    """One reason for a drift verdict: which check failed, for which pool and with which problem
    (the numbers are in the :class:`DriftResult` and the pool's fit; ``render`` words them)."""

    check: DriftCheck
    pool: str | None = None
    problem: FitProblem | None = None


@dataclass(frozen=True)
class DriftResult:
    """Everything ``fleetopt drift`` reports. ``fit``/``headroom_fit``/``replan`` are None when
    today's workload cannot be evaluated against the plan (requests beyond the long context).
    ``sizing_rate_per_s``: today's rate on the plan's basis (the mean × the basis factor)."""

    sizing_rate_per_s: float
    fit: FleetFit | None
    headroom_fit: FleetFit | None
    replan: FleetCandidate | None
    cost_change: float | None
    gpu_change: int | None
    ks: KsEstimate
    reasons: tuple[DriftReason, ...] = field(default_factory=tuple)
    longest_request_tokens: int = 0
    beyond_long_context_fraction: float = 0.0

    @property
    def drifted(self) -> bool:
        return bool(self.reasons)


def ks_against_quantiles(
    workload: Workload, levels: tuple[float, ...], quantiles: tuple[int, ...], *, exact: bool = False
) -> KsEstimate:
    """Bounds on sup_x |F(x) − G(x)|: F today's total-token CDF, G known only by quantiles q_k = G⁻¹(ℓ_k).

    q_k is the smallest x with G(x) ≥ ℓ_k, so G(x) ≥ L(x) = max{ℓ_k : q_k ≤ x} and
    G(x) < U(x) = min{ℓ_k : q_k > x} (0 and 1 past the ends). With d(x) = |F − G|:
    max(F − U, L − F) ≤ d ≤ max(F − L, U − F) pointwise; F, L, U are right-continuous steps
    jumping only at today's atoms and the q_k, so both suprema are maxima over those points.
    The two bounds differ by at most max_k(ℓ_k − ℓ_{k−1}). ``exact`` (identical data) gives 0.
    """
    level = np.asarray(levels, dtype=np.float64)
    q = np.asarray(quantiles, dtype=np.float64)
    if level.size == 0 or level.size != q.size:
        raise ValidationError(
            f"quantile fingerprint: {level.size} levels but {q.size} quantiles; "
            "expected equal, non-empty lists"
        )
    if np.any(np.diff(level) <= 0) or level[0] < 0 or level[-1] > 1:
        raise ValidationError("quantile fingerprint: the levels must increase strictly within [0, 1]")
    if np.any(np.diff(q) < 0):
        raise ValidationError("quantile fingerprint: the quantiles must not decrease")
    gaps = np.diff(np.concatenate(([0.0], level, [1.0])))
    resolution = float(gaps.max())
    if exact:
        return KsEstimate(0.0, 0.0, 0.0, resolution, exact=True)
    totals = workload.total_tokens.astype(np.float64)
    points = np.union1d(totals, q)
    cumulative = np.concatenate(([0.0], np.cumsum(workload.weights)))
    today = cumulative[np.searchsorted(totals, points, side="right")] / cumulative[-1]
    below = np.searchsorted(q, points, side="right")  # number of q_k ≤ x
    lower_cdf = np.where(below > 0, level[np.maximum(below - 1, 0)], 0.0)
    upper_cdf = np.where(below < level.size, level[np.minimum(below, level.size - 1)], 1.0)
    lower = float(max(0.0, np.max(np.maximum(today - upper_cdf, lower_cdf - today))))
    upper = float(min(1.0, np.max(np.maximum(today - lower_cdf, upper_cdf - today))))
    return KsEstimate(lower, upper, 0.5 * (lower + upper), resolution)


def relative_change(new: float | None, old: float | None) -> float | None:
    """(new − old)/old, or None when either is missing or old is 0."""
    if new is None or old is None or old == 0 or not (math.isfinite(new) and math.isfinite(old)):
        return None
    return (new - old) / old


def _pool_problems(pool: PoolSizing, options: PlanOptions) -> list[FitProblem]:
    if pool.arrival_rate_per_s > 0 and pool.instances < 1:
        return [FitProblem.NO_INSTANCES]
    problems = []
    if pool.slots_per_instance > pool.kv_slot_limit:
        problems.append(FitProblem.SLOTS_OVER_KV)
    if pool.utilization >= 1.0:
        return [*problems, FitProblem.UNSTABLE]
    if pool.load_utilization > options.max_utilization:
        problems.append(FitProblem.OVER_CAP)
    if not pool.p99_ttft_s <= options.ttft_slo_s:
        problems.append(FitProblem.TTFT_OVER_SLO)
    if options.tpot_slo_s is not None and pool.instances > 0 and pool.iteration_s > options.tpot_slo_s:
        problems.append(FitProblem.TPOT_OVER_SLO)
    return problems


def _pool_fit(name: str, sizing: PoolSizing, options: PlanOptions) -> PoolFit:
    cap, rho = options.max_utilization, sizing.load_utilization
    unstable = not sizing.utilization < 1.0
    ttft = math.inf if unstable else sizing.p99_ttft_s
    return PoolFit(
        name=name,
        sizing=sizing,
        utilization_headroom=cap - rho,
        ttft_headroom_s=options.ttft_slo_s - ttft if sizing.arrival_rate_per_s > 0 else options.ttft_slo_s,
        rate_headroom=cap / rho - 1.0 if rho > 0 else math.inf,
        problems=tuple(_pool_problems(sizing, options)),
    )


def evaluate_fleet(planner: Planner, fleet: PlannedFleet, sizing_rate_per_s: float) -> FleetFit:
    """The planned pools, unchanged, under ``planner``'s workload at ``sizing_rate_per_s``.

    Traffic splits as the planner splits it (:meth:`Planner.pool_traffic`, the service model's
    rules): under lockstep each pool gets its exact share; under fleet-sim α' = α + p_c·β goes to the
    first pool (a later pool at ≤ 0.01 req/s counts as empty, FACTS §1). Any number of pools.
    """
    o = planner.options
    rate = float(sizing_rate_per_s)

    def evaluate(pool: DeployablePool, pool_rate: float, moments) -> PoolSizing:
        return evaluate_pool(
            arrival_rate_per_s=pool_rate,
            moments=moments,
            hardware=pool.hardware,
            context_tokens=pool.context_tokens,
            service_model=o.service_model,
            instances=pool.instances,
            slots_per_instance=pool.slots_per_instance,
            ttft_slo_s=o.ttft_slo_s,
            max_utilization=o.max_utilization,
            arrival_scv=planner.arrival_scv(pool_rate, moments, pool.hardware, pool.context_tokens, rate),
        )

    traffic = planner.pool_traffic(fleet.routing, sizing_rate_per_s=rate)
    if len(traffic) != len(fleet.pools):
        raise ValidationError(
            f"the plan's routing has {len(traffic)} pool(s) but the plan lists {len(fleet.pools)}"
        )
    pools = tuple(
        _pool_fit(pool.name, evaluate(pool, pool_rate, moments), o)
        for pool, (pool_rate, moments) in zip(fleet.pools, traffic, strict=True)
    )
    if not fleet.routing.boundaries_tokens:
        return FleetFit(rate, None, None, None, pools)
    alpha, beta, first_fraction = planner.routing_fractions(fleet.routing)
    return FleetFit(rate, alpha, beta, first_fraction, pools)


def check_drift(
    today: Workload,
    fleet: PlannedFleet,
    options: PlanOptions,
    planned: WorkloadSummary,
    current: WorkloadSummary,
    tolerances: Tolerances = Tolerances(),
) -> DriftResult:
    """Fit, re-plan and shift of ``today`` against a plan (``options`` carry today's rate).

    The one core call behind ``fleetopt drift``. Reasons for a drift verdict: a pool breaking its
    cap or SLO at today's rate (``fit``) or at (1 + min_headroom)× (``headroom``), a re-planned cost
    more than ``max_cost_change`` away from the planned one (``cost``), no feasible fleet today
    (``replan``), a KS lower bound above ``max_ks`` (``distribution``), requests longer than the
    long pool's context (``context``).
    """
    same_data = planned.digest is not None and planned.digest == current.digest
    ks = ks_against_quantiles(today, planned.quantile_levels, planned.total_tokens_quantiles, exact=same_data)
    reasons: list[DriftReason] = []
    rate = options.sizing_rate_per_s
    longest = today.max_total_tokens
    fit = headroom_fit = replan = None
    cost_change = gpu_change = None
    beyond = 0.0
    if longest > options.long_context_tokens:
        beyond = 1.0 - today.cdf_at(options.long_context_tokens)
        reasons.append(DriftReason(DriftCheck.CONTEXT))
    else:
        planner = Planner(today, tuple(p.hardware for p in fleet.pools), options)
        fit = evaluate_fleet(planner, fleet, rate)
        for pool in fit.pools:
            reasons += [DriftReason(DriftCheck.FIT, pool.name, problem) for problem in pool.problems]
        if tolerances.min_headroom > 0 and fit.fits:
            headroom_fit = evaluate_fleet(planner, fleet, rate * (1.0 + tolerances.min_headroom))
            for pool in headroom_fit.pools:
                reasons += [DriftReason(DriftCheck.HEADROOM, pool.name, problem) for problem in pool.problems]
        replan = planner.plan().best
        if replan is None:
            reasons.append(DriftReason(DriftCheck.REPLAN))
        else:
            cost_change = relative_change(replan.cost_per_hour_usd, fleet.cost_per_hour_usd)
            gpu_change = replan.total_gpus - fleet.total_gpus
            if cost_change is not None and abs(cost_change) > tolerances.max_cost_change:
                reasons.append(DriftReason(DriftCheck.COST))
    if ks.lower > tolerances.max_ks:
        reasons.append(DriftReason(DriftCheck.DISTRIBUTION))
    return DriftResult(
        sizing_rate_per_s=rate,
        fit=fit,
        headroom_fit=headroom_fit,
        replan=replan,
        cost_change=cost_change,
        gpu_change=gpu_change,
        ks=ks,
        reasons=tuple(reasons),
        longest_request_tokens=longest,
        beyond_long_context_fraction=beyond,
    )
