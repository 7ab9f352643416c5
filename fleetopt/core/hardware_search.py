"""Which hardware for which pool: the planner's sweep with a serving profile chosen per pool.

Given a catalog of serving profiles (one model on several GPU types and tensor-parallel sizes),
:class:`HardwareSearchPlanner` sizes every pool of every candidate fleet on each profile and keeps
the cheapest feasible one. That is exact over the hardware choices: given the routing (the
boundaries and γ), a pool's traffic does not depend on the hardware of the other pools, so a
fleet's cost is the sum of independent per-pool minima, and the sweep over (B, γ) and the K-pool
dynamic programme (which already add per-pool costs, :meth:`Planner.best_k_pool_fleet`) stay exact
when each pool's cost is its minimum over the catalog. Ties go to fewer GPUs, then to the earlier
profile of the catalog.

A GPU inventory (at most N GPUs of a type) couples the pools; :func:`apply_inventory` handles it
exactly for fleets of at most two pools (every hardware pair of every cell is checked) and
reports the K-pool fleets it cannot prove (see its docstring).

:func:`token_costs` splits a fleet's cost between prompt and output tokens (cost per million
input and output tokens and per million requests).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

from fleetopt.core.hardware import iteration_costs
from fleetopt.core.planner import FleetCandidate, FleetPlan, Planner, PlanOptions, _cheapest
from fleetopt.core.poolstats import PoolMoments, PoolStatistics
from fleetopt.core.routing import Routing
from fleetopt.core.service import PoolHardware
from fleetopt.core.sizing import PoolSizing
from fleetopt.core.workload import Workload
from fleetopt.errors import ValidationError


def fleet_planner(planner: Planner, fleet: FleetCandidate) -> Planner:
    """A fixed-hardware planner that runs each pool of ``fleet`` on that pool's own hardware (the
    statistics shared with ``planner``): what re-sizing, traffic splits and schedules of a fleet on
    mixed hardware use."""
    if planner.hardware == fleet.hardware and type(planner) is Planner:
        return planner
    return Planner(planner.workload, fleet.hardware, planner.options, planner.prepared_statistics())


@dataclass(frozen=True)
class PoolChoice:
    """One pool of a fleet sized on one profile of the catalog (``chosen``: the search took it)."""

    hardware: PoolHardware
    pool: PoolSizing
    chosen: bool


class HardwareSearchPlanner(Planner):
    """:class:`Planner` whose every pool runs on the cheapest feasible profile of ``catalog``.

    ``catalog``: the candidate serving profiles (one model; the first is the reference for the
    routing fractions, which do not depend on the hardware). Each profile has its own
    fixed-hardware planner (:attr:`planners`, statistics shared), whose memoized pools the search
    compares; ``planners[i].plan()`` is the plan on profile i alone.
    """

    def __init__(
        self,
        workload: Workload,
        catalog: tuple[PoolHardware, ...],
        options: PlanOptions,
        statistics: dict[int, PoolStatistics] | None = None,
    ):
        if not catalog:
            raise ValidationError("hardware: the catalog of serving profiles is empty")
        if len(set(catalog)) != len(catalog):
            raise ValidationError("hardware: a serving profile is listed twice")
        super().__init__(workload, (catalog[0],), options, statistics)
        self.catalog = tuple(catalog)
        self.planners = tuple(Planner(workload, (h,), options, self._stats) for h in catalog)
        self._choices: dict[tuple, tuple[PoolSizing, PoolHardware]] = {}

    def _choose(self, key: tuple, sized: list[PoolSizing]) -> PoolSizing:
        if key not in self._choices:
            order = range(len(sized))
            feasible = [i for i in order if sized[i].feasible]
            pick = (
                min(feasible, key=lambda i: (round(sized[i].cost_per_hour_usd, 9), sized[i].gpus, i))
                if feasible
                else 0
            )
            self._choices[key] = (sized[pick], self.catalog[pick])
        return self._choices[key][0]

    def sized_pool(self, routing: Routing, index: int) -> PoolSizing:
        """Pool ``index`` of ``routing`` on its cheapest feasible profile (memoized)."""
        if index >= 2:
            return self.range_pool(*routing.pool_ranges[index], index)
        key = (self._pool_key(routing, index), routing.pool_count == 1)
        if key in self._choices:
            return self._choices[key][0]
        return self._choose(key, [p.sized_pool(routing, index) for p in self.planners])

    def range_pool(self, lo_tokens: float, hi_tokens: float, index: int) -> PoolSizing:
        key = ("range", lo_tokens, hi_tokens)
        if key in self._choices:
            return self._choices[key][0]
        return self._choose(key, [p.range_pool(lo_tokens, hi_tokens, index) for p in self.planners])

    def chosen_hardware(self, routing: Routing, index: int) -> PoolHardware:
        """The profile the search chose for pool ``index`` of ``routing``."""
        self.sized_pool(routing, index)
        if index >= 2:
            lo, hi = routing.pool_ranges[index]
            return self._choices[("range", lo, hi)][1]
        return self._choices[(self._pool_key(routing, index), routing.pool_count == 1)][1]

    def pool_hardware(self, routing: Routing) -> tuple[PoolHardware, ...]:
        return tuple(self.chosen_hardware(routing, k) for k in range(routing.pool_count))

    def pool_share(self, routing: Routing, index: int):
        return self._planner_of(self.chosen_hardware(routing, index)).pool_share(routing, index)

    def pool_traffic(self, routing: Routing, sizing_rate_per_s: float | None = None):
        shares = fleet_planner(self, self.fleet(routing))
        return shares.pool_traffic(routing, sizing_rate_per_s)

    def pool_arrival_scvs(self, routing: Routing, sizing_rate_per_s: float | None = None):
        return fleet_planner(self, self.fleet(routing)).pool_arrival_scvs(routing, sizing_rate_per_s)

    def routing_fractions(self, routing: Routing) -> tuple[float, float, float]:
        return self.planners[0].routing_fractions(routing)

    def _planner_of(self, hardware: PoolHardware) -> Planner:
        return self.planners[self.catalog.index(hardware)]

    def retrofit(self, routed: FleetCandidate, gamma: float) -> FleetCandidate:
        """Pool routing's fleet with C&R added at γ: the short pool re-chosen and re-sized, the long
        pool kept as deployed (its hardware, instances and slots) under the new long traffic."""
        assert routed.b_short_tokens is not None
        cell = self.candidate(routed.b_short_tokens, gamma)
        long_hardware = routed.hardware[-1]
        kept = self._planner_of(long_hardware).retrofit(routed, gamma)
        return replace(
            cell, label="retrofit", pools=(cell.pools[0], kept.pools[-1]),
            hardware=(cell.hardware[0], long_hardware),
        )  # fmt: skip

    def choices(self, fleet: FleetCandidate) -> tuple[tuple[PoolChoice, ...], ...]:
        """For each pool of ``fleet``: its sizing on every profile of the catalog, the chosen one
        marked (why the search picked it: the others cost more or break the SLO or cap)."""
        rows = []
        for k in range(fleet.pool_count):
            if k >= 2:
                lo, hi = fleet.routing.pool_ranges[k]
                sized = [p.range_pool(lo, hi, k) for p in self.planners]
            else:
                sized = [p.sized_pool(fleet.routing, k) for p in self.planners]
            chosen = fleet.hardware[k]
            rows.append(
                tuple(PoolChoice(h, s, h == chosen) for h, s in zip(self.catalog, sized, strict=True))
            )
        return tuple(rows)

    def single_hardware_plans(self) -> tuple[FleetPlan, ...]:
        """The plan on each profile alone (the pools are already sized: cheap)."""
        return tuple(p.plan() for p in self.planners)


def best_single_hardware(plans: tuple[FleetPlan, ...]) -> FleetCandidate | None:
    """The cheapest best fleet of the single-profile plans (None when none is feasible)."""
    return _cheapest([p.best for p in plans if p.best is not None])


# -- cost per million tokens -------------------------------------------------------------------


@dataclass(frozen=True)
class TokenCosts:
    """A fleet's cost per million tokens and requests, USD (see :func:`token_costs`)."""

    prompt_cost_fraction: float
    per_million_input_tokens_usd: float
    per_million_output_tokens_usd: float
    per_million_requests_usd: float


def prompt_work_fraction(hardware: PoolHardware, moments: PoolMoments) -> float:
    """The share of a pool's engine time its prompts take: τ·E[L_in] / (τ·E[L_in] + H·E[L_out] +
    κ·E[I·L]), the terms of the per-sequence iteration cost c₁
    (:meth:`fleetopt.core.hardware.IterationCosts.per_sequence_s`) — prefill compute against decode
    steps and the KV reads of decoding. The base W of every iteration is shared in the same
    proportion. Falls back to the token share E[L_in] / E[L] when the profile has no such terms."""
    costs = iteration_costs(hardware)
    mean_output = moments.mean_iterations - moments.mean_prefill_iterations
    mean_input = moments.mean_total_tokens - mean_output
    prompt = costs.per_prefill_token_s * mean_input
    decode = costs.per_decode_s * mean_output + costs.per_kv_token_s * moments.mean_iter_x_len
    if prompt + decode > 0:
        return prompt / (prompt + decode)
    total = mean_input + mean_output
    return mean_input / total if total > 0 else 0.0


def token_costs(
    fleet: FleetCandidate, moments: tuple[PoolMoments, ...], workload: Workload, mean_rate_per_s: float
) -> TokenCosts | None:
    """A feasible fleet's $/h split between prompt and output tokens, per million of each, and per
    million requests, at the mean rate.

    Each pool's $/h splits by :func:`prompt_work_fraction`; the fleet's prompt dollars divide by
    the input tokens clients send (λ_mean·E[L_in] of the workload, before any compression) and its
    output dollars by the output tokens (λ_mean·E[L_out]); the whole $/h by the requests
    (λ_mean). None for an infeasible fleet or no traffic."""
    if not fleet.feasible or not mean_rate_per_s > 0:
        return None
    cost = fleet.cost_per_hour_usd
    prompt_usd = sum(
        pool.cost_per_hour_usd * prompt_work_fraction(hw, m) if pool.instances > 0 else 0.0
        for pool, hw, m in zip(fleet.pools, fleet.hardware, moments, strict=True)
    )
    weight = workload.total_weight
    mean_input = float((workload.input_tokens * workload.weights).sum()) / weight
    mean_output = float((workload.output_tokens * workload.weights).sum()) / weight
    per_hour = 3600.0 * mean_rate_per_s
    return TokenCosts(
        prompt_cost_fraction=prompt_usd / cost if cost > 0 else 0.0,
        per_million_input_tokens_usd=1e6 * prompt_usd / (per_hour * mean_input)
        if mean_input > 0
        else math.nan,
        per_million_output_tokens_usd=(
            1e6 * (cost - prompt_usd) / (per_hour * mean_output) if mean_output > 0 else math.nan
        ),
        per_million_requests_usd=1e6 * cost / per_hour,
    )


def fleet_token_costs(planner: Planner, fleet: FleetCandidate | None) -> TokenCosts | None:
    """:func:`token_costs` of ``fleet`` with its pools' moments from ``planner`` (on the fleet's
    own hardware)."""
    if fleet is None or not fleet.feasible:
        return None
    traffic = fleet_planner(planner, fleet).pool_traffic(fleet.routing)
    moments = tuple(m for _, m in traffic)
    return token_costs(fleet, moments, planner.workload, planner.options.mean_rate_per_s)


def priced(hardware: PoolHardware, prices_usd_per_gpu_hour: Mapping[str, float]) -> PoolHardware:
    """``hardware`` at the $/GPU-hour given for its GPU (``--price TYPE=$/h``), else as profiled."""
    price = prices_usd_per_gpu_hour.get(hardware.gpu_name)
    return hardware if price is None else replace(hardware, gpu_hour_usd=float(price))


# -- the search's outcome ----------------------------------------------------------------------


@dataclass(frozen=True)
class HardwareSearchOutcome:
    """What ``plan --hardware`` reports beside the plan: the catalog, the prices and inventory it
    was given, each pool's options in the best fleet (:meth:`HardwareSearchPlanner.choices`), and
    the best single-hardware fleet (the baseline)."""

    catalog: tuple[PoolHardware, ...]
    prices_usd_per_gpu_hour: Mapping[str, float]
    max_gpus: Mapping[str, int]
    inventory_method: str
    choices: tuple[tuple[PoolChoice, ...], ...]
    best_single: FleetCandidate | None


def search_hardware(
    planner: HardwareSearchPlanner,
    prices_usd_per_gpu_hour: Mapping[str, float] | None = None,
    max_gpus: Mapping[str, int] | None = None,
) -> tuple[FleetPlan, HardwareSearchOutcome]:
    """Plan with every pool on its cheapest feasible profile; the best single-hardware fleet beside
    it. With ``max_gpus`` the best fleet is the cheapest that fits the inventory
    (:func:`apply_inventory`)."""
    plan = planner.plan()
    singles = planner.single_hardware_plans()
    single = best_single_hardware(singles)
    method = "none"
    if max_gpus:
        plan, single, method = apply_inventory(planner, plan, singles, dict(max_gpus))
    if single is not None:
        single = replace(single, label="best_single_hardware")
    outcome = HardwareSearchOutcome(
        catalog=planner.catalog,
        prices_usd_per_gpu_hour=dict(prices_usd_per_gpu_hour or {}),
        max_gpus=dict(max_gpus or {}),
        inventory_method=method,
        choices=planner.choices(plan.best) if plan.best is not None else (),
        best_single=single,
    )
    return plan, outcome


# -- a GPU inventory ---------------------------------------------------------------------------


def gpus_by_type(fleet: FleetCandidate) -> dict[str, int]:
    """The GPUs ``fleet`` uses of each GPU type."""
    used: dict[str, int] = {}
    for pool, hardware in zip(fleet.pools, fleet.hardware, strict=True):
        used[hardware.gpu_name] = used.get(hardware.gpu_name, 0) + pool.gpus
    return used


def fits(fleet: FleetCandidate, max_gpus: Mapping[str, int]) -> bool:
    """Whether ``fleet`` uses at most ``max_gpus[type]`` GPUs of every type listed there."""
    return all(n <= max_gpus.get(gpu, n) for gpu, n in gpus_by_type(fleet).items())


def apply_inventory(
    planner: HardwareSearchPlanner,
    plan: FleetPlan,
    singles: tuple[FleetPlan, ...],
    max_gpus: dict[str, int],
) -> tuple[FleetPlan, FleetCandidate | None, str]:
    """The cheapest fleet within the inventory ``max_gpus`` (GPUs per type), the cheapest
    single-hardware fleet within it, and the method.

    An inventory couples the pools (their GPUs of a type add up), so per-pool minima no longer
    suffice. ``unconstrained``: the unconstrained optimum fits, so it is the constrained optimum
    too (exact). Otherwise ``pairs``: every homogeneous fleet on every profile and every two-pool
    cell (B, γ) on every (short, long) profile pair is checked against the inventory — exact over
    fleets of at most two pools; fleets of three or more pools are not searched under a binding
    inventory. Baselines other than the best single hardware stay unconstrained. Raises
    ValidationError when no such fleet fits, naming the cheapest fleet ignoring the inventory and
    what it needs.
    """
    single_fits = [p.best for p in singles if p.best is not None and fits(p.best, max_gpus)]
    single = _cheapest(single_fits)
    if plan.best is not None and fits(plan.best, max_gpus):
        return plan, single, "unconstrained"
    options: list[FleetCandidate] = list(single_fits)
    for p in planner.planners:
        homogeneous = p.homogeneous()
        if homogeneous.feasible and fits(homogeneous, max_gpus):
            options.append(homogeneous)
    for cell in plan.grid:
        routing = cell.routing
        shorts = [(p.sized_pool(routing, 0), p.hardware[0]) for p in planner.planners]
        longs = [(p.sized_pool(routing, 1), p.hardware[0]) for p in planner.planners]
        alpha, beta, first = planner.routing_fractions(routing)
        for short, short_hw in shorts:
            if not short.feasible:
                continue
            for long, long_hw in longs:
                if long.feasible:
                    fleet = FleetCandidate(
                        "cell", routing, alpha, beta, first, (short, long), (short_hw, long_hw)
                    )
                    if fits(fleet, max_gpus):
                        options.append(fleet)
    best = _cheapest(options)
    if best is None:
        cheapest = plan.best
        needs = (
            ", ".join(f"{n:,} × {gpu}" for gpu, n in sorted(gpus_by_type(cheapest).items()))
            if cheapest is not None
            else "no fleet meets the SLO even without it"
        )
        cost = f" (${cheapest.cost_per_hour_usd:,.2f}/h)" if cheapest is not None else ""
        limits = ", ".join(f"{gpu}={n}" for gpu, n in sorted(max_gpus.items()))
        raise ValidationError(
            f"--max-gpus {limits}: no fleet of at most two pools fits the inventory; the cheapest fleet "
            f"ignoring it{cost} needs {needs}"
        )
    return replace(plan, best=replace(best, label="best")), single, "pairs"
