"""The planner: the cheapest routed fleet that meets the SLO (FleetOpt Algorithm 1, extended to K pools).

For every candidate boundary B and compression band γ, the traffic splits into a short pool
(context B) and a long pool (the long context); each pool is sized exactly
(:func:`fleetopt.core.sizing.size_pool`) from exact pool statistics
(:class:`fleetopt.core.poolstats.PoolStatistics`), and the cheapest feasible cell wins. Beside
it: the homogeneous fleet (one pool at the long context), pool routing (the best B at γ = 1),
and the retrofit (the pool-routing fleet with C&R added later: short pool resized, long pool
kept). With ``max_pools`` = K > 2 the planner also finds the cheapest fleet of 3 … K pools by
dynamic programming over the candidate boundaries (exact: a fleet's cost is the sum of its
pools' costs, and each pool's sizing depends only on its own boundaries and the C&R band).

How a pool's traffic and service times follow from the routing is the service model's
(:class:`fleetopt.core.service.ServiceModel`); this module never asks which model it is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from fleetopt.core.arrivals import parse_rate_basis, pool_arrival_scv
from fleetopt.core.poolstats import PoolMoments, PoolStatistics
from fleetopt.core.routing import Routing
from fleetopt.core.service import PoolHardware, PoolShare, ServiceModel, get_service_model
from fleetopt.core.sizing import PoolSizing, evaluate_pool, size_pool
from fleetopt.core.workload import Workload
from fleetopt.defaults import (
    DEFAULT_COMPRESSIBILITY,
    DEFAULT_GAMMAS,
    DEFAULT_LONG_CONTEXT_TOKENS,
    DEFAULT_MAX_CUT_FRACTION,
    DEFAULT_MAX_UTILIZATION,
    DEFAULT_POOL_COUNT,
    DEFAULT_QUANTILE,
    DEFAULT_SERVICE_MODEL,
    HOURS_PER_YEAR,
)
from fleetopt.errors import ValidationError

#: The most pools ``--pools`` accepts (the K-pool sweep grows as (boundary candidates)^2 per pool).
MAX_POOLS = 8

#: The most prefill iterations (⌈longest prompt / prefill_chunk_tokens⌉) the engine model's TTFT
#: law is evaluated for. Its cost grows about with the square of the iterations (numpy over levels
#: and lags, :mod:`fleetopt.core.engine.ttft`): a full plan takes ~0.2 s at 26, ~1.5–2 s at 103, ~13 s at
#: 1,028 and ~25 s at 2,017 on a 2-core VM (benchmarks/bench_ttft.py); 2,048 covers 1M-token
#: prompts in 512-token chunks. Past it a chunk is refused with what would work (a few-token chunk
#: on long prompts would run for hours).
MAX_ENGINE_PREFILL_ITERATIONS = 2048


@dataclass(frozen=True)
class PlanOptions:
    """What the planner is asked: rate, SLO, sweep ranges and model choices (seconds, tokens).

    ``max_pools``: the most pools a fleet may have (2 = the papers' short/long split; K > 2 also
    sweeps fleets of 3 … K pools exactly, see :meth:`Planner.plan`).

    ``sizing_rate_per_s`` is the rate every pool is sized for. With a rate basis other than the
    mean it is the mean rate × max(1, basis / mean) of the log's windowed profile, and
    ``mean_rate_per_s`` keeps the mean (``rate_basis``: ``mean``, ``peak`` or ``pNN``,
    ``rate_window_s``: the profile's window; :mod:`fleetopt.core.arrivals`); left out (None) it is
    the sizing rate (the mean basis), so it always reads as a number.
    ``arrival_dispersion``: (τ seconds, D(τ)) points of the arrivals' within-window index of
    dispersion; each pool's C_a² follows from it (:func:`fleetopt.core.arrivals.pool_arrival_scv`).
    Empty: Poisson arrivals, C_a² = 1 (the papers' assumption and the core's default)."""

    sizing_rate_per_s: float
    ttft_slo_s: float
    long_context_tokens: int = DEFAULT_LONG_CONTEXT_TOKENS
    b_short_candidates: tuple[int, ...] | None = None
    gammas: tuple[float, ...] = DEFAULT_GAMMAS
    compressibility: float = DEFAULT_COMPRESSIBILITY
    max_cut_fraction: float = DEFAULT_MAX_CUT_FRACTION
    service_model: str = DEFAULT_SERVICE_MODEL
    max_utilization: float = DEFAULT_MAX_UTILIZATION
    quantile: float = DEFAULT_QUANTILE
    tpot_slo_s: float | None = None
    max_pools: int = DEFAULT_POOL_COUNT
    rate_basis: str = "mean"
    mean_rate_per_s: float | None = None  # None: the sizing rate (set in __post_init__)
    rate_window_s: float | None = None
    arrival_dispersion: tuple[tuple[float, float], ...] = ()

    def __post_init__(self) -> None:
        if self.mean_rate_per_s is None:  # the mean basis: the mean is the sizing rate
            object.__setattr__(self, "mean_rate_per_s", self.sizing_rate_per_s)

    @property
    def model(self) -> ServiceModel:
        """The service model named by ``service_model``."""
        return get_service_model(self.service_model)

    @property
    def basis_factor(self) -> float:
        """Sizing rate / mean rate (1 on the mean basis)."""
        mean = self.mean_rate_per_s
        return self.sizing_rate_per_s / mean if mean > 0 else 1.0

    def validate(self) -> None:
        """Raise ValidationError for values outside the model's domain."""
        if not (self.sizing_rate_per_s >= 0 and math.isfinite(self.sizing_rate_per_s)):
            raise ValidationError(f"rate: {self.sizing_rate_per_s!r} req/s must be ≥ 0 and finite")
        if not (self.ttft_slo_s > 0 and math.isfinite(self.ttft_slo_s)):
            raise ValidationError(f"slo: {self.ttft_slo_s!r} s must be positive and finite")
        if self.long_context_tokens < 1:
            raise ValidationError(f"long context: {self.long_context_tokens!r} must be ≥ 1 token")
        if not (0 < self.max_utilization <= 1):
            raise ValidationError(f"max utilization: {self.max_utilization!r} must be in (0, 1]")
        if not (0 <= self.compressibility <= 1):
            raise ValidationError(f"compressibility: {self.compressibility!r} must be in [0, 1]")
        if not (0 < self.max_cut_fraction <= 1):
            raise ValidationError(f"max cut: {self.max_cut_fraction!r} must be in (0, 1]")
        if not (0 < self.quantile < 1):
            raise ValidationError(f"quantile: {self.quantile!r} must be in (0, 1)")
        get_service_model(self.service_model)
        if not (2 <= self.max_pools <= MAX_POOLS):
            raise ValidationError(f"pools: {self.max_pools!r} must be a whole number from 2 to {MAX_POOLS}")
        if not self.gammas or any(not (1.0 <= g and math.isfinite(g)) for g in self.gammas):
            raise ValidationError(f"gamma: {list(self.gammas)} — every γ must be ≥ 1")
        if self.tpot_slo_s is not None and not self.tpot_slo_s > 0:
            raise ValidationError(f"tpot slo: {self.tpot_slo_s!r} s must be positive")
        parse_rate_basis(self.rate_basis)
        mean = self.mean_rate_per_s
        if not (0 <= mean <= self.sizing_rate_per_s * (1 + 1e-12) and math.isfinite(mean)):
            raise ValidationError(
                f"mean rate: {mean!r} req/s must be ≥ 0 and at most the sizing rate "
                f"{self.sizing_rate_per_s!r}"
            )
        if self.rate_window_s is not None and not (
            self.rate_window_s > 0 and math.isfinite(self.rate_window_s)
        ):
            raise ValidationError(f"rate window: {self.rate_window_s!r} s must be positive and finite")
        for point in self.arrival_dispersion:
            if len(point) != 2 or not all(math.isfinite(v) and v >= 0 for v in point) or not point[0] > 0:
                raise ValidationError(
                    f"arrival dispersion: {point!r} must be a (time scale s > 0, index of dispersion ≥ 0) "
                    "pair"
                )
        for b in self.b_short_candidates or ():
            if not (1 <= b < self.long_context_tokens):
                raise ValidationError(
                    f"b-short: {b} must be between 1 and the long context "
                    f"{self.long_context_tokens:,} (exclusive)"
                )


@dataclass(frozen=True)
class FleetCandidate:
    """One fleet: a cell of the sweep, a K-pool fleet, or a baseline.

    ``pools`` and ``hardware`` run from the shortest pool to the longest; one pool is the
    homogeneous fleet. α = F(B₁), β = F(γB₁) − F(B₁), ``short_traffic_fraction`` = α' (what
    really reaches the first pool; 0 for the homogeneous fleet). An infeasible fleet's pools say
    why in their ``problems``.
    """

    label: str
    routing: Routing
    alpha: float
    beta: float
    short_traffic_fraction: float
    pools: tuple[PoolSizing, ...]
    hardware: tuple[PoolHardware, ...]

    @property
    def feasible(self) -> bool:
        """Every pool meets its SLO and cap."""
        return all(p.feasible for p in self.pools)

    @property
    def pool_count(self) -> int:
        return len(self.pools)

    @property
    def pool_names(self) -> tuple[str, ...]:
        """``homogeneous``; ``short``, ``long``; or ``pool-1`` … ``pool-K``."""
        return self.routing.pool_names

    @property
    def b_short_tokens(self) -> int | None:
        """B₁, the first boundary (None for the homogeneous fleet)."""
        return self.routing.b_short_tokens

    @property
    def gamma(self) -> float:
        return self.routing.gamma

    @property
    def short(self) -> PoolSizing | None:
        """The first (shortest) pool, or None for the homogeneous fleet."""
        return self.pools[0] if len(self.pools) > 1 else None

    @property
    def long(self) -> PoolSizing:
        """The last pool, at the long context (the only pool of a homogeneous fleet)."""
        return self.pools[-1]

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
    """The planner's answer: the best fleet, the baselines and the whole (B, γ) grid.

    ``best_by_pool_count`` holds the cheapest feasible fleet with exactly k pools, for
    k = 1 … ``options.max_pools`` (None where no such fleet is feasible).
    """

    options: PlanOptions
    hardware: tuple[PoolHardware, ...]
    best: FleetCandidate | None
    homogeneous: FleetCandidate
    pool_routing: FleetCandidate | None
    retrofit: FleetCandidate | None
    grid: tuple[FleetCandidate, ...]
    b_short_candidates: tuple[int, ...]
    best_by_pool_count: tuple[FleetCandidate | None, ...] = ()

    @property
    def feasible(self) -> bool:
        return self.best is not None

    def hardware_of(self, pool_count: int, index: int) -> PoolHardware:
        """The hardware pool ``index`` of a ``pool_count``-pool fleet runs on (:func:`pool_hardware_of`)."""
        return pool_hardware_of(self.hardware, pool_count, index)

    @property
    def short_hardware(self) -> PoolHardware:
        """The first pool's hardware in a two-pool fleet (the plan document's ``profiles.short``)."""
        return self.hardware_of(2, 0)

    @property
    def long_hardware(self) -> PoolHardware:
        """The last (long-context) pool's hardware, also the homogeneous fleet's (``profiles.long``)."""
        return self.hardware_of(1, 0)


def hardware_position(profiles: int, pool_count: int, index: int) -> int:
    """Which of ``profiles`` per-pool hardware profiles pool ``index`` of a ``pool_count``-pool
    fleet runs on: the last profile for the last (long-context) pool, the homogeneous fleet's one
    pool included; profile ``index`` for the others, the last-but-one for pools past it (so
    (short, long) runs every pool but the last on ``short``, and one profile runs every pool)."""
    if index == pool_count - 1 or profiles == 1:
        return profiles - 1
    return min(index, profiles - 2)


def pool_hardware_of(hardware: tuple[PoolHardware, ...], pool_count: int, index: int) -> PoolHardware:
    """The hardware pool ``index`` of a ``pool_count``-pool fleet runs on (:func:`hardware_position`)."""
    return hardware[hardware_position(len(hardware), pool_count, index)]


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
    """Sizes fleets for one workload, per-pool hardware profiles and one set of options.

    ``hardware``: one profile per pool, shortest pool first; the last (long-context) pool and the
    homogeneous fleet run on the last profile, a fleet's other pools on theirs by position
    (:func:`hardware_position`; ``(h,)`` runs every pool on ``h``, ``(short, long)`` is the papers'
    split). Keeps the exact pool statistics (one per prefill
    chunk size) and every pool it has sized, so that many cells, baselines and re-evaluations
    cost only their sizing.
    """

    def __init__(
        self,
        workload: Workload,
        hardware: tuple[PoolHardware, ...],
        options: PlanOptions,
        statistics: dict[int, PoolStatistics] | None = None,
    ):
        """``statistics``: prepared pool statistics of this same workload (by chunk size) to reuse,
        e.g. another planner's :meth:`prepared_statistics` when re-planning at another rate."""
        options.validate()
        if not hardware or not all(isinstance(h, PoolHardware) for h in hardware):
            raise ValidationError(f"hardware: {hardware!r} must be one or more pool hardware profiles")
        self.workload = workload
        self.hardware = tuple(hardware)
        self.options = options
        self.model: ServiceModel = options.model
        self._stats: dict[int, PoolStatistics] = {} if statistics is None else statistics
        self._fleets: dict[Routing, FleetCandidate] = {}
        self._shares: dict[tuple, PoolShare] = {}
        self._pools: dict[tuple, PoolSizing] = {}
        self._pools_by_content: dict[tuple, PoolSizing] = {}
        self._instance_hints: dict[tuple, int] = {}  # the last pool sized at (index, context)
        longest = workload.max_total_tokens
        if longest > options.long_context_tokens:
            share = 1.0 - self.stats(self.hardware[-1]).cdf(options.long_context_tokens)
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
            if self.model.uses_prompt_levels:
                _check_prefill_iterations(self.workload, hardware)
            self._stats[chunk] = PoolStatistics(
                self.workload, chunk, prompt_levels=self.model.uses_prompt_levels
            )
        return self._stats[chunk]

    def routing(self, b_short_tokens: int | None, gamma: float = 1.0) -> Routing:
        """The two-pool routing at (B, γ) with the options' p_c (one pool when B is None)."""
        o = self.options
        return Routing.two_pool(b_short_tokens, gamma, o.compressibility, o.max_cut_fraction)

    # -- traffic --------------------------------------------------------------------------
    def pool_hardware(self, routing: Routing) -> tuple[PoolHardware, ...]:
        """Each pool's hardware (:meth:`hardware_of`)."""
        return tuple(self.hardware_of(routing.pool_count, k) for k in range(routing.pool_count))

    def hardware_of(self, pool_count: int, index: int) -> PoolHardware:
        """The hardware pool ``index`` of a ``pool_count``-pool fleet runs on (:func:`hardware_position`)."""
        return pool_hardware_of(self.hardware, pool_count, index)

    @staticmethod
    def _pool_key(routing: Routing, index: int) -> tuple:
        """What the first or second pool of ``routing`` depends on (equal keys, identical pools);
        later pools depend on their range only and are keyed by it (:meth:`range_pool`)."""
        bounds = routing.boundaries_tokens
        if not bounds:
            return ("homogeneous",)
        top = routing.pool_ranges[index][1]
        return (index, bounds[0], routing.gamma, routing.compressibility, routing.max_cut_fraction, top)

    def pool_share(self, routing: Routing, index: int) -> PoolShare:
        """Pool ``index`` of ``routing``: its share of requests and their moments (memoized)."""
        if index >= 2:
            return self._range_share(*routing.pool_ranges[index], self.hardware_of(routing.pool_count, index))
        key = self._pool_key(routing, index)
        if key not in self._shares:
            hardware = self.hardware_of(routing.pool_count, index)
            self._shares[key] = self.model.pool_share(
                self.stats(hardware), routing, index, self.options.quantile
            )
        return self._shares[key]

    def _range_share(self, lo_tokens: float, hi_tokens: float, hardware: PoolHardware) -> PoolShare:
        chunk = hardware.prefill_chunk_tokens  # the statistics it is drawn from
        key = (True, lo_tokens, hi_tokens, chunk)
        if key not in self._shares:
            self._shares[key] = self.model.range_share(
                self.stats(hardware), lo_tokens, hi_tokens, self.options.quantile
            )
        return self._shares[key]

    def pool_traffic(
        self, routing: Routing, sizing_rate_per_s: float | None = None
    ) -> tuple[tuple[float, PoolMoments], ...]:
        """(λ req/s, moments) of each pool of a routed fleet, as the service model splits it
        (rate: the options' unless given)."""
        rate = self.options.sizing_rate_per_s if sizing_rate_per_s is None else sizing_rate_per_s
        shares = [self.pool_share(routing, k) for k in range(routing.pool_count)]
        return tuple((self.model.pool_rate(sh, k, rate), sh.moments) for k, sh in enumerate(shares))

    def routing_fractions(self, routing: Routing) -> tuple[float, float, float]:
        """(α, β, α') of a routed fleet: F(B₁), F(γB₁) − F(B₁), and the first pool's real share."""
        alpha, beta = self._alpha_beta(routing)
        return alpha, beta, self.pool_share(routing, 0).traffic_fraction

    def _alpha_beta(self, routing: Routing) -> tuple[float, float]:
        """(α, β) = (F(B₁), F(γB₁) − F(B₁)), by the first pool's statistics."""
        stats = self.stats(self.hardware_of(routing.pool_count, 0))
        b = routing.boundaries_tokens[0]
        alpha = stats.cdf(b)
        return alpha, stats.cdf(routing.gamma * b) - alpha

    # -- pools and fleets -------------------------------------------------------------------
    def _size(
        self, rate: float, moments: PoolMoments, hardware: PoolHardware, context: int, hint: int | None = None
    ) -> PoolSizing:
        o = self.options
        return size_pool(
            arrival_rate_per_s=rate,
            moments=moments,
            hardware=hardware,
            context_tokens=context,
            service_model=self.model,
            ttft_slo_s=o.ttft_slo_s,
            max_utilization=o.max_utilization,
            tpot_slo_s=o.tpot_slo_s,
            fixed_slots=self.model.fixed_slots(hardware, context),
            arrival_scv=self.arrival_scv(rate, moments, hardware, context),
            instances_hint=hint,
        )

    def arrival_scv(
        self, pool_rate_per_s: float, moments: PoolMoments, hardware: PoolHardware, context_tokens: int,
        fleet_rate_per_s: float | None = None,
    ) -> float:  # fmt: skip
        """C_a² of a pool's arrivals (:func:`fleetopt.core.arrivals.pool_arrival_scv`): its share of
        the fleet's requests, and its mean slot-holding time h = E[S] at the KV limit (a full batch,
        the longest a request holds its slot under the model). 1 for Poisson arrivals."""
        o = self.options
        if not o.arrival_dispersion or not pool_rate_per_s > 0 or moments.is_empty:
            return 1.0
        fleet_rate = o.sizing_rate_per_s if fleet_rate_per_s is None else fleet_rate_per_s
        slots = hardware.max_slots(context_tokens)
        if slots < 1 or not fleet_rate > 0:
            return 1.0
        holding_s = float(self.model.service_times(moments, hardware, float(slots))[0])
        return pool_arrival_scv(o.arrival_dispersion, min(1.0, pool_rate_per_s / fleet_rate), holding_s)

    def pool_arrival_scvs(
        self, routing: Routing, sizing_rate_per_s: float | None = None
    ) -> tuple[float, ...]:
        """C_a² of each pool of a routed fleet (1 each for Poisson arrivals)."""
        rate = self.options.sizing_rate_per_s if sizing_rate_per_s is None else sizing_rate_per_s
        contexts = routing.context_tokens(self.options.long_context_tokens)
        return tuple(
            self.arrival_scv(pool_rate, moments, self.hardware_of(routing.pool_count, k), contexts[k], rate)
            for k, (pool_rate, moments) in enumerate(self.pool_traffic(routing, rate))
        )

    def sized_pool(self, routing: Routing, index: int) -> PoolSizing:
        """Pool ``index`` of ``routing``, sized (memoized: the K-pool sweep reuses pools)."""
        if index >= 2:
            return self.range_pool(*routing.pool_ranges[index], index)
        context = routing.context_tokens(self.options.long_context_tokens)[index]
        return self._sized_once(
            self._pool_key(routing, index), self.pool_share(routing, index), index,
            self.hardware_of(routing.pool_count, index), context,
        )  # fmt: skip

    def range_pool(self, lo_tokens: float, hi_tokens: float, index: int) -> PoolSizing:
        """Pool ``index`` ≥ 2 of a fleet, serving lo < L ≤ hi (the last pool when hi = ∞), sized
        (memoized).

        Such a pool depends on its own range and hardware only (the C&R band ends within the second
        pool), so it is the same pool in every routing that has it there."""
        last = math.isinf(hi_tokens)
        position = hardware_position(len(self.hardware), index + 1 if last else index + 2, index)
        hardware = self.hardware[position]
        return self._sized_once(
            (True, lo_tokens, hi_tokens, position), self._range_share(lo_tokens, hi_tokens, hardware), 2,
            hardware,
            self.options.long_context_tokens if last else int(hi_tokens),
        )  # fmt: skip

    def _sized_once(
        self, key: tuple, share: PoolShare, index: int, hardware: PoolHardware, context_tokens: int
    ) -> PoolSizing:
        if key not in self._pools:
            rate = self.model.pool_rate(share, index, self.options.sizing_rate_per_s)
            # other cells often route the very same requests to a pool (the long pool of B at γ
            # and of B' at γ' when γB = γ'B', a short pool whose band holds no request): equal
            # rate, statistics, hardware and context size equally
            same = (hardware, context_tokens, rate, share.moments)
            sized = self._pools_by_content.get(same)
            if sized is None:
                # neighbouring cells (the next γ, the next B) size similar pools: the last answer at
                # the same position and context starts the search (it never changes the answer)
                where = (index, context_tokens)
                hint = self._instance_hints.get(where)
                sized = self._size(rate, share.moments, hardware, context_tokens, hint)
                if sized.feasible and sized.instances > 0:
                    self._instance_hints[where] = sized.instances
                self._pools_by_content[same] = sized
            self._pools[key] = sized
        return self._pools[key]

    def fleet(self, routing: Routing, label: str = "cell") -> FleetCandidate:
        """The fleet routed by ``routing``, every pool sized (memoized)."""
        if routing not in self._fleets:
            pools = tuple(self.sized_pool(routing, k) for k in range(routing.pool_count))
            if routing.boundaries_tokens:
                alpha, beta, first = self.routing_fractions(routing)
            else:
                alpha, beta, first = 1.0, 0.0, 0.0
            hardware = self.pool_hardware(routing)
            self._fleets[routing] = FleetCandidate(label, routing, alpha, beta, first, pools, hardware)
        fleet = self._fleets[routing]
        return fleet if fleet.label == label else replace(fleet, label=label)

    def candidate(self, b_short: int, gamma: float) -> FleetCandidate:
        """Size both pools of the two-pool cell (B, γ) (memoized)."""
        return self.fleet(self.routing(int(b_short), float(gamma)))

    def homogeneous(self) -> FleetCandidate:
        """One pool at the long context taking all traffic (on the long pool's hardware)."""
        return self.fleet(Routing.homogeneous(), "homogeneous")

    def retrofit(self, routed: FleetCandidate, gamma: float) -> FleetCandidate:
        """The pool-routing fleet ``routed`` (γ = 1) with C&R added at γ: short pool resized, long kept.

        The kept long pool is evaluated under the post-compression long traffic; if it then breaks
        its SLO or cap, the retrofit is infeasible as is (FleetOpt Theorem 2 compares feasible fleets).
        """
        o = self.options
        assert routed.b_short_tokens is not None
        cell = self.candidate(routed.b_short_tokens, gamma)
        long_rate, long_moments = self.pool_traffic(cell.routing)[-1]
        long_hardware = cell.hardware[-1]
        kept_long = evaluate_pool(
            arrival_rate_per_s=long_rate,
            moments=long_moments,
            hardware=long_hardware,
            context_tokens=o.long_context_tokens,
            service_model=self.model,
            instances=routed.long.instances,
            slots_per_instance=routed.long.slots_per_instance,
            ttft_slo_s=o.ttft_slo_s,
            max_utilization=o.max_utilization,
            arrival_scv=self.arrival_scv(long_rate, long_moments, long_hardware, o.long_context_tokens),
        )
        return replace(cell, label="retrofit", pools=(cell.pools[0], kept_long))

    # -- K pools ---------------------------------------------------------------------------
    def best_k_pool_fleet(self, pool_count: int, candidates: tuple[int, ...]) -> FleetCandidate | None:
        """The cheapest feasible fleet of exactly ``pool_count`` ≥ 3 pools (None if there is none).

        Boundaries come from ``candidates`` (increasing), γ from the options; the C&R band must end
        within the second pool. Exact dynamic programming: a fleet's (cost, GPUs) is the sum over
        its pools, pool 1 depends on (B₁, γ), pool 2 on (B₁, γ, B₂), pool k ≥ 3 on (B_{k−1}, B_k)
        only, so the cheapest path through increasing boundaries is the cheapest fleet. Ties go to
        fewer GPUs, then smaller γ, then smaller boundaries (lexicographically).
        """
        bounds = tuple(sorted(set(candidates)))
        m, inner = len(bounds), pool_count - 1  # inner = number of boundaries
        if m < inner:
            return None
        best_path: tuple | None = None
        for gamma in self.options.gammas:
            # head[j]: the cheapest (cost, gpus, boundaries) of the first two pools with B₂ = bounds[j].
            head: list[tuple | None] = [None] * m
            for i, b1 in enumerate(bounds):
                for j in range(i + 1, m):
                    if math.floor(gamma * b1) > bounds[j]:
                        continue
                    routing = Routing(
                        (b1, bounds[j]), gamma, self.options.compressibility, self.options.max_cut_fraction
                    )
                    pools = (self.sized_pool(routing, 0), self.sized_pool(routing, 1))
                    score = _score(pools)
                    if score is not None:
                        path = (*score, (b1, bounds[j]))
                        if head[j] is None or path < head[j]:
                            head[j] = path
            # extend with middle pools (B_{k−1}, B_k], then close with the last pool (B_{K−1}, ∞).
            layer = head
            for index in range(2, inner):
                nxt: list[tuple | None] = [None] * m
                for i in range(m):
                    for j in range(i + 1, m) if layer[i] is not None else ():
                        path = _extend(layer[i], self.range_pool(bounds[i], bounds[j], index), bounds[j])
                        if path is not None and (nxt[j] is None or path < nxt[j]):
                            nxt[j] = path
                layer = nxt
            for i in range(m):
                path = (
                    None
                    if layer[i] is None
                    else _extend(layer[i], self.range_pool(bounds[i], math.inf, pool_count - 1), None)
                )
                if path is not None:
                    closed = (path[0], path[1], gamma, path[2])
                    best_path = closed if best_path is None or closed < best_path else best_path
        if best_path is None:
            return None
        routing = Routing(
            best_path[3], best_path[2], self.options.compressibility, self.options.max_cut_fraction
        )
        return self.fleet(routing, f"{pool_count}-pool")

    # -- the sweep ------------------------------------------------------------------------
    def plan(self) -> FleetPlan:
        """Sweep every (B, γ), pick the cheapest feasible cell, and build the baselines.

        With ``max_pools`` > 2, fleets of 3 … K pools are swept too (:meth:`best_k_pool_fleet`),
        and the best plan is the cheapest over every pool count 1 … K (so a K-pool plan is never
        dearer than the best two-pool plan on the same inputs).
        """
        o = self.options
        candidates = o.b_short_candidates or default_b_short_candidates(self.workload, o.long_context_tokens)
        grid = tuple(self.candidate(b, g) for b in candidates for g in o.gammas)
        homogeneous = self.homogeneous()
        two_pool = _cheapest(grid)
        by_count: list[FleetCandidate | None] = [homogeneous if homogeneous.feasible else None, two_pool]
        for count in range(3, o.max_pools + 1):
            by_count.append(self.best_k_pool_fleet(count, tuple(candidates)))
        best = _cheapest([*grid, homogeneous, *(c for c in by_count[2:] if c is not None)])
        routed = _cheapest([c for c in grid if c.gamma == 1.0])
        if routed is None and 1.0 not in o.gammas:
            routed = _cheapest([self.candidate(b, 1.0) for b in candidates])
        if routed is not None:
            routed = replace(routed, label="pool_routing")
        retrofit = None
        if routed is not None:
            options = [self.retrofit(routed, g) for g in o.gammas if g > 1.0]
            retrofit = _cheapest(options) or (options[0] if options else None)
        return FleetPlan(
            options=o,
            hardware=self.hardware,
            best=replace(best, label="best") if best is not None else None,
            homogeneous=homogeneous,
            pool_routing=routed,
            retrofit=retrofit,
            grid=grid,
            b_short_candidates=tuple(candidates),
            best_by_pool_count=tuple(by_count),
        )


def _extend(path: tuple, pool: PoolSizing, boundary: int | None) -> tuple | None:
    """(cost, GPUs, boundaries) of ``path`` with ``pool`` added after it (and ``boundary`` appended
    unless it is the last pool), or None if the pool is infeasible."""
    extra = _score((pool,))
    if extra is None:
        return None
    return path[0] + extra[0], path[1] + extra[1], path[2] + (() if boundary is None else (boundary,))


def _score(pools: tuple[PoolSizing, ...]) -> tuple[float, int] | None:
    """(cost $/h, GPUs) of feasible pools, or None if one is infeasible."""
    if not all(p.feasible for p in pools):
        return None
    return sum(p.cost_per_hour_usd for p in pools), sum(p.gpus for p in pools)


def _cheapest(cells) -> FleetCandidate | None:
    """The feasible fleet of least cost; ties go to fewer GPUs, then smaller γ, then smaller boundaries."""
    feasible = [c for c in cells if c.feasible]
    if not feasible:
        return None
    return min(
        feasible,
        key=lambda c: (
            round(c.cost_per_hour_usd, 9),
            c.total_gpus,
            c.gamma,
            c.routing.boundaries_tokens or (0,),
        ),
    )


def plan_fleet(workload: Workload, hardware: tuple[PoolHardware, ...], options: PlanOptions) -> FleetPlan:
    """Plan the cheapest fleet for ``workload`` — the one call behind ``fleetopt plan``.

    Returns a :class:`FleetPlan`; ``plan.best`` is None when no cell is feasible (never an
    infeasible fleet presented as a plan).
    """
    return Planner(workload, hardware, options).plan()


def gamma_grid(start: float = 1.0, stop: float = 2.0, step: float = 0.1) -> tuple[float, ...]:
    """γ values start, start+step, …, stop (rounded to 10 decimals)."""
    count = int(round((stop - start) / step)) + 1
    return tuple(float(np.round(start + k * step, 10)) for k in range(count))


def _check_prefill_iterations(workload: Workload, hardware: PoolHardware) -> None:
    """Refuse a chunk that splits the longest prompt into more than
    :data:`MAX_ENGINE_PREFILL_ITERATIONS` prefill iterations (see there)."""
    longest = int(workload.input_tokens.max()) if workload.input_tokens.size else 0
    chunk = hardware.prefill_chunk_tokens
    iterations = -(-longest // chunk)
    if iterations > MAX_ENGINE_PREFILL_ITERATIONS:
        needed = -(-longest // MAX_ENGINE_PREFILL_ITERATIONS)
        raise ValidationError(
            f"serving profile {hardware.serving_name}: prefill_chunk_tokens = {chunk:,} splits the "
            f"workload's longest prompt ({longest:,} tokens) into {iterations:,} prefill iterations; "
            f"the engine model handles at most {MAX_ENGINE_PREFILL_ITERATIONS:,} (a plan's time grows "
            f"with their square): use prefill_chunk_tokens ≥ {needed:,} (vLLM's max_num_batched_tokens) "
            "or --service-model lockstep"
        )
