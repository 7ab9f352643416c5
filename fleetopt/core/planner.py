"""The planner: the cheapest two-pool fleet that meets the SLO (FleetOpt Algorithm 1, extended).

For every candidate boundary B and compression band γ, the traffic splits into a short pool
(context B) and a long pool (the long context); each pool is sized exactly
(:func:`fleetopt.core.sizing.size_pool`) from exact pool statistics
(:class:`fleetopt.core.poolstats.PoolStatistics`), and the cheapest feasible cell wins. Beside
it: the homogeneous fleet (one pool at the long context), pool routing (the best B at γ = 1),
and the retrofit (the pool-routing fleet with C&R added later: short pool resized, long pool
kept).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from fleetopt.core.poolstats import PoolMoments, PoolStatistics
from fleetopt.core.service import SERVICE_MODELS, PoolHardware
from fleetopt.core.sizing import PoolSizing, evaluate_pool, size_pool
from fleetopt.core.workload import Workload
from fleetopt.defaults import (
    DEFAULT_GAMMAS,
    DEFAULT_LONG_CONTEXT_TOKENS,
    DEFAULT_MAX_UTILIZATION,
    DEFAULT_QUANTILE,
    HOURS_PER_YEAR,
)
from fleetopt.errors import ValidationError

#: The reference implementation treats a long pool with λ_l ≤ 0.01 req/s as empty (FACTS §1).
FLEET_SIM_EMPTY_RATE_PER_S = 0.01


@dataclass(frozen=True)
class PlanOptions:
    """What the planner is asked: rate, SLO, sweep ranges and model choices (seconds, tokens)."""

    arrival_rate_per_s: float
    ttft_slo_s: float
    long_context_tokens: int = DEFAULT_LONG_CONTEXT_TOKENS
    b_short_candidates: tuple[int, ...] | None = None
    gammas: tuple[float, ...] = DEFAULT_GAMMAS
    compressibility: float = 1.0
    service_model: str = "lockstep"
    max_utilization: float = DEFAULT_MAX_UTILIZATION
    quantile: float = DEFAULT_QUANTILE
    tpot_slo_s: float | None = None

    def validate(self) -> None:
        """Raise ValidationError for values outside the model's domain."""
        if not (self.arrival_rate_per_s >= 0 and math.isfinite(self.arrival_rate_per_s)):
            raise ValidationError(f"rate: {self.arrival_rate_per_s!r} req/s must be ≥ 0 and finite")
        if not (self.ttft_slo_s > 0 and math.isfinite(self.ttft_slo_s)):
            raise ValidationError(f"slo: {self.ttft_slo_s!r} s must be positive and finite")
        if self.long_context_tokens < 1:
            raise ValidationError(f"long context: {self.long_context_tokens!r} must be ≥ 1 token")
        if not (0 < self.max_utilization <= 1):
            raise ValidationError(f"max utilization: {self.max_utilization!r} must be in (0, 1]")
        if not (0 <= self.compressibility <= 1):
            raise ValidationError(f"compressibility: {self.compressibility!r} must be in [0, 1]")
        if not (0 < self.quantile < 1):
            raise ValidationError(f"quantile: {self.quantile!r} must be in (0, 1)")
        if self.service_model not in SERVICE_MODELS:
            raise ValidationError(
                f"service model: {self.service_model!r} is not one of {', '.join(SERVICE_MODELS)}"
            )
        if not self.gammas or any(not (1.0 <= g and math.isfinite(g)) for g in self.gammas):
            raise ValidationError(f"gamma: {list(self.gammas)} — every γ must be ≥ 1")
        if self.tpot_slo_s is not None and not self.tpot_slo_s > 0:
            raise ValidationError(f"tpot slo: {self.tpot_slo_s!r} s must be positive")
        for b in self.b_short_candidates or ():
            if not (1 <= b < self.long_context_tokens):
                raise ValidationError(
                    f"b-short: {b} must be between 1 and the long context "
                    f"{self.long_context_tokens:,} (exclusive)"
                )


@dataclass(frozen=True)
class FleetCandidate:
    """One fleet: a (B, γ) cell of the sweep, or a baseline.

    ``short`` is None for the homogeneous fleet; ``b_short_tokens`` is None there too.
    α = F(B), β = F(γB) − F(B), ``short_traffic_fraction`` = α' (what really reaches the short pool).
    """

    label: str
    b_short_tokens: int | None
    gamma: float
    alpha: float
    beta: float
    short_traffic_fraction: float
    short: PoolSizing | None
    long: PoolSizing
    feasible: bool
    reason: str | None

    @property
    def pools(self) -> tuple[PoolSizing, ...]:
        return (self.long,) if self.short is None else (self.short, self.long)

    @property
    def total_instances(self) -> int:
        return sum(p.instances for p in self.pools)

    @property
    def total_gpus(self) -> int:
        return sum(p.gpus for p in self.pools)

    @property
    def cost_per_hour_usd(self) -> float:
        return sum(p.cost_per_hour_usd for p in self.pools) if self.feasible else math.nan

    @property
    def cost_per_year_usd(self) -> float:
        return self.cost_per_hour_usd * HOURS_PER_YEAR


@dataclass(frozen=True)
class FleetPlan:
    """The planner's answer: the best fleet, the baselines and the whole (B, γ) grid."""

    options: PlanOptions
    short_hardware: PoolHardware
    long_hardware: PoolHardware
    best: FleetCandidate | None
    homogeneous: FleetCandidate
    pool_routing: FleetCandidate | None
    retrofit: FleetCandidate | None
    grid: tuple[FleetCandidate, ...]
    b_short_candidates: tuple[int, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def feasible(self) -> bool:
        return self.best is not None


def default_b_short_candidates(workload: Workload, long_context_tokens: int) -> tuple[int, ...]:
    """Powers of two and 1.5× powers of two from 512 to half the long context, plus CDF breakpoints.

    Boundaries past the longest request add nothing (all traffic is already short, and a larger
    context only costs slots), so the list stops at the first one that covers every request.
    """
    half = long_context_tokens // 2
    values: set[int] = set()
    power = 512
    while power <= half:
        values.add(power)
        if power * 3 // 2 <= half:
            values.add(power * 3 // 2)
        power *= 2
    if workload.kind == "cdf":
        values.update(int(t) for t in workload.metadata.get("breakpoints_tokens", ()) if 512 <= t <= half)
    ordered = sorted(values)
    longest = workload.max_total_tokens
    covering = [b for b in ordered if b >= longest]
    return tuple(b for b in ordered if b < longest) + tuple(covering[:1])


class Planner:
    """Sizes fleets for one workload, two hardware profiles and one set of options.

    Keeps the exact pool statistics (one per prefill chunk size) so that many cells, baselines
    and re-evaluations cost only their sizing.
    """

    def __init__(
        self,
        workload: Workload,
        short_hardware: PoolHardware,
        long_hardware: PoolHardware,
        options: PlanOptions,
        statistics: dict[int, PoolStatistics] | None = None,
    ):
        """``statistics``: prepared pool statistics of this same workload (by chunk size) to reuse,
        e.g. another planner's :meth:`prepared_statistics` when re-planning at another rate."""
        options.validate()
        self.workload = workload
        self.short_hardware = short_hardware
        self.long_hardware = long_hardware
        self.options = options
        self._stats: dict[int, PoolStatistics] = {} if statistics is None else statistics
        self._cells: dict[tuple[int, float], FleetCandidate] = {}
        self._splits: dict[tuple[int, float], tuple[float, float, float, PoolMoments, PoolMoments]] = {}
        self._short_ranges: dict[int, PoolMoments] = {}
        longest = workload.max_total_tokens
        if longest > options.long_context_tokens:
            share = 1.0 - self.stats(long_hardware).cdf(options.long_context_tokens)
            raise ValidationError(
                f"workload {workload.name}: {share:.4%} of requests are longer than the long context "
                f"{options.long_context_tokens:,} tokens (longest {longest:,}); raise --long-context"
            )

    def prepared_statistics(self) -> dict[int, PoolStatistics]:
        """The pool statistics prepared so far, by prefill chunk size (shareable; read-only use)."""
        return self._stats

    def stats(self, hardware: PoolHardware) -> PoolStatistics:
        chunk = hardware.prefill_chunk_tokens
        if chunk not in self._stats:
            self._stats[chunk] = PoolStatistics(self.workload, chunk)
        return self._stats[chunk]

    # -- pools --------------------------------------------------------------------------
    def _size(self, rate: float, moments: PoolMoments, hardware: PoolHardware, context: int) -> PoolSizing:
        o = self.options
        fixed = hardware.max_slots(context) if o.service_model == "fleet-sim" else None
        if fixed is not None and fixed < 1:
            fixed = None  # size_pool reports the KV misfit
        return size_pool(
            arrival_rate_per_s=rate,
            moments=moments,
            hardware=hardware,
            context_tokens=context,
            service_model=o.service_model,
            ttft_slo_s=o.ttft_slo_s,
            max_utilization=o.max_utilization,
            tpot_slo_s=o.tpot_slo_s,
            fixed_slots=fixed,
        )

    def split(self, b_short: int, gamma: float) -> tuple[float, float, float, PoolMoments, PoolMoments]:
        """(α, β, α', short moments, long moments) of the cell (B, γ) under the service model.

        lockstep: the exact mixture — the short pool holds L ≤ B plus the compressed share of the
        band (at L_in = B − L_out), the long pool everything else at its own lengths; α' is the
        short pool's exact share. fleet-sim (FACTS §1): the short pool's statistics come from
        L ≤ B only, the long pool's from L > γB only, and α' = α + p_c·(F(γB) − α).
        """
        key = (int(b_short), float(gamma))
        if key not in self._splits:
            self._splits[key] = self._split(*key)
        return self._splits[key]

    def _split(self, b_short: int, gamma: float) -> tuple[float, float, float, PoolMoments, PoolMoments]:
        o = self.options
        short_stats, long_stats = self.stats(self.short_hardware), self.stats(self.long_hardware)
        alpha = short_stats.cdf(b_short)
        beta = short_stats.cdf(gamma * b_short) - alpha
        if o.service_model == "fleet-sim":
            short_fraction = min(1.0, alpha + beta * o.compressibility)
            # fleet-sim uses the mean prefill only: no prefill quantile needed.
            if b_short not in self._short_ranges:  # the same for every γ
                self._short_ranges[b_short] = short_stats.range_moments(
                    -1, b_short, o.quantile, prefill_quantile=False
                )
            short = self._short_ranges[b_short]
            long = long_stats.range_moments(gamma * b_short, math.inf, o.quantile, prefill_quantile=False)
        else:
            short = short_stats.short_pool(b_short, gamma, o.compressibility, o.quantile)
            long = long_stats.long_pool(b_short, gamma, o.compressibility, o.quantile)
            short_fraction = short.traffic_fraction
        return alpha, beta, short_fraction, short, long

    def candidate(self, b_short: int, gamma: float) -> FleetCandidate:
        """Size both pools of the cell (B, γ) (memoized)."""
        key = (int(b_short), float(gamma))
        if key not in self._cells:
            self._cells[key] = self._size_cell(*key)
        return self._cells[key]

    def pool_rates(
        self, short_fraction: float, long_moments: PoolMoments, arrival_rate_per_s: float | None = None
    ) -> tuple[float, float]:
        """(λ_s, λ_l) of a split at the options' rate (or ``arrival_rate_per_s``), req/s.

        lockstep: λ_s = α'λ and λ_l = the long pool's exact share of λ. fleet-sim (FACTS §1):
        λ_l = (1 − α')λ, and a long pool with λ_l ≤ 0.01 req/s is empty.
        """
        rate = self.options.arrival_rate_per_s if arrival_rate_per_s is None else arrival_rate_per_s
        if self.options.service_model == "fleet-sim":
            long_rate = rate * (1.0 - short_fraction)
            if long_rate <= FLEET_SIM_EMPTY_RATE_PER_S:
                long_rate = 0.0
        else:
            long_rate = rate * long_moments.traffic_fraction
        return rate * short_fraction, max(0.0, long_rate)

    def pool_traffic(
        self, b_short_tokens: int | None, gamma: float = 1.0, arrival_rate_per_s: float | None = None
    ) -> tuple[tuple[float, PoolMoments], ...]:
        """(λ req/s, moments) of each pool of a fleet routed at (B, γ): (short, long), split as
        :meth:`split` and :meth:`pool_rates` split it; or of the one homogeneous pool (all traffic,
        on the long pool's hardware) when ``b_short_tokens`` is None. Rate: the options' unless given."""
        rate = self.options.arrival_rate_per_s if arrival_rate_per_s is None else arrival_rate_per_s
        if b_short_tokens is None:
            return (
                (rate, self.stats(self.long_hardware).range_moments(-1, math.inf, self.options.quantile)),
            )
        _, _, short_fraction, short_moments, long_moments = self.split(b_short_tokens, gamma)
        short_rate, long_rate = self.pool_rates(short_fraction, long_moments, rate)
        return ((short_rate, short_moments), (long_rate, long_moments))

    def _size_cell(self, b_short: int, gamma: float) -> FleetCandidate:
        o = self.options
        alpha, beta, short_fraction, short_moments, long_moments = self.split(b_short, gamma)
        short_rate, long_rate = self.pool_rates(short_fraction, long_moments)
        short = self._size(short_rate, short_moments, self.short_hardware, b_short)
        long = self._size(long_rate, long_moments, self.long_hardware, o.long_context_tokens)
        return _combine("cell", b_short, gamma, alpha, beta, short_fraction, short, long)

    def homogeneous(self) -> FleetCandidate:
        """One pool at the long context taking all traffic (on the long pool's hardware)."""
        ((rate, moments),) = self.pool_traffic(None)
        pool = self._size(rate, moments, self.long_hardware, self.options.long_context_tokens)
        return _combine("homogeneous", None, 1.0, 1.0, 0.0, 0.0, None, pool)

    def retrofit(self, routed: FleetCandidate, gamma: float) -> FleetCandidate:
        """The pool-routing fleet ``routed`` (γ = 1) with C&R added at γ: short pool resized, long kept.

        The kept long pool is evaluated under the post-compression long traffic; if it then breaks
        its SLO or cap, the retrofit is infeasible as is (FleetOpt Theorem 2 compares feasible fleets).
        """
        o = self.options
        assert routed.b_short_tokens is not None
        cell = self.candidate(routed.b_short_tokens, gamma)
        _, _, short_fraction, _, long_moments = self.split(routed.b_short_tokens, gamma)
        long_rate = cell.long.arrival_rate_per_s
        kept_long = evaluate_pool(
            arrival_rate_per_s=long_rate,
            moments=long_moments,
            hardware=self.long_hardware,
            context_tokens=o.long_context_tokens,
            service_model=o.service_model,
            instances=routed.long.instances,
            slots_per_instance=routed.long.slots_per_instance,
            ttft_slo_s=o.ttft_slo_s,
            max_utilization=o.max_utilization,
        )
        return _combine(
            "retrofit",
            routed.b_short_tokens,
            gamma,
            cell.alpha,
            cell.beta,
            short_fraction,
            cell.short,
            kept_long,
        )

    # -- the sweep ------------------------------------------------------------------------
    def plan(self) -> FleetPlan:
        """Sweep every (B, γ), pick the cheapest feasible cell, and build the baselines."""
        o = self.options
        candidates = o.b_short_candidates or default_b_short_candidates(self.workload, o.long_context_tokens)
        grid = tuple(self.candidate(b, g) for b in candidates for g in o.gammas)
        homogeneous = self.homogeneous()
        best = _cheapest([*grid, homogeneous])
        routed = _cheapest([c for c in grid if c.gamma == 1.0])
        if routed is None and 1.0 not in o.gammas:
            routed = _cheapest([self.candidate(b, 1.0) for b in candidates])
        if routed is not None:
            routed = _relabel(routed, "pool_routing")
        retrofit = None
        if routed is not None:
            options = [self.retrofit(routed, g) for g in o.gammas if g > 1.0]
            retrofit = _cheapest(options) or (options[0] if options else None)
        notes = []
        if best is None:
            notes.append("no fleet meets the SLO and the utilization cap; see each pool's reason")
        elif best.b_short_tokens is None:
            notes.append("no two-pool fleet beats the homogeneous fleet here; the best plan is one pool")
        return FleetPlan(
            options=o,
            short_hardware=self.short_hardware,
            long_hardware=self.long_hardware,
            best=_relabel(best, "best") if best is not None else None,
            homogeneous=homogeneous,
            pool_routing=routed,
            retrofit=retrofit,
            grid=grid,
            b_short_candidates=tuple(candidates),
            notes=tuple(notes),
        )


def _combine(
    label: str,
    b_short: int | None,
    gamma: float,
    alpha: float,
    beta: float,
    short_fraction: float,
    short: PoolSizing | None,
    long: PoolSizing,
) -> FleetCandidate:
    pools = [p for p in (short, long) if p is not None]
    reasons = [
        f"{name} pool: {p.reason}"
        for name, p in zip(("short", "long"), (short, long), strict=True)
        if p and not p.feasible
    ]
    if short is None:
        reasons = [f"pool: {long.reason}"] if not long.feasible else []
    return FleetCandidate(
        label=label,
        b_short_tokens=b_short,
        gamma=gamma,
        alpha=alpha,
        beta=beta,
        short_traffic_fraction=short_fraction,
        short=short,
        long=long,
        feasible=all(p.feasible for p in pools),
        reason="; ".join(reasons) or None,
    )


def _cheapest(cells) -> FleetCandidate | None:
    """The feasible cell of least cost; ties go to fewer GPUs, then smaller γ, then smaller B."""
    feasible = [c for c in cells if c.feasible]
    if not feasible:
        return None
    return min(
        feasible, key=lambda c: (round(c.cost_per_hour_usd, 9), c.total_gpus, c.gamma, c.b_short_tokens or 0)
    )


def _relabel(candidate: FleetCandidate, label: str) -> FleetCandidate:
    from dataclasses import replace

    return replace(candidate, label=label)


def plan_fleet(
    workload: Workload, short_hardware: PoolHardware, long_hardware: PoolHardware, options: PlanOptions
) -> FleetPlan:
    """Plan the cheapest fleet for ``workload`` — the one call behind ``fleetopt plan``.

    Returns a :class:`FleetPlan`; ``plan.best`` is None when no cell is feasible (never an
    infeasible fleet presented as a plan).
    """
    return Planner(workload, short_hardware, long_hardware, options).plan()


def gamma_grid(start: float = 1.0, stop: float = 2.0, step: float = 0.1) -> tuple[float, ...]:
    """γ values start, start+step, …, stop (rounded to 10 decimals)."""
    count = int(round((stop - start) / step)) + 1
    return tuple(float(np.round(start + k * step, 10)) for k in range(count))
