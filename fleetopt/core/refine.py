"""``plan --refine K``: the analytic sweep proposes, the simulator decides.

The K cheapest distinct feasible fleets of a plan (cells of the (B, γ) sweep, the homogeneous
fleet, the best K-pool fleets) are each re-sized pool by pool: the smallest instance count (slots
as planned) whose simulated P99 TTFT meets the SLO with confidence, on the pool's own Poisson
stream at its planned rate (:func:`fleetopt.core.simulate.simulate_pool_alone` on
:func:`fleetopt.core.simulate.routed_pool_workload`: Poisson arrivals split by routing stay
Poisson, so a pool need not be simulated with the rest of its fleet), under the iteration-level
``physical`` engine and the dispatch policy the plan states. The cheapest fleet whose pools all
pass wins.

The search, per pool (:func:`refine_pool`):

* **Common random numbers**: every count is simulated on the same seed, so the same arrivals and
  lengths; the P99 then falls with n almost surely, and a bracket search is sound.
* **Bracket**: from the analytic count, step down (1, 2, 4, … instances) while the pool passes, or
  up while it fails, then bisect. Never below the fewest instances within the utilization cap
  (the cap is the user's, the simulation only decides the SLO), never above
  :attr:`RefineSettings.max_instance_factor` × the analytic count (+ :attr:`RefineSettings.
  max_extra_instances`): a pool that fails there is ``unreachable``, with the best P99 reached.
* **Confidence**: a count passes when the upper end of its P99's 95% interval is at or below the
  SLO — the cross-check's rule (:func:`fleetopt.core.crosscheck.p99_interval`): during the search
  the one seed's order-statistic interval, then the answer is confirmed on
  :attr:`RefineSettings.confirm_seeds` (Student-t over seeds) and moved up one instance at a time
  until it holds there too.
* **Budget**: a pool whose run would take more than :attr:`RefineSettings.max_requests` requests
  per seed (warm-up of ten mean residences and at least 30 s, then at least a minute of traffic)
  keeps its analytic count, flagged ``too_large``.

Pure: no files, no printing; the caller supplies each model's attention cost (τ_a).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial

import numpy as np

from fleetopt.core.crosscheck import SLO_SLACK, p99_interval, simulated_pool
from fleetopt.core.planner import FleetCandidate, FleetPlan, Planner, fleet_sort_key
from fleetopt.core.pools import DeployablePool
from fleetopt.core.poolsizing import PoolSizing, replace_pool
from fleetopt.core.simulate import (
    DEFAULT_SCHEDULER,
    PHYSICAL,
    SimulatedPool,
    pool_alone_requests,
    routed_pool_workload,
    simulate_pool_alone,
)
from fleetopt.core.sizing import evaluate_pool
from fleetopt.core.workload import Workload
from fleetopt.defaults import DEFAULT_DISPATCH

#: What became of one pool: ``refined`` (the smallest passing count), ``unreachable`` (no count up
#: to the bound passes), ``too_large`` (beyond the budget: the analytic count kept), ``no_traffic``.
POOL_OUTCOMES = ("refined", "unreachable", "too_large", "no_traffic")


@dataclass(frozen=True)
class RefineSettings:
    """How ``--refine`` simulates.

    Attributes:
        candidates: K, the cheapest distinct feasible fleets refined.
        dispatch: the dispatch policy the plan states (:data:`fleetopt.core.simulate.DISPATCH_POLICIES`).
        scheduler: the ``physical`` engine's scheduler.
        search_seed: the one seed of the search (common random numbers across n).
        confirm_seeds: the seeds the answer is confirmed on (Student-t over them); other than
            ``simulate``'s 1, 2, 3, so ``simulate --plan`` checks it on fresh ones.
        measured_requests: at least this many measured requests per seed (and a minute of traffic).
        max_requests: the most requests per seed one run may take (warm-up included).
        max_instance_factor, max_extra_instances: the bound of the search,
            ⌈factor × analytic⌉ + extra instances.
    """

    candidates: int
    dispatch: str = DEFAULT_DISPATCH
    scheduler: str = DEFAULT_SCHEDULER
    search_seed: int = 101
    confirm_seeds: tuple[int, ...] = (101, 102, 103)
    measured_requests: int = 40_000
    max_requests: int = 1_500_000
    max_instance_factor: float = 3.0
    max_extra_instances: int = 8


@dataclass(frozen=True)
class RefinedPool:
    """One pool's search.

    ``instances``: the refined count (the analytic one when ``too_large`` or ``unreachable``);
    ``p99_ttft_s`` and its 95% interval at that count (for ``unreachable``: the best P99 reached,
    at ``best_instances``); ``simulations``: runs of one seed; ``requests_per_seed``: warm-up +
    measured requests of each run."""

    name: str
    outcome: str
    analytic_instances: int
    instances: int
    slots_per_instance: int
    p99_ttft_s: float = math.nan
    p99_ttft_low_s: float = math.nan
    p99_ttft_high_s: float = math.nan
    best_instances: int | None = None
    simulations: int = 0
    requests_per_seed: int = 0
    warmup_requests: int = 0
    confirmed: bool = False

    @property
    def passed(self) -> bool:
        return self.outcome != "unreachable"


@dataclass(frozen=True)
class RefinedFleet:
    """One candidate fleet: the analytic one and, pool by pool, what the simulation decided.
    ``fleet``: the candidate with its pools at the refined counts (None when a pool is unreachable)."""

    analytic: FleetCandidate
    pools: tuple[RefinedPool, ...]
    fleet: FleetCandidate | None

    @property
    def passed(self) -> bool:
        return self.fleet is not None


@dataclass(frozen=True)
class Refinement:
    """The outcome of ``--refine``: every refined fleet (cheapest analytic first) and the winner."""

    settings: RefineSettings
    fleets: tuple[RefinedFleet, ...]
    best: RefinedFleet | None


def candidate_fleets(plan: FleetPlan, count: int) -> tuple[FleetCandidate, ...]:
    """The ``count`` cheapest distinct feasible fleets of a plan, cheapest first (the planner's
    order). Fleets that route every request to the same pools (the γ of a cell without compression)
    count once, the first of them."""
    fleets = [*plan.grid, plan.homogeneous, *(f for f in plan.best_by_pool_count[2:] if f is not None)]
    seen: set[tuple] = set()
    chosen = []
    for fleet in sorted((f for f in fleets if f.feasible), key=fleet_sort_key):
        key = (fleet.routing.boundaries_tokens, tuple(_pool_key(p) for p in fleet.pools))
        if key in seen:
            continue
        seen.add(key)
        chosen.append(fleet)
        if len(chosen) == count:
            break
    return tuple(chosen)


def _pool_key(pool: PoolSizing) -> tuple:
    return (pool.instances, pool.slots_per_instance, pool.context_tokens, f"{pool.arrival_rate_per_s:.9g}")


def _workload_digest(workload: Workload) -> str:
    digest = hashlib.sha256()
    for array in (workload.total_tokens, workload.output_tokens, workload.weights):
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


class PoolSearch:
    """One pool's search (module docstring): :meth:`search` on one seed, then :meth:`confirm` on
    :attr:`RefineSettings.confirm_seeds` — only for the fleets that may win, the costlier step.
    Every run is kept, so a count is never simulated twice on the same seeds."""

    def __init__(
        self,
        stream: Workload,
        pool: SimulatedPool,
        *,
        arrival_rate_per_s: float,
        residence_s: float,
        analytic_instances: int,
        floor_instances: int | Callable[[], int],
        ttft_slo_s: float,
        settings: RefineSettings,
    ) -> None:
        self.stream, self.pool, self.rate, self.residence_s = stream, pool, arrival_rate_per_s, residence_s
        self.analytic, self.floor, self.settings = analytic_instances, floor_instances, settings
        self.limit = ttft_slo_s * (1 + SLO_SLACK)
        self.warmup, measured = pool_alone_requests(
            arrival_rate_per_s, residence_s=residence_s, measured_requests=settings.measured_requests
        )
        self.per_seed = self.warmup + measured
        self.bound = analytic_instances  # set by search(), from the floor
        self.runs: dict[tuple[int, tuple[int, ...]], tuple[float, float, float]] = {}
        self.result: RefinedPool | None = None
        self.confirmed = False

    def _run(self, instances: int, seeds: tuple[int, ...]) -> tuple[float, float, float]:
        key = (instances, seeds)
        if key not in self.runs:
            s = self.settings
            result = simulate_pool_alone(
                self.stream,
                replace(self.pool, instances=instances),
                self.rate,
                residence_s=self.residence_s,
                measured_requests=s.measured_requests,
                service_model=PHYSICAL,
                dispatch=s.dispatch,
                seeds=seeds,
                scheduler=s.scheduler,
            )
            summary = result.pools[0]
            low, high = p99_interval(summary)
            self.runs[key] = (summary.ttft_p99_s.mean, low, high)
        return self.runs[key]

    def _passes(self, instances: int, seeds: tuple[int, ...] | None = None) -> bool:
        return self._run(instances, seeds or (self.settings.search_seed,))[2] <= self.limit

    def _outcome(self, outcome: str, instances: int, figures: tuple[float, float, float], best: int | None):
        return RefinedPool(
            self.pool.name,
            outcome,
            self.analytic,
            instances,
            self.pool.slots_per_instance,
            *figures,
            best_instances=best,
            simulations=sum(len(seeds) for _, seeds in self.runs),
            requests_per_seed=self.per_seed,
            warmup_requests=self.warmup,
            confirmed=self.confirmed,
        )

    def search(self) -> RefinedPool:
        """The smallest count in [floor, bound] that passes on the search seed."""
        if self.result is not None:
            return self.result
        if self.per_seed > self.settings.max_requests:
            self.result = self._outcome("too_large", self.analytic, (math.nan,) * 3, None)
            return self.result
        if callable(self.floor):  # the floor costs model evaluations: only for a pool searched
            self.floor = self.floor()
        s = self.settings
        floor = self.floor
        self.bound = bound = (
            max(floor, math.ceil(s.max_instance_factor * self.analytic)) + s.max_extra_instances
        )
        start = min(max(self.analytic, floor), bound)
        if self._passes(start):  # step down while it passes: lo fails (or is below the floor), hi passes
            hi, step, lo = start, 1, floor - 1
            while hi - step >= floor:
                if not self._passes(hi - step):
                    lo = hi - step
                    break
                hi, step = hi - step, 2 * step
        else:  # step up until it passes or the bound is reached
            lo, step, found = start, 1, None
            while lo < bound:
                candidate = min(bound, lo + step)
                if self._passes(candidate):
                    found = candidate
                    break
                lo, step = candidate, 2 * step
            if found is None:
                return self._unreachable()
            hi = found
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self._passes(mid):
                hi = mid
            else:
                lo = mid
        self.result = self._outcome("refined", hi, self._run(hi, (self.settings.search_seed,)), hi)
        return self.result

    def _unreachable(self) -> RefinedPool:
        seed = (self.settings.search_seed,)
        best = min((n for n, seeds in self.runs if seeds == seed), key=lambda n: self.runs[(n, seed)][0])
        self.result = self._outcome("unreachable", self.analytic, self.runs[(best, seed)], best)
        return self.result

    def confirm(self) -> RefinedPool:
        """The searched count on the confirmation seeds, one instance more at a time until it passes
        there too (``unreachable`` when the bound comes first)."""
        result = self.search()
        if self.confirmed or result.outcome != "refined":
            return result
        seeds = tuple(self.settings.confirm_seeds)
        n = result.instances
        while not self._passes(n, seeds) and n < self.bound:
            n += 1
        self.confirmed = True
        figures = self._run(n, seeds)
        if figures[2] <= self.limit:
            self.result = self._outcome("refined", n, figures, n)
        else:
            self.result = self._outcome("unreachable", self.analytic, figures, n)
        return self.result


def _floor_instances(evaluate: Callable[[int], PoolSizing], analytic: int, max_utilization: float) -> int:
    """The fewest instances whose load stays within the utilization cap (at most ``analytic``), by
    bisection: the load falls as instances are added."""
    lo, hi = 0, analytic  # lo exceeds the cap (or is 0), hi is within it
    if not evaluate(hi).load_utilization <= max_utilization:
        return analytic
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if evaluate(mid).load_utilization <= max_utilization:
            hi = mid
        else:
            lo = mid
    return hi


def refine_plan(planner: Planner, plan: FleetPlan, settings: RefineSettings) -> Refinement:
    """Refine the ``settings.candidates`` cheapest fleets of ``plan`` (module docstring): every pool
    searched on one seed, then the cheapest passing fleet's pools confirmed on the confirmation seeds,
    again until the cheapest passing fleet is a confirmed one. Each pool's prompt attention is its
    hardware's (:func:`fleetopt.core.crosscheck.simulated_pool`)."""
    options = plan.options
    searches: dict[tuple, PoolSearch] = {}
    members: list[tuple[FleetCandidate, list[tuple[str, PoolSizing, PoolSearch | None, Callable]]]] = []
    for candidate in candidate_fleets(plan, settings.candidates):
        traffic = planner.pool_traffic(candidate.routing)
        scvs = planner.pool_arrival_scvs(candidate.routing)
        pools = []
        for index, (name, pool, hardware) in enumerate(
            zip(candidate.pool_names, candidate.pools, candidate.hardware, strict=True)
        ):
            rate, moments = traffic[index]
            evaluate = partial(
                evaluate_pool,
                arrival_rate_per_s=rate,
                moments=moments,
                hardware=hardware,
                context_tokens=pool.context_tokens,
                service_model=options.service_model,
                slots_per_instance=pool.slots_per_instance,
                ttft_slo_s=options.ttft_slo_s,
                max_utilization=options.max_utilization,
                arrival_scv=scvs[index],
            )
            stream = routed_pool_workload(planner.workload, candidate.routing, index)
            search = None
            if stream is not None and pool.instances > 0 and rate > 0:
                key = (hardware, pool.context_tokens, pool.slots_per_instance, f"{rate:.9g}")
                key += (_workload_digest(stream),)
                if key not in searches:
                    simulated = simulated_pool(
                        DeployablePool(
                            name, pool.context_tokens, pool.slots_per_instance, pool.instances, hardware
                        )
                    )
                    searches[key] = PoolSearch(
                        stream,
                        simulated,
                        arrival_rate_per_s=rate,
                        residence_s=pool.mean_service_s if math.isfinite(pool.mean_service_s) else 0.0,
                        analytic_instances=pool.instances,
                        floor_instances=partial(
                            _floor_instances,
                            lambda n, evaluate=evaluate: evaluate(instances=n),
                            pool.instances,
                            options.max_utilization,
                        ),
                        ttft_slo_s=options.ttft_slo_s,
                        settings=settings,
                    )
                search = searches[key]
                search.search()
            pools.append((name, pool, search, evaluate))
        members.append((candidate, pools))

    def refined(entry) -> RefinedFleet:
        candidate, pools = entry
        outcomes, sized = [], []
        for name, pool, search, evaluate in pools:
            if search is None:
                outcome = RefinedPool(
                    name, "no_traffic", pool.instances, pool.instances, pool.slots_per_instance
                )
            else:
                outcome = replace(search.result, name=name)
            outcomes.append(outcome)
            same = outcome.instances == pool.instances
            sized.append(pool if same else _at(evaluate(instances=outcome.instances), pool))
        passed = all(p.passed for p in outcomes)
        return RefinedFleet(
            candidate, tuple(outcomes), replace(candidate, pools=tuple(sized)) if passed else None
        )

    while True:
        fleets = [refined(entry) for entry in members]
        passing = sorted(
            (i for i, f in enumerate(fleets) if f.passed), key=lambda i: fleet_sort_key(fleets[i].fleet)
        )
        if not passing:
            return Refinement(settings, tuple(fleets), None)
        cheapest = passing[0]
        unconfirmed = [
            s
            for _, _, s, _ in members[cheapest][1]
            if s is not None and s.result.outcome == "refined" and not s.confirmed
        ]
        if not unconfirmed:
            return Refinement(settings, tuple(fleets), fleets[cheapest])
        for search in unconfirmed:
            search.confirm()


def _at(pool: PoolSizing, sized: PoolSizing) -> PoolSizing:
    """``pool`` evaluated at the count the simulation chose: feasible (its count is within the cap,
    the simulation met the SLO) whatever the analytic P99 there says; slots as ``sized`` set them."""
    return replace_pool(
        pool, feasible=True, problems=(), binding_constraint="ttft", min_achievable_ttft_s=None,
        slots_binding=sized.slots_binding,
    )  # fmt: skip
