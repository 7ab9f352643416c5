"""Savings estimates of pool routing and Compress-and-Route, from numbers alone (``fleetopt audit``).

Every function here is pure arithmetic on a few profiled numbers (no workload, no queueing):

- the closed form (pool-routing Eq. 7): savings = α·(1 − 1/ρ);
- fleet sizes (pool-routing Eq. 6 and its corrected form Eq. 8): G = αλ/μ_s + (1 − α)λ/μ_l
  instances, and the homogeneous G = λ/μ_homo, with optional headroom factors and ceilings
  (pool-routing Appendix A);
- the Compress-and-Route increment (FleetOpt Eq. 14): β·p_c·(1 − 1/ρ);
- dollars (GPUs × $/GPU-hour × 8,760 h) and the over-prediction factor of one estimate
  relative to another;
- the throughput ratio of a short pool over a long pool under the lock-step service model,
  which the papers conflate with the slot "cliff ratio" n_s/n_l (FACTS §2 item 1).

Units: arrival rates and throughputs in requests per second (per instance for μ), times in
seconds, money in US dollars; "instances" are serving instances (one tensor-parallel group),
GPUs = instances × GPUs per instance. Symbols follow the papers: α = F(B_short) (short-traffic
fraction), ρ = μ_short/μ_homo (throughput gain ratio), β = F(γB) − F(B) (borderline fraction),
p_c (compressible share of the borderline traffic).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fleetopt.defaults import HOURS_PER_YEAR, PAPER_GPU_HOUR_USD
from fleetopt.errors import ValidationError

#: Queueing-headroom factors of the pool-routing paper (Appendix A, §4.3): each pool is sized
#: ⌈λ_pool/μ_pool × β⌉.
PAPER_HEADROOM_SHORT = 1.05
PAPER_HEADROOM_LONG = 1.02
PAPER_HEADROOM_HOMOGENEOUS = 1.08

#: The papers' lock-step timing calibration (Llama-3-70B on A100-80GB, pool-routing Appendix A,
#: FACTS §1): t_iter = W + H·n with W = 8 ms and H = 0.65 ms per active sequence.
PAPER_ITERATION_BASE_S = 0.008
PAPER_ITERATION_PER_SLOT_S = 0.00065

# Relative slack of the ceilings, so that 1000/3.0·1.08 = 360.00000000000006 rounds to 360.
_CEIL_RELATIVE_SLACK = 1e-9


def _require_fraction(value: float, name: str) -> None:
    if not (0.0 <= value <= 1.0) or not math.isfinite(value):
        raise ValidationError(f"{name} = {value!r} must be a fraction in [0, 1]")


def _require_positive(value: float, name: str) -> None:
    if not (value > 0.0) or not math.isfinite(value):
        raise ValidationError(f"{name} = {value!r} must be a positive, finite number")


def _require_headroom(value: float, name: str) -> None:
    if not (value >= 1.0) or not math.isfinite(value):
        raise ValidationError(
            f"{name} = {value!r} must be ≥ 1 (a headroom factor below 1 sizes a pool beyond 100% load)"
        )


def ceil_instances(instances: float) -> int:
    """Round a fractional instance count up to whole instances, ignoring float noise (1e-9 relative)."""
    return max(0, math.ceil(instances * (1.0 - _CEIL_RELATIVE_SLACK)))


# --- the closed form and its Compress-and-Route increment -------------------------------------


def closed_form_savings_fraction(short_fraction: float, throughput_ratio: float) -> float:
    """Fractional GPU savings of pool routing, ΔG/G_homo = α·(1 − 1/ρ) (pool-routing Eq. 7).

    ``short_fraction`` is α = F(B_short); ``throughput_ratio`` is ρ = μ_short/μ_homo, the
    per-instance *throughput* gain (not the slot ratio n_s/n_l, see
    :func:`lockstep_throughput_ratio`). Derived from Eq. 6 by assuming the long pool runs at
    μ_homo, i.e. serves the same mix as the homogeneous pool; with routed traffic the long pool
    is slower and Eq. 7 over-predicts (pool-routing §4.2: 69% predicted vs 16.6% realised).
    ρ < 1 gives negative savings (the short pool is slower).
    """
    _require_fraction(short_fraction, "short fraction α")
    _require_positive(throughput_ratio, "throughput ratio ρ")
    return short_fraction * (1.0 - 1.0 / throughput_ratio)


def compressed_short_fraction(
    short_fraction: float, borderline_fraction: float, compressible_fraction: float
) -> float:
    """Short-pool fraction after Compress-and-Route, α' = α + β·p_c (FleetOpt Eq. 14).

    β = F(γB) − F(B) is the borderline fraction (requests in (B, γB]); p_c the share of it that
    can be compressed below B. Requires α + β ≤ 1 (the band lies above B, so α + β = F(γB)).
    """
    _require_fraction(short_fraction, "short fraction α")
    _require_fraction(borderline_fraction, "borderline fraction β")
    _require_fraction(compressible_fraction, "compressible fraction p_c")
    if short_fraction + borderline_fraction > 1.0 + 1e-12:
        raise ValidationError(
            f"short fraction α = {short_fraction:g} plus borderline fraction β = {borderline_fraction:g} "
            f"is {short_fraction + borderline_fraction:g}; α + β = F(γB) must be ≤ 1"
        )
    return min(1.0, short_fraction + borderline_fraction * compressible_fraction)


def compress_and_route_increment(
    borderline_fraction: float, compressible_fraction: float, throughput_ratio: float
) -> float:
    """Extra savings of C&R over pool routing, Δα·(1 − 1/ρ) = β·p_c·(1 − 1/ρ) (FleetOpt Eq. 14, §5.1).

    Assumes ρ is unchanged by compression: in truth the long pool loses its lightest requests
    (those in (B, γB]), so its per-request cost rises; the planner re-derives μ_long instead.
    """
    _require_fraction(borderline_fraction, "borderline fraction β")
    _require_fraction(compressible_fraction, "compressible fraction p_c")
    _require_positive(throughput_ratio, "throughput ratio ρ")
    return borderline_fraction * compressible_fraction * (1.0 - 1.0 / throughput_ratio)


# --- fleet sizes ----------------------------------------------------------------------------------


def homogeneous_instances(
    arrival_rate_per_s: float,
    homogeneous_throughput_per_s: float,
    *,
    headroom: float = 1.0,
    round_up: bool = False,
) -> float:
    """Instances of a homogeneous fleet, G_homo = λ/μ_homo × β_homo (pool-routing §3; Appendix A).

    ``homogeneous_throughput_per_s`` is μ_homo, requests per second per instance on the full
    mix; ``headroom`` the queueing-headroom factor (paper: 1.08); ``round_up`` rounds up to
    whole instances (the paper's ⌈·⌉).
    """
    _require_positive(arrival_rate_per_s, "arrival rate λ")
    _require_positive(homogeneous_throughput_per_s, "homogeneous throughput μ_homo")
    _require_headroom(headroom, "homogeneous headroom β_homo")
    instances = arrival_rate_per_s / homogeneous_throughput_per_s * headroom
    return float(ceil_instances(instances)) if round_up else instances


@dataclass(frozen=True)
class TwoPoolInstances:
    """Instances of a two-pool fleet, per pool and in total (fractional unless rounded up)."""

    short_instances: float
    long_instances: float

    @property
    def total_instances(self) -> float:
        """short + long instances."""
        return self.short_instances + self.long_instances


def two_pool_instances(
    arrival_rate_per_s: float,
    short_fraction: float,
    short_throughput_per_s: float,
    long_throughput_per_s: float | None,
    *,
    headroom_short: float = 1.0,
    headroom_long: float = 1.0,
    round_up: bool = False,
) -> TwoPoolInstances:
    """Instances of a two-pool fleet, G = αλ/μ_s·β_s + (1 − α)λ/μ_l·β_l (pool-routing Eq. 6 / Eq. 8).

    With μ_l = μ(C_H), the full-mix throughput, this is Eq. 6 (from which Eq. 7 follows); with μ_l
    measured on the *routed* long traffic (only requests above B_short) it is the corrected fleet
    formula, Eq. 8 (pool-routing §4.2: 917/13.5 + 83/0.37 = 67.9 + 224.3 ≈ 292 at λ = 1000).
    ``headroom_*`` are the queueing-headroom factors (paper, Appendix A: β_short = 1.05,
    β_long = 1.02); ``round_up`` rounds each pool up to whole instances (Eq. 6's ⌈·⌉; with the
    paper's headroom, 72 + 229 = 301). ``long_throughput_per_s`` may be ``None`` only when α = 1.
    """
    _require_positive(arrival_rate_per_s, "arrival rate λ")
    _require_fraction(short_fraction, "short fraction α")
    _require_positive(short_throughput_per_s, "short-pool throughput μ_short")
    _require_headroom(headroom_short, "short-pool headroom β_short")
    _require_headroom(headroom_long, "long-pool headroom β_long")
    short = short_fraction * arrival_rate_per_s / short_throughput_per_s * headroom_short
    long_rate_per_s = (1.0 - short_fraction) * arrival_rate_per_s
    if long_rate_per_s > 0.0:
        if long_throughput_per_s is None:
            raise ValidationError("long-pool throughput μ_long is needed when α < 1 (some traffic is long)")
        _require_positive(long_throughput_per_s, "long-pool throughput μ_long")
        long = long_rate_per_s / long_throughput_per_s * headroom_long
    else:
        long = 0.0
    if round_up:
        return TwoPoolInstances(float(ceil_instances(short)), float(ceil_instances(long)))
    return TwoPoolInstances(short, long)


# --- the throughput ratio the papers conflate with the cliff ratio ------------------------------


def iteration_time_s(slots: int, *, iteration_base_s: float, iteration_per_slot_s: float) -> float:
    """Lock-step iteration time t(n) = W + H·n, seconds (FleetOpt Eq. 3; pool-routing Eq. 9)."""
    if slots < 1:
        raise ValidationError(f"slots = {slots!r} must be a whole number ≥ 1")
    _require_positive(iteration_base_s, "iteration base time W")
    if not (iteration_per_slot_s >= 0.0) or not math.isfinite(iteration_per_slot_s):
        raise ValidationError(f"per-slot iteration time H = {iteration_per_slot_s!r} must be ≥ 0")
    return iteration_base_s + iteration_per_slot_s * slots


def cliff_ratio(short_slots: int, long_slots: int) -> float:
    """The papers' "cliff ratio" n_max(s)/n_max(l): a ratio of *slots*, not of throughput (FleetOpt §2.2)."""
    if short_slots < 1 or long_slots < 1:
        raise ValidationError(f"slots must be ≥ 1 (short {short_slots!r}, long {long_slots!r})")
    return short_slots / long_slots


def lockstep_throughput_ratio(
    short_slots: int, long_slots: int, *, iteration_base_s: float, iteration_per_slot_s: float
) -> float:
    """Throughput ratio ρ of a short pool over a long pool on the *same* traffic mix, lock-step model.

    One instance with n busy slots finishes n requests every E[iterations]·t(n) seconds, so
    μ ∝ n/t(n) with t(n) = W + H·n, and ρ = (n_s/t(n_s)) / (n_l/t(n_l)). With the papers'
    W = 8 ms, H = 0.65 ms: 128 vs 16 slots gives 8 · 18.4/91.2 = 1.61×, not the cliff ratio 8×
    (FACTS §2 item 1; the pool-routing simulator reports 6.8/4.1 = 1.66 on LMSYS). Upper bound:
    the ratio of full-load throughputs; at partial occupancy t(n) is smaller in both pools.
    """
    t_short_s = iteration_time_s(
        short_slots, iteration_base_s=iteration_base_s, iteration_per_slot_s=iteration_per_slot_s
    )
    t_long_s = iteration_time_s(
        long_slots, iteration_base_s=iteration_base_s, iteration_per_slot_s=iteration_per_slot_s
    )
    return (short_slots / t_short_s) / (long_slots / t_long_s)


# --- dollars --------------------------------------------------------------------------------------


def gpus_from_instances(instances: float, gpus_per_instance: int) -> float:
    """GPUs = instances × GPUs per instance (tensor-parallel size)."""
    if gpus_per_instance < 1:
        raise ValidationError(f"GPUs per instance = {gpus_per_instance!r} must be a whole number ≥ 1")
    return instances * gpus_per_instance


def annual_cost_usd(gpus: float, gpu_hour_usd: float, *, hours_per_year: float = HOURS_PER_YEAR) -> float:
    """Cost per year, USD = GPUs × $/GPU-hour × 8,760 h (FleetOpt Table 3; pool-routing Table 5).

    Pool-routing Table 5: 1,576 GPUs × $3.67 × 8,760 = $50.67M (printed as $50.6M).
    """
    if not (gpus >= 0.0) or not math.isfinite(gpus):
        raise ValidationError(f"GPUs = {gpus!r} must be ≥ 0")
    if not (gpu_hour_usd >= 0.0) or not math.isfinite(gpu_hour_usd):
        raise ValidationError(f"GPU price = {gpu_hour_usd!r} $/GPU-hour must be ≥ 0")
    return gpus * gpu_hour_usd * hours_per_year


def savings_fraction(fleet_gpus: float, baseline_gpus: float) -> float:
    """Savings of a fleet relative to a baseline fleet, 1 − fleet/baseline (negative if it is larger)."""
    _require_positive(baseline_gpus, "baseline fleet (GPUs)")
    return 1.0 - fleet_gpus / baseline_gpus


def over_prediction_factor(
    estimated_savings_fraction: float, reference_savings_fraction: float
) -> float | None:
    """How many times an estimate over-states the savings of a reference: estimate / reference.

    ``None`` when the reference saves nothing or loses (the ratio has no meaning there).
    Pool-routing §4.2: Eq. 7 predicts 69% where the routed fleet saves 16.6%, a factor of 4.2.
    """
    if reference_savings_fraction <= 0.0:
        return None
    return estimated_savings_fraction / reference_savings_fraction


# --- the audit of a set of numbers ----------------------------------------------------------------


class EstimateKind(str, enum.Enum):
    """Which fleet an estimate is; the value is its label (both audit modes share these)."""

    CURRENT = "current fleet"
    HOMOGENEOUS = "homogeneous fleet"
    TWO_POOLS = "two pools, routed μ_long"
    PROPOSED = "proposed fleet"
    CLOSED_FORM = "closed form"
    CLOSED_FORM_LOCKSTEP = "closed form, lock-step ρ"
    CLOSED_FORM_CLIFF = "closed form, cliff ratio as ρ"
    CLOSED_FORM_CR = "closed form + C&R"
    PLANNER_HOMOGENEOUS = "homogeneous (planner)"
    EQ8 = "Eq. 8 (routed μ_l)"
    EQ8_CR = "Eq. 8 + C&R (recalibrated μ)"
    PLANNER_PR = "planner: pool routing"
    PLANNER_CR = "planner: C&R"
    PLANNER_BEST = "planner: best plan"


@dataclass(frozen=True)
class SavingsEstimate:
    """One fleet as one method sees it, priced and compared (both audit modes).

    Attributes:
        kind: which fleet (:class:`EstimateKind`); ``name`` is its label.
        instances: total serving instances (fractional for formulas), None if not sizable.
        short_instances, long_instances: the two pools of a two-pool estimate, else None.
        whole_instances: workload mode: the same rounded up per pool (None for a closed form).
        gpus, cost_per_year_usd: GPUs and GPUs × $/GPU-hour × 8,760 h.
        savings_fraction: the savings the method states (numbers mode: 1 − GPUs/baseline GPUs, or
            α(1 − 1/ρ) without a baseline; workload mode: against the method's own homogeneous fleet).
        savings_vs_current: workload mode: 1 − GPUs / current GPUs, when the current fleet is given.
        saved_usd_per_year: baseline $/yr − this $/yr.
        reference: the estimate the over-prediction factor is relative to, or None.
        over_prediction_factor: savings_fraction / the reference's (None when it saves nothing).
        is_baseline: numbers mode: the fleet the savings are measured against.
        feasible: False for a planner fleet that breaks the SLO or cap.
        infeasible: for an infeasible planner fleet, the fleet (or pool) itself, whose pools' typed
            problems say why (``fleetopt.render.words`` words them); else None.
    """

    kind: EstimateKind
    instances: float | None
    short_instances: float | None = None
    long_instances: float | None = None
    whole_instances: int | None = None
    gpus: float | None = None
    cost_per_year_usd: float | None = None
    savings_fraction: float | None = None
    savings_vs_current: float | None = None
    saved_usd_per_year: float | None = None
    reference: EstimateKind | None = None
    over_prediction_factor: float | None = None
    is_baseline: bool = False
    feasible: bool = True
    infeasible: Any = None

    @property
    def name(self) -> str:
        """The estimate's label, e.g. ``"closed form"``."""
        return self.kind.value


@dataclass(frozen=True)
class AuditInputs:
    """The numbers of a back-of-envelope audit; ``None`` means "not given".

    Attributes:
        short_fraction: α = F(B_short).
        throughput_ratio: ρ given directly.
        arrival_rate_per_s: λ, requests per second.
        short_throughput_per_s, long_throughput_per_s, homogeneous_throughput_per_s: μ_s, μ_l
            (on routed long traffic), μ_homo; requests per second per instance.
        short_slots, long_slots: n_s, n_l for the lock-step throughput ratio.
        iteration_base_s, iteration_per_slot_s: W and H of t(n) = W + H·n, seconds.
        headroom_short, headroom_long, headroom_homogeneous: sizing headroom factors (≥ 1).
        round_up: round each pool up to whole instances.
        borderline_fraction, compressible_fraction: β and p_c of Compress-and-Route.
        gpus_per_instance: GPUs in one serving instance.
        gpu_hour_usd: price of one GPU for one hour, USD.
        current_gpus: the fleet running today (the savings baseline when given).
        proposed_gpus: a fleet size obtained elsewhere, to price against the baseline.
    """

    short_fraction: float | None = None
    throughput_ratio: float | None = None
    arrival_rate_per_s: float | None = None
    short_throughput_per_s: float | None = None
    long_throughput_per_s: float | None = None
    homogeneous_throughput_per_s: float | None = None
    short_slots: int | None = None
    long_slots: int | None = None
    iteration_base_s: float = PAPER_ITERATION_BASE_S
    iteration_per_slot_s: float = PAPER_ITERATION_PER_SLOT_S
    headroom_short: float = 1.0
    headroom_long: float = 1.0
    headroom_homogeneous: float = 1.0
    round_up: bool = False
    borderline_fraction: float | None = None
    compressible_fraction: float = 1.0
    gpus_per_instance: int = 1
    gpu_hour_usd: float = PAPER_GPU_HOUR_USD
    current_gpus: float | None = None
    proposed_gpus: float | None = None


class ThroughputRatioSource(str, enum.Enum):
    """Where the closed form's ρ came from; the value is its label."""

    GIVEN = "given"
    MEASURED = "μ_short/μ_homo"
    LOCKSTEP = "lock-step n_s/t(n_s) ÷ n_l/t(n_l)"


class SavingsFinding(str, enum.Enum):
    """A reason the numbers-mode estimates differ (worded by ``fleetopt.render.audit``)."""

    NO_BASELINE = "no-baseline"  # closed-form savings are a fraction of an unspecified fleet
    CLOSED_FORM_VS_EQ8 = "closed-form-vs-eq8"  # Eq. 7 assumes the long pool runs at μ_homo
    CLIFF_RATIO_COUNTS_SLOTS = "cliff-ratio-counts-slots"  # n_s/n_l is not a throughput ratio
    CR_KEEPS_RHO = "cr-keeps-rho"  # the C&R increment holds ρ fixed
    ROUNDED_UP = "rounded-up"  # each pool rounded up to whole instances


@dataclass(frozen=True)
class AuditResult:
    """The estimates of a numbers audit, the baseline they are measured against, and why they differ.

    Attributes:
        inputs: the numbers audited.
        estimates: one :class:`SavingsEstimate` per formula that the inputs allow.
        throughput_ratio: the ρ used by the closed forms (None if none could be formed).
        throughput_ratio_source: how ρ was obtained.
        baseline: the estimate the savings are relative to (None: the closed form's own).
        findings: why the estimates differ, in order.
        lockstep_throughput_ratio, cliff_ratio: from the slots, when given.
        short_iteration_s, long_iteration_s: t(n_s), t(n_l) in seconds, when slots are given.
        compressed_short_fraction: α' = α + β·p_c, when β is given.
        compress_increment_fraction: β·p_c·(1 − 1/ρ), when β is given.
    """

    inputs: AuditInputs
    estimates: tuple[SavingsEstimate, ...]
    throughput_ratio: float | None
    throughput_ratio_source: ThroughputRatioSource | None
    baseline: EstimateKind | None
    findings: tuple[SavingsFinding, ...] = ()
    lockstep_throughput_ratio: float | None = None
    cliff_ratio: float | None = None
    short_iteration_s: float | None = None
    long_iteration_s: float | None = None
    compressed_short_fraction: float | None = None
    compress_increment_fraction: float | None = None

    def estimate(self, kind: EstimateKind) -> SavingsEstimate | None:
        """The estimate of ``kind``, or None if the inputs did not allow it."""
        return next((e for e in self.estimates if e.kind == kind), None)


def _resolve_throughput_ratio(inputs: AuditInputs) -> tuple[float | None, ThroughputRatioSource | None]:
    if inputs.throughput_ratio is not None:
        _require_positive(inputs.throughput_ratio, "throughput ratio ρ")
        return inputs.throughput_ratio, ThroughputRatioSource.GIVEN
    if inputs.short_throughput_per_s is not None and inputs.homogeneous_throughput_per_s is not None:
        _require_positive(inputs.short_throughput_per_s, "short-pool throughput μ_short")
        _require_positive(inputs.homogeneous_throughput_per_s, "homogeneous throughput μ_homo")
        ratio = inputs.short_throughput_per_s / inputs.homogeneous_throughput_per_s
        return ratio, ThroughputRatioSource.MEASURED
    if inputs.short_slots is not None and inputs.long_slots is not None:
        ratio = lockstep_throughput_ratio(
            inputs.short_slots,
            inputs.long_slots,
            iteration_base_s=inputs.iteration_base_s,
            iteration_per_slot_s=inputs.iteration_per_slot_s,
        )
        return ratio, ThroughputRatioSource.LOCKSTEP
    return None, None


def _sized_fleets(inputs: AuditInputs) -> list[tuple[EstimateKind, float | None, float | None, float]]:
    """(kind, short, long, total instances) of every fleet the inputs size, in output order."""
    rate, alpha, per_instance = inputs.arrival_rate_per_s, inputs.short_fraction, inputs.gpus_per_instance
    sized: list[tuple[EstimateKind, float | None, float | None, float]] = []
    if inputs.current_gpus is not None:
        _require_positive(inputs.current_gpus, "current fleet (GPUs)")
        sized.append((EstimateKind.CURRENT, None, None, inputs.current_gpus / per_instance))
    if rate is not None and inputs.homogeneous_throughput_per_s is not None:
        homogeneous = homogeneous_instances(
            rate,
            inputs.homogeneous_throughput_per_s,
            headroom=inputs.headroom_homogeneous,
            round_up=inputs.round_up,
        )
        sized.append((EstimateKind.HOMOGENEOUS, None, None, homogeneous))
    if rate is not None and alpha is not None and inputs.short_throughput_per_s is not None:
        if alpha < 1.0 and inputs.long_throughput_per_s is None:
            raise ValidationError(
                "the two-pool fleet (Eq. 8) needs the long-pool throughput μ_long when α < 1"
            )
        routed = two_pool_instances(
            rate,
            alpha,
            inputs.short_throughput_per_s,
            inputs.long_throughput_per_s,
            headroom_short=inputs.headroom_short,
            headroom_long=inputs.headroom_long,
            round_up=inputs.round_up,
        )
        sized.append(
            (EstimateKind.TWO_POOLS, routed.short_instances, routed.long_instances, routed.total_instances)
        )
    if inputs.proposed_gpus is not None:
        _require_positive(inputs.proposed_gpus, "proposed fleet (GPUs)")
        sized.append((EstimateKind.PROPOSED, None, None, inputs.proposed_gpus / per_instance))
    return sized


def audit_savings(inputs: AuditInputs) -> AuditResult:
    """Every savings estimate the given numbers allow, priced and compared on one baseline.

    Estimates (each only when its inputs are present): the current fleet; the homogeneous
    fleet λ/μ_homo·β_homo; the two-pool fleet of Eq. 8; a proposed fleet given as a number; the
    closed form α(1 − 1/ρ) (Eq. 7), also with the cliff ratio n_s/n_l when slots are given; the
    closed form plus the C&R increment (FleetOpt Eq. 14). The baseline is the current fleet when
    given, else the homogeneous estimate; a closed form is applied to the baseline,
    G = G_baseline·(1 − α(1 − 1/ρ)). The over-prediction factors are relative to Eq. 8.
    """
    gpus_per_instance = inputs.gpus_per_instance
    gpus_from_instances(0.0, gpus_per_instance)  # validates it
    annual_cost_usd(0.0, inputs.gpu_hour_usd)  # validates the price
    alpha = inputs.short_fraction
    if alpha is not None:
        _require_fraction(alpha, "short fraction α")
    rho, rho_source = _resolve_throughput_ratio(inputs)
    sized = _sized_fleets(inputs)
    totals = {kind: total for kind, _, _, total in sized}
    baseline: EstimateKind | None = next(
        (k for k in (EstimateKind.CURRENT, EstimateKind.HOMOGENEOUS) if k in totals), None
    )
    baseline_instances = None if baseline is None else totals[baseline]

    has_slots = inputs.short_slots is not None and inputs.long_slots is not None
    lockstep = cliff = t_short_s = t_long_s = None
    if has_slots:
        timing = {
            "iteration_base_s": inputs.iteration_base_s,
            "iteration_per_slot_s": inputs.iteration_per_slot_s,
        }
        t_short_s = iteration_time_s(inputs.short_slots, **timing)
        t_long_s = iteration_time_s(inputs.long_slots, **timing)
        lockstep = lockstep_throughput_ratio(inputs.short_slots, inputs.long_slots, **timing)
        cliff = cliff_ratio(inputs.short_slots, inputs.long_slots)
    closed: list[tuple[EstimateKind, float]] = []
    if alpha is not None and rho is not None:
        closed.append((EstimateKind.CLOSED_FORM, closed_form_savings_fraction(alpha, rho)))
    if alpha is not None and has_slots:
        if rho_source is not ThroughputRatioSource.LOCKSTEP:
            closed.append((EstimateKind.CLOSED_FORM_LOCKSTEP, closed_form_savings_fraction(alpha, lockstep)))
        closed.append((EstimateKind.CLOSED_FORM_CLIFF, closed_form_savings_fraction(alpha, cliff)))
    alpha_compressed = increment = None
    if inputs.borderline_fraction is not None:
        if alpha is None or rho is None:
            raise ValidationError("the C&R increment needs the short fraction α and a throughput ratio ρ")
        alpha_compressed = compressed_short_fraction(
            alpha, inputs.borderline_fraction, inputs.compressible_fraction
        )
        increment = compress_and_route_increment(
            inputs.borderline_fraction, inputs.compressible_fraction, rho
        )
        closed.append((EstimateKind.CLOSED_FORM_CR, closed_form_savings_fraction(alpha_compressed, rho)))

    estimates = _priced_estimates(inputs, sized, closed, baseline, baseline_instances)
    findings = _savings_findings(inputs, estimates, baseline, rho_source)
    return AuditResult(
        inputs=inputs,
        estimates=tuple(estimates),
        throughput_ratio=rho,
        throughput_ratio_source=rho_source,
        baseline=baseline,
        findings=tuple(findings),
        lockstep_throughput_ratio=lockstep,
        cliff_ratio=cliff,
        short_iteration_s=t_short_s,
        long_iteration_s=t_long_s,
        compressed_short_fraction=alpha_compressed,
        compress_increment_fraction=increment,
    )


def _priced_estimates(
    inputs: AuditInputs,
    sized: list[tuple[EstimateKind, float | None, float | None, float]],
    closed: list[tuple[EstimateKind, float]],
    baseline: EstimateKind | None,
    baseline_instances: float | None,
) -> list[SavingsEstimate]:
    """GPUs, $/yr and savings of every estimate against the baseline; closed forms applied to it."""

    def price(instances: float | None) -> tuple[float | None, float | None]:
        if instances is None:
            return None, None
        gpus = gpus_from_instances(instances, inputs.gpus_per_instance)
        return gpus, annual_cost_usd(gpus, inputs.gpu_hour_usd)

    _, baseline_cost = price(baseline_instances)
    estimates: list[SavingsEstimate] = []
    for kind, short, long, total in sized:
        gpus, cost = price(total)
        fraction = saved = None
        if baseline_instances is not None and cost is not None and baseline_cost is not None:
            fraction = savings_fraction(total, baseline_instances)
            saved = baseline_cost - cost
        estimates.append(
            SavingsEstimate(
                kind, total, short, long, gpus=gpus, cost_per_year_usd=cost, savings_fraction=fraction,
                saved_usd_per_year=saved, is_baseline=kind == baseline,
            )
        )  # fmt: skip
    reference = next((e for e in estimates if e.kind == EstimateKind.TWO_POOLS), None)
    for kind, fraction in closed:
        instances = None if baseline_instances is None else baseline_instances * (1.0 - fraction)
        gpus, cost = price(instances)
        saved = None if (cost is None or baseline_cost is None) else baseline_cost - cost
        factor = None
        if (
            reference is not None
            and reference.savings_fraction is not None
            and kind != EstimateKind.CLOSED_FORM_CR
        ):
            factor = over_prediction_factor(fraction, reference.savings_fraction)
        estimates.append(
            SavingsEstimate(
                kind, instances, gpus=gpus, cost_per_year_usd=cost, savings_fraction=fraction,
                saved_usd_per_year=saved, over_prediction_factor=factor,
            )
        )  # fmt: skip
    return estimates


def _savings_findings(
    inputs: AuditInputs,
    estimates: list[SavingsEstimate],
    baseline: EstimateKind | None,
    rho_source: ThroughputRatioSource | None,
) -> list[SavingsFinding]:
    """Which reasons for the estimates' differences apply, in the order they are told."""
    by_kind = {e.kind: e for e in estimates}
    findings = []
    if baseline is None:
        findings.append(SavingsFinding.NO_BASELINE)
    eq7, eq8 = by_kind.get(EstimateKind.CLOSED_FORM), by_kind.get(EstimateKind.TWO_POOLS)
    if eq7 is not None and eq8 is not None and None not in (eq7.savings_fraction, eq8.savings_fraction):
        findings.append(SavingsFinding.CLOSED_FORM_VS_EQ8)
    if inputs.short_slots is not None and inputs.long_slots is not None and rho_source is not None:
        findings.append(SavingsFinding.CLIFF_RATIO_COUNTS_SLOTS)
    if inputs.borderline_fraction is not None:
        findings.append(SavingsFinding.CR_KEEPS_RHO)
    if inputs.round_up:
        findings.append(SavingsFinding.ROUNDED_UP)
    return findings


# --- sensitivity rows (for the workload mode; tables and plots are drawn by fleetopt.render) -----


def threshold_sensitivity_rows(
    b_short_tokens: Sequence[int],
    short_fractions: Sequence[float],
    routed_gpus: Sequence[float],
    homogeneous_gpus: float | Sequence[float],
    *,
    closed_form_savings: Sequence[float] | None = None,
    eq8_savings: Sequence[float] | None = None,
    compressed_gpus: Sequence[float] | None = None,
) -> list[dict[str, float]]:
    """Savings versus the boundary B_short (the shape of pool-routing Figure 6), one row per B_short.

    Each row: ``b_short_tokens``, ``short_fraction`` (α = F(B)), ``routed_gpus``,
    ``homogeneous_gpus`` and ``savings_fraction`` = 1 − routed/homogeneous. Rows come back sorted
    by B_short. The homogeneous fleet may be one number (it does not depend on B) or one per row.
    Optional series, one value per row (the workload audit's): ``closed_form_savings`` (Eq. 7)
    and ``eq8_savings`` as fractions → ``closed_form_savings_fraction``, ``eq8_savings_fraction``;
    ``compressed_gpus`` (the cheapest C&R fleet at that B) → ``compressed_gpus`` and
    ``compressed_savings_fraction``.
    """
    count = len(b_short_tokens)
    homo = (
        [float(homogeneous_gpus)] * count
        if isinstance(homogeneous_gpus, (int, float))
        else list(homogeneous_gpus)
    )
    if not (len(short_fractions) == len(routed_gpus) == len(homo) == count):
        raise ValidationError(
            f"threshold sensitivity: {count} thresholds but {len(short_fractions)} short fractions, "
            f"{len(routed_gpus)} routed fleets and {len(homo)} homogeneous fleets"
        )
    series = {
        "closed_form_savings_fraction": closed_form_savings,
        "eq8_savings_fraction": eq8_savings,
        "compressed_gpus": compressed_gpus,
    }
    for key, values in series.items():
        if values is not None and len(values) != count:
            raise ValidationError(
                f"threshold sensitivity: {count} thresholds but {len(values)} values of {key}"
            )
    rows = []
    for index in sorted(range(count), key=lambda i: b_short_tokens[i]):
        b, alpha, routed, baseline = (
            b_short_tokens[index],
            short_fractions[index],
            routed_gpus[index],
            homo[index],
        )
        _require_fraction(alpha, f"short fraction α at B_short = {b}")
        row = {
            "b_short_tokens": int(b),
            "short_fraction": float(alpha),
            "routed_gpus": float(routed),
            "homogeneous_gpus": float(baseline),
            "savings_fraction": savings_fraction(routed, baseline),
        }
        for key, values in series.items():
            if values is not None:
                row[key] = float(values[index])
        if compressed_gpus is not None:
            row["compressed_savings_fraction"] = savings_fraction(compressed_gpus[index], baseline)
        rows.append(row)
    return rows


def rate_sensitivity_rows(
    arrival_rates_per_s: Sequence[float],
    homogeneous_gpus: Sequence[float],
    routed_gpus: Sequence[float],
    compressed_gpus: Sequence[float] | None = None,
) -> list[dict[str, float]]:
    """Fleet size versus arrival rate (the shape of FleetOpt Table 6), one row per λ.

    Each row: ``arrival_rate_per_s``, ``homogeneous_gpus``, ``routed_gpus`` (pool routing),
    ``routed_savings_fraction``, and when given ``compressed_gpus`` (pool routing + C&R) with
    ``compressed_savings_fraction``; savings are 1 − fleet/homogeneous. Sorted by λ.
    """
    count = len(arrival_rates_per_s)
    extra = list(compressed_gpus) if compressed_gpus is not None else None
    if (
        len(homogeneous_gpus) != count
        or len(routed_gpus) != count
        or (extra is not None and len(extra) != count)
    ):
        raise ValidationError(
            f"rate sensitivity: {count} arrival rates but {len(homogeneous_gpus)} homogeneous and "
            f"{len(routed_gpus)} routed fleets" + ("" if extra is None else f" and {len(extra)} C&R fleets")
        )
    rows = []
    for index in sorted(range(count), key=lambda i: arrival_rates_per_s[i]):
        _require_positive(arrival_rates_per_s[index], "arrival rate λ")
        row = {
            "arrival_rate_per_s": float(arrival_rates_per_s[index]),
            "homogeneous_gpus": float(homogeneous_gpus[index]),
            "routed_gpus": float(routed_gpus[index]),
            "routed_savings_fraction": savings_fraction(routed_gpus[index], homogeneous_gpus[index]),
        }
        if extra is not None:
            row["compressed_gpus"] = float(extra[index])
            row["compressed_savings_fraction"] = savings_fraction(extra[index], homogeneous_gpus[index])
        rows.append(row)
    return rows
