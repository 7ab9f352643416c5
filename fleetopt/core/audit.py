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

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from fleetopt.core.planner import (
    HOURS_PER_YEAR,
    FleetCandidate,
    FleetPlan,
    Planner,
    PlanOptions,
    default_b_short_candidates,
)
from fleetopt.core.poolstats import PoolMoments
from fleetopt.core.savings import (
    ceil_instances,
    closed_form_savings_fraction,
    compress_and_route_increment,
    compressed_short_fraction,
    over_prediction_factor,
    rate_sensitivity_rows,
    threshold_sensitivity_rows,
)
from fleetopt.core.service import PoolHardware, slot_service_times
from fleetopt.core.sizing import PoolSizing, evaluate_pool
from fleetopt.core.workload import Workload
from fleetopt.core.workload_stats import archetype_statistics
from fleetopt.errors import ValidationError

#: Default arrival-rate multipliers of the rate sweep (FleetOpt Table 6 spans 100–2,000 req/s).
DEFAULT_RATE_MULTIPLIERS = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)

#: A lever (moving B, adding C&R) is worth naming when it saves at least this share of the
#: homogeneous fleet's cost.
LEVER_MIN_GAIN_FRACTION = 0.02

#: Names of the estimates, as they appear in the result and the CLI output.
HOMOGENEOUS = "homogeneous (planner)"
CURRENT = "current fleet"
CLOSED_FORM = "closed form"
CLOSED_FORM_CLIFF = "closed form, cliff ratio as ρ"
EQ8 = "Eq. 8 (routed μ_l)"
CLOSED_FORM_CR = "closed form + C&R"
EQ8_CR = "Eq. 8 + C&R (recalibrated μ)"
PLANNER_PR = "planner: pool routing"
PLANNER_CR = "planner: C&R"
PLANNER_BEST = "planner: best plan"


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

    ``slots_basis`` is ``"planner"`` (each pool at the slot count the planner chose) or
    ``"kv-limit"`` (at the KV limit; used where the planner has no feasible pool). The ``*_kv``
    fields are always at the KV limit. ``long_per_s`` is None when no traffic is long.
    """

    homogeneous_per_s: float
    short_per_s: float
    long_per_s: float | None
    homogeneous_slots: int
    short_slots: int
    long_slots: int | None
    slots_basis: str
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
class AuditEstimate:
    """One fleet as one method sees it, priced and compared.

    Attributes:
        name, source: label and the equation or method.
        short_instances, long_instances: the two pools (fractional for formulas), or None.
        instances: total serving instances (fractional for formulas).
        whole_instances: the same rounded up per pool, or None for a closed form (a fraction of a fleet).
        gpus, cost_per_year_usd: of ``whole_instances`` when sized, else of ``instances``.
        savings_fraction: the savings the method itself states, against its own homogeneous
            fleet (closed forms: the formula; Eq. 8: against λ/(μ_homo·ρ_max); planner: against
            the planner's homogeneous fleet).
        savings_vs_current: 1 − GPUs / current GPUs, when the current fleet is given.
        saved_usd_per_year: baseline $/yr − this $/yr (baseline: current fleet, else homogeneous).
        reference: the planner estimate this one is compared with, or None.
        over_prediction_factor: savings_fraction / the reference's savings_fraction (None when the
            reference saves nothing).
        feasible: False for a planner fleet that breaks the SLO or cap (then ``reason`` says why).
        assumptions: what the method takes for granted.
    """

    name: str
    source: str
    short_instances: float | None
    long_instances: float | None
    instances: float | None
    whole_instances: int | None
    gpus: float | None
    cost_per_year_usd: float | None
    savings_fraction: float | None
    savings_vs_current: float | None
    saved_usd_per_year: float | None
    reference: str | None
    over_prediction_factor: float | None
    feasible: bool
    reason: str | None
    assumptions: str


@dataclass(frozen=True)
class LeverAdvice:
    """Which lever the numbers favour at the audited B (fractions of the homogeneous cost).

    ``move_b_gain_fraction``: (cost of pool routing at B − cost at the best B, γ = 1) / homogeneous;
    ``best_b_short_tokens`` is that best B. ``compress_gain_fraction``: (pool routing at B − the
    cheapest γ at B) / homogeneous, ``compress_gain_at_best_b_fraction`` the same at the best B.
    ``lever``: "raise B", "lower B", "add C&R" or "neither".
    """

    lever: str
    text: str
    move_b_gain_fraction: float | None
    best_b_short_tokens: int | None
    compress_gain_fraction: float | None
    compress_gain_at_best_b_fraction: float | None
    threshold_fraction: float


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
        order: the three estimates (closed form, Eq. 8, planner) as text, largest savings first.
        reasons: why they differ, from the numbers.
        archetype: :func:`fleetopt.core.workload_stats.archetype_statistics` at B.
        lever: the lever advice.
        current: the current fleet evaluated under the workload, or None.
        threshold_rows: savings versus B_short (one dict per feasible candidate).
        thresholds: every candidate B with its figures (including infeasible ones).
        rate_rows: fleet size versus arrival rate.
        rate_sweep_note: how the rate sweep was restricted.
        plan: the planner's full plan at the audited rate.
        notes: anything else worth saying.
    """

    options: WorkloadAuditOptions
    b_short_tokens: int
    gamma: float
    alpha: float
    beta: float
    compressibility: float
    throughputs: Throughputs
    estimates: tuple[AuditEstimate, ...]
    order: str
    reasons: tuple[str, ...]
    archetype: dict
    lever: LeverAdvice
    current: CurrentFleet | None
    threshold_rows: tuple[dict, ...]
    thresholds: tuple[dict, ...]
    rate_rows: tuple[dict, ...]
    rate_sweep_note: str | None
    plan: FleetPlan
    notes: tuple[str, ...]

    def estimate(self, name: str) -> AuditEstimate:
        """The estimate called ``name`` (KeyError if absent)."""
        for estimate in self.estimates:
            if estimate.name == name:
                return estimate
        raise KeyError(name)


# --- throughputs --------------------------------------------------------------------------------


def pool_throughput_per_s(
    moments: PoolMoments, hardware: PoolHardware, slots: int, service_model: str
) -> float:
    """μ = s / E[S]: requests per second one instance of ``slots`` slots completes on ``moments``."""
    times = slot_service_times(moments, hardware, np.array([slots]), service_model)
    return float(slots / times.mean_service_s[0])


def _usable(pool: PoolSizing | None) -> bool:
    return pool is not None and pool.feasible and pool.instances > 0 and pool.arrival_rate_per_s > 0


def boundary_throughputs(planner: Planner, b_short: int) -> Throughputs:
    """μ_homo, μ_s and μ_l (routed, γ = 1) at boundary ``b_short``, at the planner's slots or the KV limit."""
    o = planner.options
    short_hw, long_hw = planner.short_hardware, planner.long_hardware
    homogeneous = planner.homogeneous()
    cell = planner.candidate(b_short, 1.0)
    _, _, _, short_moments, long_moments = planner.split(b_short, 1.0)
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
            slots_basis="planner",
            homogeneous_kv_per_s=mu_homo_kv, short_kv_per_s=mu_short_kv, long_kv_per_s=mu_long_kv,
            homogeneous_kv_slots=homo_kv, short_kv_slots=short_kv,
        )  # fmt: skip
    return Throughputs(
        homogeneous_per_s=mu_homo_kv, short_per_s=mu_short_kv, long_per_s=mu_long_kv,
        homogeneous_slots=homo_kv, short_slots=short_kv, long_slots=homo_kv if has_long else None,
        slots_basis="kv-limit",
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


def _pct(fraction: float | None) -> str:
    return "–" if fraction is None else f"{100.0 * fraction:.1f}%"


class _Pricer:
    """GPUs and $/yr of a two-pool fleet on the audit's hardware, and comparisons with the baselines."""

    def __init__(self, planner: Planner, homogeneous: FleetCandidate, current_gpus: float | None):
        self.short_hw, self.long_hw = planner.short_hardware, planner.long_hardware
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
    name: str, source: str, cell: FleetCandidate, pricer: _Pricer, homo_cost: float, assumptions: str
) -> AuditEstimate:
    short = None if cell.short is None else float(cell.short.instances)
    long = float(cell.long.instances)
    if not cell.feasible:
        return AuditEstimate(
            name, source, short, long, None, None, None, None, None, None, None, None, None, False,
            cell.reason, assumptions,
        )  # fmt: skip
    cost = cell.cost_per_year_usd
    versus_current, saved = pricer.compare(float(cell.total_gpus), cost)
    return AuditEstimate(
        name, source, short, long, float(cell.total_instances), cell.total_instances, float(cell.total_gpus),
        cost, 1.0 - cost / homo_cost, versus_current, saved, None, None, True, None, assumptions,
    )  # fmt: skip


def _formula_estimate(
    name: str, source: str, fraction: float, pricer: _Pricer, homogeneous: FleetCandidate, assumptions: str
) -> AuditEstimate:
    instances = homogeneous.total_instances * (1.0 - fraction)
    gpus = pricer.homo_gpus * (1.0 - fraction)
    cost = pricer.homo_cost * (1.0 - fraction)
    versus_current, saved = pricer.compare(gpus, cost)
    return AuditEstimate(
        name, source, None, None, instances, None, gpus, cost, fraction, versus_current, saved, None, None,
        True, None, assumptions,
    )  # fmt: skip


def _eq8_estimate(
    name: str,
    source: str,
    rate: float,
    short_fraction: float,
    mu_short: float,
    mu_long: float | None,
    mu_homo: float,
    cap: float,
    pricer: _Pricer,
    assumptions: str,
) -> AuditEstimate:
    short, long = eq8_instances(rate, short_fraction, mu_short, mu_long, cap)
    whole_short, whole_long = ceil_instances(short), ceil_instances(long)
    gpus, cost = pricer.two_pools(whole_short, whole_long)
    fluid_homogeneous = rate / mu_homo / cap
    versus_current, saved = pricer.compare(gpus, cost)
    return AuditEstimate(
        name, source, short, long, short + long, whole_short + whole_long, gpus, cost,
        1.0 - (short + long) / fluid_homogeneous, versus_current, saved, None, None, True, None, assumptions,
    )  # fmt: skip


def _with_reference(estimate: AuditEstimate, reference: AuditEstimate) -> AuditEstimate:
    factor = None
    if estimate.savings_fraction is not None and reference.savings_fraction is not None:
        factor = over_prediction_factor(estimate.savings_fraction, reference.savings_fraction)
    return replace(estimate, reference=reference.name, over_prediction_factor=factor)


def _order_text(estimates: Sequence[AuditEstimate]) -> str:
    """ "A (x%) > B (y%) ≥ C (z%)": by stated savings, '≥' for differences under 1 point."""
    ranked = sorted(
        (e for e in estimates if e.savings_fraction is not None), key=lambda e: -e.savings_fraction
    )
    parts = [f"{ranked[0].name} ({_pct(ranked[0].savings_fraction)})"] if ranked else []
    for previous, current in zip(ranked, ranked[1:], strict=False):
        sign = "≥" if previous.savings_fraction - current.savings_fraction < 0.01 else ">"
        parts.append(f"{sign} {current.name} ({_pct(current.savings_fraction)})")
    return " ".join(parts)


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
            "neither", "No boundary gives a feasible pool-routing fleet: no lever applies.",
            None, None, None, None, threshold,
        )  # fmt: skip
    best_b = min(feasible, key=lambda b: (round(feasible[b].cost_per_hour_usd, 9), feasible[b].total_gpus, b))
    best_cost = feasible[best_b].cost_per_year_usd

    def compress_gain(b: int) -> float | None:
        if b not in feasible:
            return None
        cheapest = _cheapest_gamma(planner, b, gammas)
        if cheapest is None:
            return None
        return (feasible[b].cost_per_year_usd - cheapest.cost_per_year_usd) / homo_cost

    at_b, at_best = compress_gain(b_short), compress_gain(best_b)
    move = None if b_short not in feasible else (feasible[b_short].cost_per_year_usd - best_cost) / homo_cost
    if b_short not in feasible:
        direction = "raise B" if best_b > b_short else "lower B"
        text = (
            f"Pool routing at B = {b_short:,} is infeasible ({routed[b_short].reason}); "
            f"{direction} to {best_b:,}, where it saves "
            f"{_pct(1.0 - best_cost / homo_cost)} of the homogeneous cost."
        )
        return LeverAdvice(direction, text, None, best_b, None, at_best, threshold)
    move_gain = move or 0.0
    compress = at_b or 0.0
    compress_text = f"adding C&R at B = {b_short:,} saves {_pct(compress)} more" + (
        "" if at_best is None or best_b == b_short else f" ({_pct(at_best)} at B = {best_b:,})"
    )
    if best_b == b_short:
        move_text = f"B = {b_short:,} is already the cheapest boundary for pool routing"
    else:
        move_text = f"moving B from {b_short:,} to {best_b:,} saves {_pct(move_gain)} at γ = 1"
    if max(move_gain, compress) < threshold:
        lever = "neither"
        verdict = f"neither lever saves {_pct(threshold)} of the homogeneous cost"
    elif move_gain > compress:
        lever = "raise B" if best_b > b_short else "lower B"
        verdict = f"{lever} first"
        if compress >= threshold:
            verdict += ", then add C&R"
    else:
        lever = "add C&R"
        verdict = "add C&R"
        if move_gain >= threshold:
            verdict += f" (moving B to {best_b:,} helps too)"
    text = f"{move_text}; {compress_text}: {verdict}."
    return LeverAdvice(lever, text, move, best_b, at_b, at_best, threshold)


def _evaluate_current(
    planner: Planner, current_gpus: float, context_tokens: int | None
) -> tuple[CurrentFleet, str | None]:
    o = planner.options
    hw = planner.long_hardware
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
    note = None
    if instances * hw.gpus_per_instance != current_gpus:
        note = (
            f"current fleet: {current_gpus:g} GPUs is not a whole number of {hw.gpus_per_instance}-GPU "
            f"instances; evaluated as {instances} instance(s)"
        )
    moments = planner.stats(hw).range_moments(-1, math.inf, o.quantile)
    sizing = evaluate_pool(
        arrival_rate_per_s=o.arrival_rate_per_s,
        moments=moments,
        hardware=hw,
        context_tokens=context,
        service_model=o.service_model,
        instances=instances,
        slots_per_instance=slots,
        ttft_slo_s=o.ttft_slo_s,
        max_utilization=o.max_utilization,
    )
    return CurrentFleet(float(current_gpus), instances, context, slots, sizing), note


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
        short, long = eq8_instances(o.arrival_rate_per_s, alpha, mu.short_per_s, mu.long_per_s, 1.0)
        eq8 = 1.0 - (short + long) * mu.homogeneous_per_s / o.arrival_rate_per_s
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
            "routed_reason": cell.reason,
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
) -> tuple[list[dict], str]:
    """Homogeneous, pool routing at the audited rate's best B (γ = 1), and the best γ at the best plan's B."""
    homogeneous, routed, compressed, kept, skipped = [], [], [], [], []
    best_b = None if best is None else best.b_short_tokens
    for rate in rates:
        options = replace(planner.options, arrival_rate_per_s=float(rate))
        sweep = Planner(workload, planner.short_hardware, planner.long_hardware, options)
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
    note = (
        f"re-planned at each rate with B fixed: pool routing at B = {routed_b if routed_b else '–':,}"
        if routed_b
        else "re-planned at each rate"
    )
    if best_b is not None:
        note += f" (γ = 1); best = the cheapest γ of the grid at B = {best_b:,}"
    if skipped:
        note += "; no feasible fleet at " + ", ".join(f"{r:g}" for r in skipped) + " req/s (omitted)"
    return rows, note


def audit_workload(
    workload: Workload,
    short_hardware: PoolHardware,
    long_hardware: PoolHardware,
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
    planner = Planner(workload, short_hardware, long_hardware, plan_options)
    plan = planner.plan()
    homogeneous = plan.homogeneous
    if not homogeneous.feasible:
        homo_text = homogeneous.reason or "infeasible"
        raise ValidationError(
            f"the homogeneous fleet is infeasible ({homo_text}): the audit needs it as its baseline; "
            "relax --slo or --max-utilization"
        )
    homo_cost = homogeneous.cost_per_year_usd
    notes: list[str] = list(plan.notes)

    if options.b_short_tokens is not None:
        b_short = int(options.b_short_tokens)
    elif plan.pool_routing is not None:
        b_short = int(plan.pool_routing.b_short_tokens)
    else:
        b_short = candidates[0]
        notes.append(f"no boundary gives a feasible pool-routing fleet; auditing B = {b_short:,}")
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
    if mu.slots_basis == "kv-limit":
        notes.append(
            f"the planner has no feasible pool-routing fleet at B = {b_short:,}: μ_homo, μ_s and μ_l are "
            "taken at the KV limits, so the formula rows' GPUs are not on the planner's homogeneous "
            "fleet's footing (which may need fewer slots per instance to meet the SLO)"
        )
    rho = mu.throughput_ratio
    cliff = mu.cliff_ratio
    pricer = _Pricer(planner, homogeneous, options.current_gpus)
    rate = o.arrival_rate_per_s
    cap = o.max_utilization

    current = None
    if options.current_gpus is not None:
        current, note = _evaluate_current(planner, options.current_gpus, options.current_context_tokens)
        if note:
            notes.append(note)

    mu_long_text = "–" if mu.long_per_s is None else f"{mu.long_per_s:.4g}"
    slots_text = (
        "each pool at the slot count the planner chose"
        if mu.slots_basis == "planner"
        else "each pool at its KV limit (the planner has no feasible pool here)"
    )
    planner_pr = _planner_estimate(
        PLANNER_PR, "fleetopt planner, γ = 1", routed_cell, pricer, homo_cost,
        f"Both pools sized exactly (M/G/c, P99 TTFT ≤ SLO, utilization ≤ {cap:g}) at B = {b_short:,}.",
    )  # fmt: skip
    planner_cr = _planner_estimate(
        PLANNER_CR, f"fleetopt planner, γ = {gamma:g}", cr_cell, pricer, homo_cost,
        f"C&R band (B, {gamma:g}B] compressed with p_c = {p_c:g}; long pool recalibrated on what is left.",
    )  # fmt: skip
    best = plan.best
    if best is not None:
        where = (
            "one pool" if best.b_short_tokens is None else f"B = {best.b_short_tokens:,}, γ = {best.gamma:g}"
        )
        planner_best = _planner_estimate(
            PLANNER_BEST, "fleetopt planner, full sweep", best, pricer, homo_cost,
            f"The cheapest feasible cell over {len(candidates)} boundaries × {len(o.gammas)} γ ({where}).",
        )  # fmt: skip
    else:
        planner_best = AuditEstimate(
            PLANNER_BEST, "fleetopt planner, full sweep", None, None, None, None, None, None, None, None,
            None, None, None, False, "no fleet meets the SLO and the utilization cap", "",
        )  # fmt: skip

    closed = _formula_estimate(
        CLOSED_FORM, "pool-routing Eq. 7", closed_form_savings_fraction(alpha, rho), pricer, homogeneous,
        f"α = {alpha:.4g}, ρ = μ_s/μ_homo = {mu.short_per_s:.4g}/{mu.homogeneous_per_s:.4g} = {rho:.4g} "
        f"({slots_text}); the long pool is assumed to run at μ_homo. Applied to the homogeneous fleet.",
    )  # fmt: skip
    closed_cliff = _formula_estimate(
        CLOSED_FORM_CLIFF, "FleetOpt §2.2 reading of Eq. 7", closed_form_savings_fraction(alpha, cliff),
        pricer, homogeneous,
        f"ρ = n_max(B)/n_max(long) = {mu.short_kv_slots}/{mu.homogeneous_kv_slots} = {cliff:.4g}: "
        "a slot ratio taken for a throughput ratio, as the papers do.",
    )  # fmt: skip
    eq8 = _eq8_estimate(
        EQ8, "pool-routing Eq. 8", rate, alpha, mu.short_per_s, mu.long_per_s, mu.homogeneous_per_s, cap,
        pricer,
        f"G = αλ/μ_s + (1 − α)λ/μ_l with μ_s = {mu.short_per_s:.4g}, μ_l = {mu_long_text} req/s per instance "
        f"(μ_l on the requests above B), each pool divided by ρ_max = {cap:g}; no queueing, no SLO. "
        "Savings against λ/(μ_homo·ρ_max).",
    )  # fmt: skip
    alpha_compressed = compressed_short_fraction(alpha, beta, p_c)
    increment = compress_and_route_increment(beta, p_c, rho)
    closed_cr = _formula_estimate(
        CLOSED_FORM_CR, "pool-routing Eq. 7 + FleetOpt Eq. 14",
        closed_form_savings_fraction(alpha_compressed, rho), pricer, homogeneous,
        f"α' = α + β·p_c = {alpha:.4g} + {beta:.4g}·{p_c:g} = {alpha_compressed:.4g} at γ = {gamma:g}; adds "
        f"β·p_c·(1 − 1/ρ) = {_pct(increment)} at an unchanged ρ.",
    )  # fmt: skip
    estimates_cr = [closed_cr]
    if cr_cell.short is not None and _usable(cr_cell.short):
        cr_long = cr_cell.long
        mu_long_cr = cr_long.service_rate_per_instance_per_s if _usable(cr_long) else None
        if mu_long_cr is None and cr_long.arrival_rate_per_s > 0:
            _, _, _, _, long_moments = planner.split(b_short, gamma)
            mu_long_cr = pool_throughput_per_s(
                long_moments, long_hardware, long_hardware.max_slots(o.long_context_tokens), o.service_model
            )
        estimates_cr.append(
            _eq8_estimate(
                EQ8_CR, "pool-routing Eq. 8 with FleetOpt Eq. 14", rate, cr_cell.short_traffic_fraction,
                cr_cell.short.service_rate_per_instance_per_s, mu_long_cr, mu.homogeneous_per_s, cap, pricer,
                f"Eq. 8 at α' = {cr_cell.short_traffic_fraction:.4g} with the planner's μ on the "
                "post-compression pools (the long pool keeps only requests above γB).",
            )
        )  # fmt: skip

    homo_row = _planner_estimate(
        HOMOGENEOUS, "fleetopt planner, one pool", homogeneous, pricer, homo_cost,
        f"One pool at {o.long_context_tokens:,} tokens taking all traffic, sized like every planner pool.",
    )  # fmt: skip
    rows: list[AuditEstimate] = [homo_row]
    if current is not None:
        sizing = current.sizing
        state = (
            f"utilization {sizing.utilization:.1%}, P99 TTFT {sizing.p99_ttft_s * 1e3:.1f} ms"
            if math.isfinite(sizing.utilization)
            else "no usable figures"
        )
        versus, saved = pricer.compare(current.gpus, pricer.current_cost)
        rows.append(
            AuditEstimate(
                CURRENT, "given", None, float(current.instances), float(current.instances), current.instances,
                current.gpus, pricer.current_cost, 1.0 - pricer.current_cost / homo_cost, versus, saved, None,
                None, sizing.feasible, sizing.reason,
                f"Homogeneous at {current.context_tokens:,} tokens, {current.slots_per_instance} slots per "
                f"instance; under this workload: {state}.",
            )
        )  # fmt: skip
    rows += [
        _with_reference(closed, planner_pr),
        _with_reference(closed_cliff, planner_pr),
        _with_reference(eq8, planner_pr),
        planner_pr,
    ]
    rows += [_with_reference(e, planner_cr) for e in estimates_cr]
    rows += [planner_cr, planner_best]

    reasons = _reasons(
        alpha, mu, rho, cliff, rows, routed_cell, increment, planner_cr, planner_pr, gamma, p_c
    )
    order = _order_text([rows[[r.name for r in rows].index(n)] for n in (CLOSED_FORM, EQ8, PLANNER_PR)])
    lever = _lever(planner, b_short, candidates, o.gammas, homo_cost)
    archetype = archetype_statistics(workload, b_short)

    figures, threshold_rows = ([], [])
    if options.sweep_thresholds:
        figures, threshold_rows = _threshold_figures(planner, candidates, o.gammas, homogeneous)
    rates = options.rates_per_s
    if rates is None:
        rates = tuple(m * rate for m in DEFAULT_RATE_MULTIPLIERS) if rate > 0 else ()
    rate_rows, rate_note = [], None
    if rates:
        for value in rates:
            if not (value > 0 and math.isfinite(value)):
                raise ValidationError(f"rates: {value!r} req/s must be positive and finite")
        pr_b = None if plan.pool_routing is None else plan.pool_routing.b_short_tokens
        rate_rows, rate_note = _rate_sweep(workload, planner, rates, pr_b, best, o.gammas)
    return WorkloadAudit(
        options=replace(options, plan=plan_options),
        b_short_tokens=b_short,
        gamma=gamma,
        alpha=alpha,
        beta=beta,
        compressibility=p_c,
        throughputs=mu,
        estimates=tuple(rows),
        order=order,
        reasons=tuple(reasons),
        archetype=archetype,
        lever=lever,
        current=current,
        threshold_rows=tuple(threshold_rows),
        thresholds=tuple(figures),
        rate_rows=tuple(rate_rows),
        rate_sweep_note=rate_note,
        plan=plan,
        notes=tuple(notes),
    )


def _reasons(
    alpha: float,
    mu: Throughputs,
    rho: float,
    cliff: float,
    rows: Sequence[AuditEstimate],
    routed_cell: FleetCandidate,
    increment: float,
    planner_cr: AuditEstimate,
    planner_pr: AuditEstimate,
    gamma: float,
    p_c: float,
) -> list[str]:
    """Why the estimates differ, each sentence computed from the audit's numbers."""
    by_name = {r.name: r for r in rows}
    closed, eq8 = by_name[CLOSED_FORM], by_name[EQ8]
    reasons = []
    if mu.long_per_s is not None:
        difference = (1.0 - alpha) * (mu.homogeneous_per_s / mu.long_per_s - 1.0)
        slower = mu.long_per_s < mu.homogeneous_per_s
        reasons.append(
            f"Closed form vs Eq. 8: Eq. 7 assumes the long pool runs at μ_homo = {mu.homogeneous_per_s:.4g} "
            f"req/s per instance, but on the requests above B it runs at μ_l = {mu.long_per_s:.4g} "
            f"({max(mu.homogeneous_per_s / mu.long_per_s, mu.long_per_s / mu.homogeneous_per_s):.3g}× "
            f"{'slower' if slower else 'faster'}"
            + (" per request" if slower else ": these requests need fewer iterations than the average one")
            + "); "
            f"the closed form is off by (1 − α)(μ_homo/μ_l − 1) = {_pct(difference)} "
            f"({'over' if difference > 0 else 'under'}-prediction)."
        )
    else:
        reasons.append("Every request fits below B: no long pool, so Eq. 7 and Eq. 8 agree.")
    reasons.append(
        f"ρ = μ_s/μ_homo = {rho:.3g} is a throughput ratio "
        f"(slots {mu.short_slots} vs {mu.homogeneous_slots}, "
        f"{'as the planner chose them' if mu.slots_basis == 'planner' else 'at the KV limit'}; "
        f"{mu.throughput_ratio_kv:.3g} with every pool at its KV limit); the cliff ratio "
        f"{mu.short_kv_slots}/{mu.homogeneous_kv_slots} = {cliff:.4g} counts slots, not throughput "
        f"(FACTS §2 item 1): read as ρ it gives {_pct(by_name[CLOSED_FORM_CLIFF].savings_fraction)}."
    )
    if planner_pr.feasible and eq8.short_instances is not None and routed_cell.short is not None:
        extra_short = routed_cell.short.instances - eq8.short_instances
        extra_long = routed_cell.long.instances - (eq8.long_instances or 0.0)
        binding = (
            f"short pool {routed_cell.short.binding_constraint}, "
            f"long pool {routed_cell.long.binding_constraint}"
        )
        reasons.append(
            f"Eq. 8 vs planner: Eq. 8 at ρ_max is the planner's fluid limit (same μ's); the planner adds "
            f"{extra_short:.2f} short and {extra_long:.2f} long instances for whole instances and the "
            f"P99 TTFT SLO (what binds: {binding}) and compares with its own homogeneous fleet."
        )
    elif not planner_pr.feasible:
        reasons.append(f"The planner finds no feasible pool-routing fleet at this B: {planner_pr.reason}.")
    if planner_cr.savings_fraction is not None and planner_pr.savings_fraction is not None:
        real = planner_cr.savings_fraction - planner_pr.savings_fraction
        reasons.append(
            f"C&R at γ = {gamma:g}, p_c = {p_c:g}: the closed-form increment β·p_c·(1 − 1/ρ) = "
            f"{_pct(increment)} "
            f"keeps ρ and μ_l fixed; the planner, which recalibrates both pools, finds {_pct(real)}."
        )
    del closed
    return reasons
