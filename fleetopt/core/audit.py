"""The workload audit (``fleetopt audit --cdf``): the papers' savings estimates against the planner.

For one workload and hardware, at a boundary B (the pool-routing optimum unless given) and a
Compress-and-Route band γ (the cheapest γ at that B unless given), every estimate is computed
from the planner's own statistics and service model (:class:`fleetopt.core.planner.Planner`):

- α = F(B); per-instance throughputs μ = s / E[S] (:func:`fleetopt.core.service.slot_service_times`)
  of the homogeneous pool (μ_homo, full mix), the short pool (μ_s, L ≤ B) and the long pool on
  the traffic that really reaches it (μ_l, L > B), each at the slot count the planner chose
  (or at the KV limit where the planner has no feasible pool);
- ρ = μ_s / μ_homo (the throughput gain) next to the slot "cliff ratio" n_max(B)/n_max(long)
  that the papers use in its place (FACTS §2 item 1);
- the closed form α(1 − 1/ρ) (pool-routing Eq. 7), also with the cliff ratio as ρ;
- the corrected fleet formula G = αλ/μ_s + (1 − α)λ/μ_l (pool-routing Eq. 8), sized at the
  planner's utilization cap ρ_max (i.e. divided by ρ_max, the paper's headroom factors);
- the C&R increment β·p_c·(1 − 1/ρ) (FleetOpt Eq. 14) and Eq. 8 with the planner's
  recalibrated post-compression μ's;
- the planner's answers: pool routing at B, C&R at (B, γ), and the best plan overall.

Identity (hand-derivable, tested): with G_homo = λ/(μ_homo·ρ_max),
Eq. 8 savings = α(1 − 1/ρ) + (1 − α)(1 − μ_homo/μ_l), so the closed form exceeds Eq. 8 exactly
when μ_l < μ_homo (the routed long requests are slower than the average request).

Units: req/s, seconds, tokens, USD; "instances" are serving instances, GPUs = instances × GPUs
per instance of the pool's hardware.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from fleetopt.core.planner import (
    FleetCandidate,
    FleetPlan,
    Planner,
    PlanOptions,
    default_b_short_candidates,
)
from fleetopt.core.poolstats import PoolMoments
from fleetopt.core.savings import (
    EstimateKind,
    SavingsEstimate,
    ceil_instances,
    closed_form_savings_fraction,
    compress_and_route_increment,
    compressed_short_fraction,
    over_prediction_factor,
    rate_sensitivity_rows,
    threshold_sensitivity_rows,
)
from fleetopt.core.service import PoolHardware, get_service_model, slot_service_times
from fleetopt.core.sizing import PoolSizing, evaluate_pool
from fleetopt.core.workload import Workload
from fleetopt.core.workload_stats import archetype_statistics
from fleetopt.defaults import HOURS_PER_YEAR
from fleetopt.errors import ValidationError

#: Default arrival-rate multipliers of the rate sweep (FleetOpt Table 6 spans 100–2,000 req/s).
DEFAULT_RATE_MULTIPLIERS = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)

#: A lever (moving B, adding C&R) is worth naming when it saves at least this share of the
#: homogeneous fleet's cost.
LEVER_MIN_GAIN_FRACTION = 0.02

#: Two estimates whose savings differ by less than this are ranked "≥" rather than ">".
ORDER_TIE_FRACTION = 0.01

#: The workload audit's estimates (short names for :class:`fleetopt.core.savings.EstimateKind`).
HOMOGENEOUS = EstimateKind.PLANNER_HOMOGENEOUS
CURRENT = EstimateKind.CURRENT
CLOSED_FORM = EstimateKind.CLOSED_FORM
CLOSED_FORM_CLIFF = EstimateKind.CLOSED_FORM_CLIFF
EQ8 = EstimateKind.EQ8
CLOSED_FORM_CR = EstimateKind.CLOSED_FORM_CR
EQ8_CR = EstimateKind.EQ8_CR
PLANNER_PR = EstimateKind.PLANNER_PR
PLANNER_CR = EstimateKind.PLANNER_CR
PLANNER_BEST = EstimateKind.PLANNER_BEST


class HomogeneousInfeasible(ValidationError):
    """The audit's baseline, the homogeneous fleet, breaks the SLO or the cap; ``fleet`` says why
    (its pools' typed problems; :mod:`fleetopt.api` words the error)."""

    def __init__(self, fleet: FleetCandidate):
        super().__init__("the homogeneous fleet is infeasible: the audit needs it as its baseline")
        self.fleet = fleet


class SlotsBasis(str, enum.Enum):
    """At which slot counts the throughputs were taken."""

    PLANNER = "planner"  # each pool at the slot count the planner chose
    KV_LIMIT = "kv-limit"  # each pool at its KV limit (the planner has no feasible pool there)


class Lever(str, enum.Enum):
    """The lever the planner's costs favour at the audited boundary."""

    RAISE_B = "raise B"
    LOWER_B = "lower B"
    ADD_CR = "add C&R"
    NEITHER = "neither"


class WorkloadFinding(str, enum.Enum):
    """A reason the workload audit's estimates differ (worded by ``fleetopt.render.audit``)."""

    LONG_POOL_SPEED = "long-pool-speed"  # μ_l ≠ μ_homo: the closed form's gap (1 − α)(μ_homo/μ_l − 1)
    NO_LONG_TRAFFIC = "no-long-traffic"  # every request fits below B: Eq. 7 = Eq. 8
    RHO_VS_CLIFF = "rho-vs-cliff"  # ρ is a throughput ratio, the cliff ratio counts slots
    PLANNER_OVER_EQ8 = "planner-over-eq8"  # whole instances and the SLO on top of Eq. 8's fluid limit
    PLANNER_INFEASIBLE = "planner-infeasible"  # no feasible pool-routing fleet at this B
    CR_RECALIBRATED = "cr-recalibrated"  # the closed-form C&R increment vs the planner's


class AuditNote(str, enum.Enum):
    """Something about the workload audit's inputs worth telling (worded by ``fleetopt.render.audit``)."""

    NO_FEASIBLE_BOUNDARY = "no-feasible-boundary"  # auditing the first candidate B
    KV_LIMIT_THROUGHPUTS = "kv-limit-throughputs"  # μ's at the KV limits, not the planner's slots
    CURRENT_PARTIAL_INSTANCE = "current-partial-instance"  # current GPUs not a whole number of instances


@dataclass(frozen=True)
class WorkloadAuditOptions:
    """What the workload audit is asked, beyond the planner's options (tokens, GPUs, req/s).

    Attributes:
        plan: the planner's options (rate, SLO, B candidates, γ grid, p_c, service model, cap).
        b_short_tokens: the boundary audited in detail; None: the pool-routing optimum.
        gamma: the C&R band of the increment; None: the cheapest γ of the grid at that B.
        current_gpus: the fleet running today (GPUs), assumed homogeneous; None: not given.
        current_context_tokens: that fleet's context window; None: the long context.
        rates_per_s: arrival rates of the rate sweep; None: DEFAULT_RATE_MULTIPLIERS × the rate;
            an empty tuple skips the sweep.
        sweep_thresholds: compute the per-B rows (savings versus B_short).
    """

    plan: PlanOptions
    b_short_tokens: int | None = None
    gamma: float | None = None
    current_gpus: float | None = None
    current_context_tokens: int | None = None
    rates_per_s: tuple[float, ...] | None = None
    sweep_thresholds: bool = True


@dataclass(frozen=True)
class Throughputs:
    """Per-instance throughputs (req/s) of the three pools at one boundary, and how they were taken.

    ``slots_basis`` is :class:`SlotsBasis`: ``planner`` (each pool at the slot count the planner
    chose) or ``kv-limit`` (used where the planner has no feasible pool). The ``*_kv``
    fields are always at the KV limit. ``long_per_s`` is None when no traffic is long.
    """

    homogeneous_per_s: float
    short_per_s: float
    long_per_s: float | None
    homogeneous_slots: int
    short_slots: int
    long_slots: int | None
    slots_basis: SlotsBasis
    homogeneous_kv_per_s: float
    short_kv_per_s: float
    long_kv_per_s: float | None
    homogeneous_kv_slots: int
    short_kv_slots: int

    @property
    def throughput_ratio(self) -> float:
        """ρ = μ_s / μ_homo at ``slots_basis``."""
        return self.short_per_s / self.homogeneous_per_s

    @property
    def throughput_ratio_kv(self) -> float:
        """ρ with every pool at its KV limit."""
        return self.short_kv_per_s / self.homogeneous_kv_per_s

    @property
    def cliff_ratio(self) -> float:
        """The papers' cliff ratio n_max(short)/n_max(long): slots, not throughput."""
        return self.short_kv_slots / self.homogeneous_kv_slots


@dataclass(frozen=True)
class LeverAdvice:
    """Which lever the numbers favour at the audited B (gains are fractions of the homogeneous cost).

    Attributes:
        lever: the advice.
        move_b_gain_fraction: (pool routing at B − pool routing at the best B, γ = 1) / homogeneous.
        best_b_short_tokens: that best B (None: no B gives a feasible pool-routing fleet).
        compress_gain_fraction: (pool routing at B − the cheapest γ at B) / homogeneous.
        compress_gain_at_best_b_fraction: the same at the best B.
        threshold_fraction: the least gain worth a lever (LEVER_MIN_GAIN_FRACTION).
        b_short_tokens: the audited B.
        routed_feasible: pool routing at B is feasible (else ``routed_fleet`` is that infeasible fleet,
            whose pools' problems say why).
        best_savings_fraction: pool routing at the best B vs the homogeneous cost.
        also_other_lever: the lever not advised also clears the threshold.
    """

    lever: Lever
    move_b_gain_fraction: float | None
    best_b_short_tokens: int | None
    compress_gain_fraction: float | None
    compress_gain_at_best_b_fraction: float | None
    threshold_fraction: float
    b_short_tokens: int
    routed_feasible: bool = True
    routed_fleet: FleetCandidate | None = None
    best_savings_fraction: float | None = None
    also_other_lever: bool = False


@dataclass(frozen=True)
class RankedEstimate:
    """One of the three headline estimates in the order of their stated savings, largest first."""

    kind: EstimateKind
    savings_fraction: float
    close_to_previous: bool  # within ORDER_TIE_FRACTION of the one ranked above


@dataclass(frozen=True)
class RateSweepScope:
    """How the rate sweep was restricted: B held fixed, and the rates left out (req/s)."""

    routed_b_short_tokens: int | None
    best_b_short_tokens: int | None
    skipped_rates_per_s: tuple[float, ...]


@dataclass(frozen=True)
class CurrentFleet:
    """The fleet running today as the model sees it: a homogeneous pool under the workload."""

    gpus: float
    instances: int
    context_tokens: int
    slots_per_instance: int
    sizing: PoolSizing


@dataclass(frozen=True)
class WorkloadAudit:
    """The result of :func:`audit_workload`.

    Attributes:
        options: the options (with the rate resolved).
        b_short_tokens, gamma: the audited boundary and C&R band.
        alpha, beta: F(B) and F(γB) − F(B).
        compressibility: p_c.
        throughputs: μ_homo, μ_s, μ_l and how they were taken.
        estimates: every estimate, baselines first.
        order: the three estimates (closed form, Eq. 8, planner), largest stated savings first.
        findings: why they differ, in the order they are told.
        archetype: :func:`fleetopt.core.workload_stats.archetype_statistics` at B.
        lever: the lever advice.
        current: the current fleet evaluated under the workload, or None.
        threshold_rows: savings versus B_short (one dict per feasible candidate).
        thresholds: every candidate B with its figures (including infeasible ones).
        rate_rows: fleet size versus arrival rate.
        rate_sweep: how the rate sweep was restricted (None: no sweep).
        plan: the planner's full plan at the audited rate.
        notes: the audit's own notes.
        routed_cell, compressed_cell: the planner's cells (B, 1) and (B, γ).
        compressed_short_fraction: α' = α + β·p_c.
        compress_increment_fraction: the closed-form C&R increment β·p_c·(1 − 1/ρ).
        planner_compress_increment_fraction: planner C&R savings − planner pool-routing savings.
        long_pool_gap_fraction: (1 − α)(μ_homo/μ_l − 1), Eq. 8 − closed form (None: no long pool).
        planner_extra_short_instances, planner_extra_long_instances: the planner's pools minus
            Eq. 8's fractional ones (None unless both are available).
    """

    options: WorkloadAuditOptions
    b_short_tokens: int
    gamma: float
    alpha: float
    beta: float
    compressibility: float
    throughputs: Throughputs
    estimates: tuple[SavingsEstimate, ...]
    order: tuple[RankedEstimate, ...]
    findings: tuple[WorkloadFinding, ...]
    archetype: dict
    lever: LeverAdvice
    current: CurrentFleet | None
    threshold_rows: tuple[dict, ...]
    thresholds: tuple[dict, ...]
    rate_rows: tuple[dict, ...]
    rate_sweep: RateSweepScope | None
    plan: FleetPlan
    notes: tuple[AuditNote, ...]
    routed_cell: FleetCandidate
    compressed_cell: FleetCandidate
    compressed_short_fraction: float
    compress_increment_fraction: float
    planner_compress_increment_fraction: float | None
    long_pool_gap_fraction: float | None
    planner_extra_short_instances: float | None
    planner_extra_long_instances: float | None

    def estimate(self, kind: EstimateKind | str) -> SavingsEstimate:
        """The estimate of ``kind`` (or with that label); KeyError if absent."""
        for estimate in self.estimates:
            if estimate.kind == kind:
                return estimate
        raise KeyError(kind)


# --- throughputs --------------------------------------------------------------------------------


def pool_throughput_per_s(
    moments: PoolMoments, hardware: PoolHardware, slots: int, service_model: str
) -> float:
    """μ = s / E[S]: requests per second one instance of ``slots`` slots completes on ``moments``."""
    times = slot_service_times(moments, hardware, np.array([slots]), get_service_model(service_model))
    return float(slots / times.mean_service_s[0])


def _usable(pool: PoolSizing | None) -> bool:
    return pool is not None and pool.feasible and pool.instances > 0 and pool.arrival_rate_per_s > 0


def boundary_throughputs(planner: Planner, b_short: int) -> Throughputs:
    """μ_homo, μ_s and μ_l (routed, γ = 1) at boundary ``b_short``, at the planner's slots or the KV limit."""
    o = planner.options
    short_hw, long_hw = planner.hardware_of(2, 0), planner.hardware_of(2, 1)
    homogeneous = planner.homogeneous()
    cell = planner.candidate(b_short, 1.0)
    (_, short_moments), (_, long_moments) = planner.pool_traffic(planner.routing(b_short, 1.0))
    full_moments = planner.stats(long_hw).range_moments(-1, math.inf, o.quantile)
    homo_kv = long_hw.max_slots(o.long_context_tokens)
    short_kv = short_hw.max_slots(b_short)
    if homo_kv < 1 or short_kv < 1:
        raise ValidationError(
            f"b-short {b_short:,} / long context {o.long_context_tokens:,}: a sequence does not fit in an "
            "instance's KV cache, so no throughput can be measured"
        )
    has_long = not long_moments.is_empty and cell.long.arrival_rate_per_s > 0
    mu_homo_kv = pool_throughput_per_s(full_moments, long_hw, homo_kv, o.service_model)
    mu_short_kv = pool_throughput_per_s(short_moments, short_hw, short_kv, o.service_model)
    mu_long_kv = pool_throughput_per_s(long_moments, long_hw, homo_kv, o.service_model) if has_long else None
    pools = [homogeneous.long, cell.short] + ([cell.long] if has_long else [])
    if all(_usable(p) for p in pools):
        return Throughputs(
            homogeneous_per_s=homogeneous.long.service_rate_per_instance_per_s,
            short_per_s=cell.short.service_rate_per_instance_per_s,
            long_per_s=cell.long.service_rate_per_instance_per_s if has_long else None,
            homogeneous_slots=homogeneous.long.slots_per_instance,
            short_slots=cell.short.slots_per_instance,
            long_slots=cell.long.slots_per_instance if has_long else None,
            slots_basis=SlotsBasis.PLANNER,
            homogeneous_kv_per_s=mu_homo_kv, short_kv_per_s=mu_short_kv, long_kv_per_s=mu_long_kv,
            homogeneous_kv_slots=homo_kv, short_kv_slots=short_kv,
        )  # fmt: skip
    return Throughputs(
        homogeneous_per_s=mu_homo_kv, short_per_s=mu_short_kv, long_per_s=mu_long_kv,
        homogeneous_slots=homo_kv, short_slots=short_kv, long_slots=homo_kv if has_long else None,
        slots_basis=SlotsBasis.KV_LIMIT,
        homogeneous_kv_per_s=mu_homo_kv, short_kv_per_s=mu_short_kv, long_kv_per_s=mu_long_kv,
        homogeneous_kv_slots=homo_kv, short_kv_slots=short_kv,
    )  # fmt: skip


def eq8_instances(
    arrival_rate_per_s: float,
    short_fraction: float,
    short_throughput_per_s: float,
    long_throughput_per_s: float | None,
    max_utilization: float,
) -> tuple[float, float]:
    """(short, long) instances of Eq. 8 at utilization ρ_max: αλ/(μ_s·ρ_max), (1 − α)λ/(μ_l·ρ_max)."""
    short = short_fraction * arrival_rate_per_s / short_throughput_per_s / max_utilization
    long_rate = (1.0 - short_fraction) * arrival_rate_per_s
    if long_rate <= 0.0 or long_throughput_per_s is None:
        return short, 0.0
    return short, long_rate / long_throughput_per_s / max_utilization


# --- the audit ------------------------------------------------------------------------------------


def _cheapest_gamma(planner: Planner, b_short: int, gammas: Sequence[float]) -> FleetCandidate | None:
    cells = [planner.candidate(b_short, g) for g in gammas]
    feasible = [c for c in cells if c.feasible]
    if not feasible:
        return None
    return min(feasible, key=lambda c: (round(c.cost_per_hour_usd, 9), c.total_gpus, c.gamma))


def _clip_fraction(value: float) -> float:
    """A CDF value summed in floating point (e.g. 1.0000000000000835) clipped into [0, 1]."""
    return min(1.0, max(0.0, value))


class _Pricer:
    """GPUs and $/yr of a two-pool fleet on the audit's hardware, and comparisons with the baselines."""

    def __init__(self, planner: Planner, homogeneous: FleetCandidate, current_gpus: float | None):
        self.short_hw, self.long_hw = planner.hardware_of(2, 0), planner.hardware_of(2, 1)
        self.homo_gpus = float(homogeneous.total_gpus)
        self.homo_cost = homogeneous.cost_per_year_usd
        self.current_gpus = current_gpus
        self.current_cost = (
            None if current_gpus is None else current_gpus * self.long_hw.gpu_hour_usd * HOURS_PER_YEAR
        )

    def two_pools(self, short: float, long: float) -> tuple[float, float]:
        gpus = short * self.short_hw.gpus_per_instance + long * self.long_hw.gpus_per_instance
        cost = (
            short * self.short_hw.instance_hour_usd + long * self.long_hw.instance_hour_usd
        ) * HOURS_PER_YEAR
        return gpus, cost

    def compare(self, gpus: float | None, cost: float | None) -> tuple[float | None, float | None]:
        """(savings vs current, saved $/yr vs the baseline)."""
        if gpus is None or cost is None or not math.isfinite(cost):
            return None, None
        if self.current_gpus is not None and self.current_cost is not None:
            return 1.0 - gpus / self.current_gpus, self.current_cost - cost
        return None, self.homo_cost - cost


def _planner_estimate(
    kind: EstimateKind, cell: FleetCandidate, pricer: _Pricer, homo_cost: float
) -> SavingsEstimate:
    short = None if cell.short is None else float(cell.short.instances)
    long = float(cell.long.instances)
    if not cell.feasible:
        return SavingsEstimate(kind, None, short, long, feasible=False, infeasible=cell)
    cost = cell.cost_per_year_usd
    versus_current, saved = pricer.compare(float(cell.total_gpus), cost)
    return SavingsEstimate(
        kind, float(cell.total_instances), short, long, whole_instances=cell.total_instances,
        gpus=float(cell.total_gpus), cost_per_year_usd=cost, savings_fraction=1.0 - cost / homo_cost,
        savings_vs_current=versus_current, saved_usd_per_year=saved,
    )  # fmt: skip


def _formula_estimate(
    kind: EstimateKind, fraction: float, pricer: _Pricer, homogeneous: FleetCandidate
) -> SavingsEstimate:
    instances = homogeneous.total_instances * (1.0 - fraction)
    gpus = pricer.homo_gpus * (1.0 - fraction)
    cost = pricer.homo_cost * (1.0 - fraction)
    versus_current, saved = pricer.compare(gpus, cost)
    return SavingsEstimate(
        kind, instances, gpus=gpus, cost_per_year_usd=cost, savings_fraction=fraction,
        savings_vs_current=versus_current, saved_usd_per_year=saved,
    )  # fmt: skip


def _eq8_estimate(
    kind: EstimateKind,
    rate: float,
    short_fraction: float,
    mu_short: float,
    mu_long: float | None,
    mu_homo: float,
    cap: float,
    pricer: _Pricer,
) -> SavingsEstimate:
    short, long = eq8_instances(rate, short_fraction, mu_short, mu_long, cap)
    whole_short, whole_long = ceil_instances(short), ceil_instances(long)
    gpus, cost = pricer.two_pools(whole_short, whole_long)
    fluid_homogeneous = rate / mu_homo / cap
    versus_current, saved = pricer.compare(gpus, cost)
    return SavingsEstimate(
        kind, short + long, short, long, whole_instances=whole_short + whole_long, gpus=gpus,
        cost_per_year_usd=cost, savings_fraction=1.0 - (short + long) / fluid_homogeneous,
        savings_vs_current=versus_current, saved_usd_per_year=saved,
    )  # fmt: skip


def _with_reference(estimate: SavingsEstimate, reference: SavingsEstimate) -> SavingsEstimate:
    factor = None
    if estimate.savings_fraction is not None and reference.savings_fraction is not None:
        factor = over_prediction_factor(estimate.savings_fraction, reference.savings_fraction)
    return replace(estimate, reference=reference.kind, over_prediction_factor=factor)


def _ranked(estimates: Sequence[SavingsEstimate]) -> tuple[RankedEstimate, ...]:
    """By stated savings, largest first; ties are differences under ORDER_TIE_FRACTION."""
    ranked = sorted(
        (e for e in estimates if e.savings_fraction is not None), key=lambda e: -e.savings_fraction
    )
    return tuple(
        RankedEstimate(
            e.kind,
            e.savings_fraction,
            i > 0 and ranked[i - 1].savings_fraction - e.savings_fraction < ORDER_TIE_FRACTION,
        )
        for i, e in enumerate(ranked)
    )


def _lever(
    planner: Planner,
    b_short: int,
    candidates: Sequence[int],
    gammas: Sequence[float],
    homo_cost: float,
) -> LeverAdvice:
    """Compare moving B (at γ = 1) with adding C&R (the cheapest γ), as shares of the homogeneous cost."""
    routed = {b: planner.candidate(b, 1.0) for b in sorted(set(candidates) | {b_short})}
    feasible = {b: c for b, c in routed.items() if c.feasible}
    threshold = LEVER_MIN_GAIN_FRACTION
    if not feasible:
        return LeverAdvice(
            Lever.NEITHER, None, None, None, None, threshold, b_short,
            routed_feasible=False, routed_fleet=routed[b_short],
        )  # fmt: skip
    best_b = min(feasible, key=lambda b: (round(feasible[b].cost_per_hour_usd, 9), feasible[b].total_gpus, b))
    best_cost = feasible[best_b].cost_per_year_usd
    best_savings = 1.0 - best_cost / homo_cost

    def compress_gain(b: int) -> float | None:
        if b not in feasible:
            return None
        cheapest = _cheapest_gamma(planner, b, gammas)
        if cheapest is None:
            return None
        return (feasible[b].cost_per_year_usd - cheapest.cost_per_year_usd) / homo_cost

    at_b, at_best = compress_gain(b_short), compress_gain(best_b)
    direction = Lever.RAISE_B if best_b > b_short else Lever.LOWER_B
    if b_short not in feasible:
        return LeverAdvice(
            direction, None, best_b, None, at_best, threshold, b_short,
            routed_feasible=False, routed_fleet=routed[b_short], best_savings_fraction=best_savings,
        )  # fmt: skip
    move = (feasible[b_short].cost_per_year_usd - best_cost) / homo_cost
    compress = at_b or 0.0
    if max(move, compress) < threshold:
        lever, also = Lever.NEITHER, False
    elif move > compress:
        lever, also = direction, compress >= threshold
    else:
        lever, also = Lever.ADD_CR, move >= threshold
    return LeverAdvice(
        lever, move, best_b, at_b, at_best, threshold, b_short,
        best_savings_fraction=best_savings, also_other_lever=also,
    )  # fmt: skip


def _evaluate_current(planner: Planner, current_gpus: float, context_tokens: int | None) -> CurrentFleet:
    o = planner.options
    hw = planner.hardware_of(1, 0)
    context = o.long_context_tokens if context_tokens is None else int(context_tokens)
    longest = planner.workload.max_total_tokens
    if context < longest:
        raise ValidationError(
            f"current context: {context:,} tokens is shorter than the longest request ({longest:,} tokens); "
            "the current fleet must hold every request (raise --current-context)"
        )
    slots = hw.max_slots(context)
    if slots < 1:
        raise ValidationError(
            f"current context: one {context:,}-token sequence does not fit in an instance's KV cache "
            f"({hw.kv_capacity_tokens:,} tokens)"
        )
    instances = int(current_gpus // hw.gpus_per_instance)
    moments = planner.stats(hw).range_moments(-1, math.inf, o.quantile)
    sizing = evaluate_pool(
        arrival_rate_per_s=o.sizing_rate_per_s,
        moments=moments,
        hardware=hw,
        context_tokens=context,
        service_model=o.service_model,
        instances=instances,
        slots_per_instance=slots,
        ttft_slo_s=o.ttft_slo_s,
        max_utilization=o.max_utilization,
    )
    return CurrentFleet(float(current_gpus), instances, context, slots, sizing)


def _threshold_figures(
    planner: Planner, candidates: Sequence[int], gammas: Sequence[float], homogeneous: FleetCandidate
) -> tuple[list[dict], list[dict]]:
    """Per-B figures (every candidate) and the sensitivity rows of the feasible ones."""
    o = planner.options
    homo_cost = homogeneous.cost_per_year_usd
    figures, feasible_rows = [], []
    for b in sorted(set(candidates)):
        cell = planner.candidate(b, 1.0)
        mu = boundary_throughputs(planner, b)
        alpha = _clip_fraction(cell.alpha)
        closed = closed_form_savings_fraction(alpha, mu.throughput_ratio)
        short, long = eq8_instances(o.sizing_rate_per_s, alpha, mu.short_per_s, mu.long_per_s, 1.0)
        eq8 = 1.0 - (short + long) * mu.homogeneous_per_s / o.sizing_rate_per_s
        cheapest = _cheapest_gamma(planner, b, gammas)
        figure = {
            "b_short_tokens": int(b),
            "alpha": alpha,
            "throughput_ratio": mu.throughput_ratio,
            "cliff_ratio": mu.cliff_ratio,
            "slots_basis": mu.slots_basis,
            "short_throughput_per_s": mu.short_per_s,
            "long_throughput_per_s": mu.long_per_s,
            "closed_form_savings_fraction": closed,
            "eq8_savings_fraction": eq8,
            "routed_feasible": cell.feasible,
            "routed_fleet": None if cell.feasible else cell,
            "routed_gpus": cell.total_gpus if cell.feasible else None,
            "routed_savings_fraction": (1.0 - cell.cost_per_year_usd / homo_cost) if cell.feasible else None,
            "best_gamma": None if cheapest is None else cheapest.gamma,
            "compressed_gpus": None if cheapest is None else cheapest.total_gpus,
            "compressed_savings_fraction": (
                None if cheapest is None else 1.0 - cheapest.cost_per_year_usd / homo_cost
            ),
        }
        figures.append(figure)
        if cell.feasible and cheapest is not None:
            feasible_rows.append(figure)
    rows = []
    if feasible_rows:
        rows = threshold_sensitivity_rows(
            [f["b_short_tokens"] for f in feasible_rows],
            [f["alpha"] for f in feasible_rows],
            [float(f["routed_gpus"]) for f in feasible_rows],
            float(homogeneous.total_gpus),
            closed_form_savings=[f["closed_form_savings_fraction"] for f in feasible_rows],
            eq8_savings=[f["eq8_savings_fraction"] for f in feasible_rows],
            compressed_gpus=[float(f["compressed_gpus"]) for f in feasible_rows],
        )
    return figures, rows


def _rate_sweep(
    workload: Workload,
    planner: Planner,
    rates: Sequence[float],
    routed_b: int | None,
    best: FleetCandidate | None,
    gammas: Sequence[float],
) -> tuple[list[dict], RateSweepScope]:
    """Homogeneous, pool routing at the audited rate's best B (γ = 1), and the best γ at the best plan's B."""
    homogeneous, routed, compressed, kept, skipped = [], [], [], [], []
    best_b = None if best is None else best.b_short_tokens
    for rate in rates:
        options = replace(planner.options, sizing_rate_per_s=float(rate), mean_rate_per_s=None)
        sweep = Planner(workload, planner.hardware, options)
        homo = sweep.homogeneous()
        cell = sweep.candidate(routed_b, 1.0) if routed_b is not None else homo
        cheapest = _cheapest_gamma(sweep, best_b, gammas) if best_b is not None else homo
        if not (homo.feasible and cell.feasible and cheapest is not None and cheapest.feasible):
            skipped.append(rate)
            continue
        kept.append(float(rate))
        homogeneous.append(float(homo.total_gpus))
        routed.append(float(cell.total_gpus))
        compressed.append(float(min(cheapest.total_gpus, cell.total_gpus)))
    rows = rate_sensitivity_rows(kept, homogeneous, routed, compressed) if kept else []
    return rows, RateSweepScope(routed_b, best_b, tuple(skipped))


def audit_workload(
    workload: Workload,
    hardware: tuple[PoolHardware, ...],
    options: WorkloadAuditOptions,
) -> WorkloadAudit:
    """Every savings estimate for ``workload``, computed with the planner's statistics, against the planner.

    Raises InfeasibleError-free: an infeasible planner fleet is reported (``feasible=False``) not
    raised; ValidationError for inputs outside the model (a B outside (0, long context), a γ < 1,
    a current fleet shorter than the longest request).
    """
    o = options.plan
    extra = () if options.b_short_tokens is None else (int(options.b_short_tokens),)
    if options.gamma is not None and not (options.gamma >= 1.0 and math.isfinite(options.gamma)):
        raise ValidationError(f"gamma: {options.gamma!r} must be ≥ 1 (the band (B, γB] lies above B)")
    if options.current_gpus is not None and not options.current_gpus > 0:
        raise ValidationError(f"current gpus: {options.current_gpus!r} must be > 0")
    candidates = tuple(o.b_short_candidates or default_b_short_candidates(workload, o.long_context_tokens))
    candidates = tuple(sorted(set(candidates) | set(extra)))
    plan_options = replace(o, b_short_candidates=candidates)
    planner = Planner(workload, hardware, plan_options)
    plan = planner.plan()
    homogeneous = plan.homogeneous
    if not homogeneous.feasible:
        raise HomogeneousInfeasible(homogeneous)
    homo_cost = homogeneous.cost_per_year_usd
    notes: list[AuditNote] = []

    if options.b_short_tokens is not None:
        b_short = int(options.b_short_tokens)
    elif plan.pool_routing is not None:
        b_short = int(plan.pool_routing.b_short_tokens)
    else:
        b_short = candidates[0]
        notes.append(AuditNote.NO_FEASIBLE_BOUNDARY)
    routed_cell = planner.candidate(b_short, 1.0)
    if options.gamma is not None:
        gamma = float(options.gamma)
    else:
        cheapest = _cheapest_gamma(planner, b_short, o.gammas)
        gamma = cheapest.gamma if cheapest is not None else max(o.gammas)
    cr_cell = planner.candidate(b_short, gamma)
    alpha = _clip_fraction(routed_cell.alpha)
    beta = min(_clip_fraction(cr_cell.beta), 1.0 - alpha)
    p_c = o.compressibility
    mu = boundary_throughputs(planner, b_short)
    if mu.slots_basis is SlotsBasis.KV_LIMIT:
        notes.append(AuditNote.KV_LIMIT_THROUGHPUTS)
    current = None
    if options.current_gpus is not None:
        current = _evaluate_current(planner, options.current_gpus, options.current_context_tokens)
        if current.instances * planner.hardware_of(1, 0).gpus_per_instance != current.gpus:
            notes.append(AuditNote.CURRENT_PARTIAL_INSTANCE)
    pricer = _Pricer(planner, homogeneous, options.current_gpus)
    alpha_compressed = compressed_short_fraction(alpha, beta, p_c)
    increment = compress_and_route_increment(beta, p_c, mu.throughput_ratio)
    rows = _estimates(
        planner, plan, mu, alpha, alpha_compressed, routed_cell, cr_cell, pricer, current, b_short, gamma
    )
    by_kind = {r.kind: r for r in rows}
    planner_pr, planner_cr, eq8 = by_kind[PLANNER_PR], by_kind[PLANNER_CR], by_kind[EQ8]
    real_increment = None
    if planner_cr.savings_fraction is not None and planner_pr.savings_fraction is not None:
        real_increment = planner_cr.savings_fraction - planner_pr.savings_fraction
    gap = None if mu.long_per_s is None else (1.0 - alpha) * (mu.homogeneous_per_s / mu.long_per_s - 1.0)
    extra_short = extra_long = None
    if planner_pr.feasible and eq8.short_instances is not None and routed_cell.short is not None:
        extra_short = routed_cell.short.instances - eq8.short_instances
        extra_long = routed_cell.long.instances - (eq8.long_instances or 0.0)

    figures, threshold_rows = ([], [])
    if options.sweep_thresholds:
        figures, threshold_rows = _threshold_figures(planner, candidates, o.gammas, homogeneous)
    rate_rows, rate_sweep = _rate_rows(workload, planner, plan, options.rates_per_s)
    return WorkloadAudit(
        options=replace(options, plan=plan_options),
        b_short_tokens=b_short,
        gamma=gamma,
        alpha=alpha,
        beta=beta,
        compressibility=p_c,
        throughputs=mu,
        estimates=tuple(rows),
        order=_ranked([by_kind[k] for k in (CLOSED_FORM, EQ8, PLANNER_PR)]),
        findings=_findings(mu, planner_pr, planner_cr, extra_short),
        archetype=archetype_statistics(workload, b_short),
        lever=_lever(planner, b_short, candidates, o.gammas, homo_cost),
        current=current,
        threshold_rows=tuple(threshold_rows),
        thresholds=tuple(figures),
        rate_rows=tuple(rate_rows),
        rate_sweep=rate_sweep,
        plan=plan,
        notes=tuple(notes),
        routed_cell=routed_cell,
        compressed_cell=cr_cell,
        compressed_short_fraction=alpha_compressed,
        compress_increment_fraction=increment,
        planner_compress_increment_fraction=real_increment,
        long_pool_gap_fraction=gap,
        planner_extra_short_instances=extra_short,
        planner_extra_long_instances=extra_long,
    )


def _estimates(
    planner: Planner,
    plan: FleetPlan,
    mu: Throughputs,
    alpha: float,
    alpha_compressed: float,
    routed_cell: FleetCandidate,
    cr_cell: FleetCandidate,
    pricer: _Pricer,
    current: CurrentFleet | None,
    b_short: int,
    gamma: float,
) -> list[SavingsEstimate]:
    """Every row of the audit, baselines first, each formula compared with its planner fleet."""
    o = planner.options
    rate, cap, homogeneous = o.sizing_rate_per_s, o.max_utilization, plan.homogeneous
    homo_cost = homogeneous.cost_per_year_usd
    planner_pr = _planner_estimate(PLANNER_PR, routed_cell, pricer, homo_cost)
    planner_cr = _planner_estimate(PLANNER_CR, cr_cell, pricer, homo_cost)
    if plan.best is not None:
        planner_best = _planner_estimate(PLANNER_BEST, plan.best, pricer, homo_cost)
    else:
        planner_best = SavingsEstimate(PLANNER_BEST, None, feasible=False)
    rho, cliff = mu.throughput_ratio, mu.cliff_ratio
    closed = _formula_estimate(CLOSED_FORM, closed_form_savings_fraction(alpha, rho), pricer, homogeneous)
    closed_cliff = _formula_estimate(
        CLOSED_FORM_CLIFF, closed_form_savings_fraction(alpha, cliff), pricer, homogeneous
    )
    eq8 = _eq8_estimate(EQ8, rate, alpha, mu.short_per_s, mu.long_per_s, mu.homogeneous_per_s, cap, pricer)
    closed_cr = _formula_estimate(
        CLOSED_FORM_CR, closed_form_savings_fraction(alpha_compressed, rho), pricer, homogeneous
    )
    estimates_cr = [closed_cr]
    if cr_cell.short is not None and _usable(cr_cell.short):
        cr_long = cr_cell.long
        mu_long_cr = cr_long.service_rate_per_instance_per_s if _usable(cr_long) else None
        if mu_long_cr is None and cr_long.arrival_rate_per_s > 0:
            _, long_moments = planner.pool_traffic(planner.routing(b_short, gamma))[-1]
            long_hw = planner.hardware_of(2, 1)
            mu_long_cr = pool_throughput_per_s(
                long_moments, long_hw, long_hw.max_slots(o.long_context_tokens), o.service_model
            )
        estimates_cr.append(
            _eq8_estimate(
                EQ8_CR, rate, cr_cell.short_traffic_fraction, cr_cell.short.service_rate_per_instance_per_s,
                mu_long_cr, mu.homogeneous_per_s, cap, pricer,
            )
        )  # fmt: skip
    rows = [_planner_estimate(HOMOGENEOUS, homogeneous, pricer, homo_cost)]
    if current is not None:
        versus, saved = pricer.compare(current.gpus, pricer.current_cost)
        rows.append(
            SavingsEstimate(
                CURRENT, float(current.instances), None, float(current.instances),
                whole_instances=current.instances, gpus=current.gpus, cost_per_year_usd=pricer.current_cost,
                savings_fraction=1.0 - pricer.current_cost / homo_cost, savings_vs_current=versus,
                saved_usd_per_year=saved, feasible=current.sizing.feasible,
                infeasible=None if current.sizing.feasible else current.sizing,
            )
        )  # fmt: skip
    rows += [_with_reference(e, planner_pr) for e in (closed, closed_cliff, eq8)] + [planner_pr]
    rows += [_with_reference(e, planner_cr) for e in estimates_cr]
    return rows + [planner_cr, planner_best]


def _findings(
    mu: Throughputs, planner_pr: SavingsEstimate, planner_cr: SavingsEstimate, extra_short: float | None
) -> tuple[WorkloadFinding, ...]:
    """Which reasons for the estimates' differences apply, in the order they are told."""
    findings = [
        WorkloadFinding.NO_LONG_TRAFFIC if mu.long_per_s is None else WorkloadFinding.LONG_POOL_SPEED,
        WorkloadFinding.RHO_VS_CLIFF,
    ]
    if extra_short is not None:
        findings.append(WorkloadFinding.PLANNER_OVER_EQ8)
    elif not planner_pr.feasible:
        findings.append(WorkloadFinding.PLANNER_INFEASIBLE)
    if planner_cr.savings_fraction is not None and planner_pr.savings_fraction is not None:
        findings.append(WorkloadFinding.CR_RECALIBRATED)
    return tuple(findings)


def _rate_rows(
    workload: Workload, planner: Planner, plan: FleetPlan, rates_per_s: tuple[float, ...] | None
) -> tuple[list[dict], RateSweepScope | None]:
    """The rate sweep's rows at the given rates (default: DEFAULT_RATE_MULTIPLIERS × the rate)."""
    rate = planner.options.sizing_rate_per_s
    rates = rates_per_s
    if rates is None:
        rates = tuple(m * rate for m in DEFAULT_RATE_MULTIPLIERS) if rate > 0 else ()
    if not rates:
        return [], None
    for value in rates:
        if not (value > 0 and math.isfinite(value)):
            raise ValidationError(f"rates: {value!r} req/s must be positive and finite")
    pr_b = None if plan.pool_routing is None else plan.pool_routing.b_short_tokens
    return _rate_sweep(workload, planner, rates, pr_b, plan.best, planner.options.gammas)
