"""Cross-checking a plan by simulation: planned pools → simulated pools, analytical vs simulated rows.

("Validation" in fleetopt means checking input; checking a plan's predictions against a
simulation is a cross-check.)

Glue between the planner (:mod:`fleetopt.core.planner`, :mod:`fleetopt.core.sizing`) and the
simulator (:mod:`fleetopt.core.simulate`); pure (no files, no printing). A plan's pools become
:class:`~fleetopt.core.simulate.SimulatedPool` s (instances, slots, context, W, H, chunk,
L_cal), its best fleet's :class:`~fleetopt.core.routing.Routing`, and each pool's
analytical prediction (utilization, P99 wait, P99 TTFT, iteration time) is set beside the
simulated estimate with the error of the prediction in percent:

    error_pct = 100 · (analytical − simulated) / simulated

so a negative error on a latency means the analytical model is optimistic (it predicts less
than the simulation shows). See docs/validation.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import Enum

import numpy as np

from fleetopt.core.arrivals import ArrivalSpec
from fleetopt.core.drift import PlannedFleet
from fleetopt.core.planner import FleetPlan, Planner, PlanOptions
from fleetopt.core.pools import DeployablePool, PoolPredictions
from fleetopt.core.routing import Routing
from fleetopt.core.service import LOCKSTEP, PoolHardware, get_service_model, iteration_costs
from fleetopt.core.simulate import (
    DEFAULT_SCHEDULER,
    PHYSICAL,
    ProgressCallback,
    SimulatedPool,
    SimulationResult,
    attention_s_per_token_pair,
    routed_pool_workload,
    simulate_fleet,
    simulate_pool_alone,
)
from fleetopt.core.sizing import PoolSizing, evaluate_pool
from fleetopt.core.workload import Workload
from fleetopt.defaults import DEFAULT_DISPATCH, DEFAULT_MAX_UTILIZATION, DEFAULT_QUANTILE
from fleetopt.errors import ValidationError

#: The metrics compared, in report order: (key, what the plan predicts, what the simulation measures).
METRICS = ("utilization", "p50_ttft_s", "p99_ttft_s", "p99_wait_s", "tpot_s")
DEFAULT_WARMUP_FRACTION = 0.5
MIN_DEFAULT_REQUESTS = 100_000
#: Caps on the default request count per seed (the physical engine is ~50× slower).
MAX_DEFAULT_REQUESTS = 4_000_000
#: ... and for the iteration-level ``physical`` engine.
MAX_DEFAULT_REQUESTS_PHYSICAL = 600_000
#: Head-room on the longest service time when sizing the warm-up (it must also cover waits).
WARMUP_MARGIN = 1.25
#: Relative slack when comparing a simulated P99 TTFT with the SLO (float rounding only).
SLO_SLACK = 1e-9
#: A pool the fleet run measured on fewer requests per seed than this is simulated again on its own
#: Poisson stream at its rate (the routed atoms only) with this many: a long pool taking 0.3% of a
#: fleet's traffic gets a few thousand requests in a whole-fleet run, too few residences to see its
#: slot waits (docs/validation.md).
MIN_POOL_REQUESTS = 60_000


@dataclass(frozen=True)
class PoolPrediction:
    """One planned pool: the deployable pool with what the analytical model predicts for it
    (``pool.predicted``), and the pool as the simulator takes it (``simulated``).

    The figures read as floats, NaN where the plan does not carry one: ``arrival_rate_per_s``
    (req/s reaching the pool), ``utilization`` (λ_p·E[S] / (n·s)), ``p99_wait_s`` and ``p99_ttft_s``
    (seconds), ``tpot_s`` (the predicted iteration time, seconds), ``mean_service_s`` (E[S], seconds).
    """

    pool: DeployablePool
    simulated: SimulatedPool

    @property
    def name(self) -> str:
        """``short``, ``long``, ``homogeneous`` or ``pool-k``."""
        return self.pool.name

    @property
    def hardware(self) -> PoolHardware:
        return self.pool.hardware

    @property
    def arrival_rate_per_s(self) -> float:
        return _figure(self.pool.predicted.arrival_rate_per_s)

    @property
    def utilization(self) -> float:
        return _figure(self.pool.predicted.utilization)

    @property
    def p99_wait_s(self) -> float:
        return _figure(self.pool.predicted.p99_wait_s)

    @property
    def p99_ttft_s(self) -> float:
        return _figure(self.pool.predicted.p99_ttft_s)

    @property
    def tpot_s(self) -> float:
        return _figure(self.pool.predicted.iteration_s)

    @property
    def mean_service_s(self) -> float:
        return _figure(self.pool.predicted.mean_service_s)

    def with_predictions(self, **figures: float | None) -> PoolPrediction:
        """This pool with some predicted figures replaced (:class:`PoolPredictions`' names)."""
        predicted = replace(self.pool.predicted, **figures)
        return replace(self, pool=replace(self.pool, predicted=predicted))


def _figure(value: float | None) -> float:
    """A predicted figure as a float (NaN when the plan does not carry it)."""
    return math.nan if value is None else value


@dataclass(frozen=True)
class CrossCheckSetup:
    """A planned fleet ready to simulate: pools, routing and the plan's inputs.

    ``analytical_model`` / ``workload_label`` / ``arrival_rate_per_s`` describe what the
    predictions were computed for; :func:`reevaluate` recomputes them for other traffic.
    """

    pools: tuple[PoolPrediction, ...]
    routing: Routing
    arrival_rate_per_s: float
    ttft_slo_s: float
    max_utilization: float
    quantile: float
    long_context_tokens: int
    analytical_model: str
    analytical_source: str = "plan"
    mean_arrival_rate_per_s: float | None = None
    rate_basis: str = "mean"
    arrival_scvs: tuple[float, ...] = ()

    @property
    def simulated_pools(self) -> tuple[SimulatedPool, ...]:
        return tuple(p.simulated for p in self.pools)

    @property
    def mean_rate_per_s(self) -> float:
        """The plan's mean rate (its sizing rate on the mean basis)."""
        return (
            self.arrival_rate_per_s if self.mean_arrival_rate_per_s is None else self.mean_arrival_rate_per_s
        )

    @property
    def poisson_predictions(self) -> bool:
        """The predictions assume Poisson arrivals (every pool's C_a² is 1)."""
        return all(scv == 1.0 for scv in self.arrival_scvs)


@dataclass(frozen=True)
class Comparison:
    """One metric of one pool: analytical prediction vs simulated mean ± 95% half-width.
    ``analytical_rate_per_s``: the fleet rate the prediction is for, when it differs by metric (a
    replay or profile: means at the simulated mean, tails at the plan's sizing rate)."""

    analytical: float | None
    simulated: float
    ci95_half_width: float
    error_pct: float | None
    analytical_rate_per_s: float | None = None


class PoolVerdict(Enum):
    """One pool's answer: the SLO is met or breached with 95% confidence, or it cannot be told."""

    MET = "met"  # the 95% interval of the simulated P99 TTFT lies at or below the SLO
    BREACH = "breach"  # it lies above the SLO
    INCONCLUSIVE = "inconclusive"  # too few requests measured, or the interval straddles the SLO
    NO_TRAFFIC = "no_traffic"  # a pool planned for no traffic received none: nothing to check


def min_requests_for_quantile(quantile: float, confidence: float = 0.95) -> int:
    """The fewest samples for which the distribution-free ``confidence`` interval of the ``quantile``
    has an upper end: the largest of n samples exceeds Q with probability 1 − q^n ≥ (1 + confidence)/2,
    so n ≥ ln((1 − confidence)/2) / ln q (368 for the P99 at 95%)."""
    return math.ceil(math.log(0.5 * (1.0 - confidence)) / math.log(quantile))


@dataclass(frozen=True)
class PoolCrossCheck:
    """One pool's comparison and verdict.

    ``optimistic_p99_ttft_s`` is how far the simulated P99 TTFT lies above the analytical one when
    the gap exceeds the simulation's 95% half-width (the two-moment approximation is optimistic
    there), else 0. ``slo_met``: simulated mean P99 TTFT ≤ SLO. ``p99_ttft_interval_s``: the 95%
    interval of the P99 TTFT behind ``verdict`` (Student-t over seeds with two or more seeds, the
    order-statistic interval of the one seed's sample otherwise; ±∞ where it has no bound).
    """

    prediction: PoolPrediction
    requests_measured: int
    warmed_up: bool
    longest_sojourn_s: float
    metrics: dict[str, Comparison]
    slo_met: bool
    optimistic_p99_ttft_s: float
    verdict: PoolVerdict = PoolVerdict.MET
    p99_ttft_interval_s: tuple[float, float] = (math.nan, math.nan)
    #: requests the whole-fleet run measured, when the pool was then simulated on its own stream
    fleet_requests_measured: int | None = None


class FindingKind(Enum):
    """What a cross-check found about one pool (``render`` words it)."""

    SLO_BREACH = "slo_breach"  # simulated P99 TTFT above the SLO
    OPTIMISTIC = "optimistic"  # simulated P99 TTFT above the prediction by more than the CI
    NOT_WARMED_UP = "not_warmed_up"  # the longest sojourn outlasts the warm-up
    OVERLOADED = "overloaded"  # simulated utilization ≥ 0.99 where < 0.99 was predicted
    TOO_FEW_REQUESTS = "too_few_requests"  # fewer measured requests than a P99 interval needs
    STRADDLES_SLO = "straddles_slo"  # the P99 TTFT's 95% interval contains the SLO


@dataclass(frozen=True)
class Finding:
    """One finding about one pool, with the numbers behind it (seconds, or utilization).

    SLO_BREACH: ``simulated`` P99 TTFT ± ``half_width`` vs ``limit`` = the SLO. OPTIMISTIC:
    ``simulated`` vs ``predicted`` P99 TTFT. NOT_WARMED_UP: ``simulated`` = the longest sojourn,
    ``limit`` = the warm-up. OVERLOADED: ``simulated`` vs ``predicted`` utilization.
    TOO_FEW_REQUESTS: ``simulated`` = requests measured, ``limit`` = the fewest a P99 interval needs.
    STRADDLES_SLO: ``simulated`` P99 TTFT, ``low``/``high`` its interval, ``limit`` = the SLO.
    """

    kind: FindingKind
    pool: str
    simulated: float
    predicted: float | None = None
    limit: float | None = None
    half_width: float | None = None
    low: float | None = None
    high: float | None = None


class Verdict(Enum):
    """The overall answer of a cross-check."""

    PASS = "pass"
    PASS_OPTIMISTIC = "pass_optimistic"  # every pool meets the SLO, but a prediction is optimistic
    FAIL = "fail"  # a simulated P99 TTFT exceeds the SLO (its whole 95% interval)
    INCONCLUSIVE = "inconclusive"  # no breach, but some pool's verdict cannot be told


@dataclass(frozen=True)
class CrossCheckReport:
    """The whole comparison: per-pool rows, the simulation run, the verdict and the findings."""

    setup: CrossCheckSetup
    result: SimulationResult
    pools: tuple[PoolCrossCheck, ...]
    slo_met: bool
    warmed_up: bool
    findings: tuple[Finding, ...]

    @property
    def verdict(self) -> Verdict:
        """FAIL when a pool breaches the SLO with 95% confidence; else INCONCLUSIVE when a pool has
        too few requests or an interval straddling the SLO; else PASS (with a caveat when a
        prediction is optimistic)."""
        verdicts = [r.verdict for r in self.pools]
        if PoolVerdict.BREACH in verdicts:
            return Verdict.FAIL
        if PoolVerdict.INCONCLUSIVE in verdicts:
            return Verdict.INCONCLUSIVE
        if any(r.optimistic_p99_ttft_s > 0 for r in self.pools):
            return Verdict.PASS_OPTIMISTIC
        return Verdict.PASS


# --------------------------------------------------------------------------------------------
# Plans → setups
# --------------------------------------------------------------------------------------------


def simulated_pool(pool: DeployablePool) -> SimulatedPool:
    """A deployable pool as the simulator takes it (its hardware's iteration costs, prompt attention
    and KV cache)."""
    hw = pool.hardware
    costs = iteration_costs(hw)
    return SimulatedPool(
        name=pool.name,
        instances=int(pool.instances),
        slots_per_instance=int(pool.slots_per_instance),
        context_tokens=int(pool.context_tokens),
        iteration_base_s=hw.iteration_base_s,
        iteration_per_slot_s=hw.iteration_per_slot_s,
        prefill_chunk_tokens=hw.prefill_chunk_tokens,
        calibration_context_tokens=hw.calibration_context_tokens,
        prefill_per_token_s=costs.per_prefill_token_s,
        physical_iteration_base_s=costs.base_s,
        kv_read_s_per_token=costs.kv_read_floor_s_per_token,
        attention_s_per_token_pair=costs.attention_s_per_token_pair,
        ttft_overhead_s=hw.ttft_overhead_s,
        kv_capacity_tokens=hw.kv_capacity_tokens,
        kv_block_tokens=hw.kv_block_tokens,
    )


def with_attention(setup: CrossCheckSetup, flops_by_model: Mapping[str, float | None]) -> CrossCheckSetup:
    """``setup`` with the prompt attention cost (the ``vllm`` scheduler's τ_a,
    :func:`fleetopt.core.simulate.attention_s_per_token_pair`) of each pool whose hardware does not
    carry its model's attention geometry (a plan written before it did), from the model's attention
    FLOPs per token pair in ``flops_by_model`` (by model name; a model not in it keeps τ_a = 0).
    Pools whose hardware carries it have their τ_a already (:func:`simulated_pool`)."""
    pools = []
    for prediction in setup.pools:
        hw = prediction.hardware
        if hw.attention_flops_per_token_pair is not None:
            pools.append(prediction)
            continue
        tau_a = attention_s_per_token_pair(
            iteration_costs(hw).per_prefill_token_s, hw.parameters_active, flops_by_model.get(hw.model_name)
        )
        pools.append(
            replace(prediction, simulated=replace(prediction.simulated, attention_s_per_token_pair=tau_a))
        )
    return replace(setup, pools=tuple(pools))


def simulation_model_for(service_model: str) -> str:
    """The simulator model that checks a planner model (its
    :attr:`fleetopt.core.servicemodel.ServiceModel.simulation_model`: the iteration-level
    ``physical`` engine for a model without a request-level form, else the model itself)."""
    if service_model == PHYSICAL:
        return service_model
    return get_service_model(service_model).simulation_model


def _prediction(pool: DeployablePool) -> PoolPrediction:
    """A deployable pool with its predictions, and the pool as the simulator takes it."""
    return PoolPrediction(pool, simulated_pool(pool))


def _deployed_setup(
    pools: tuple[DeployablePool, ...], routing: Routing, options: PlanOptions
) -> CrossCheckSetup:
    """A setup of deployable pools at the plan's own rate, SLO, cap, quantile, long context and
    service model; each pool's C_a² as predicted (1 when the plan does not carry it)."""
    scvs = tuple(1.0 if p.predicted.arrival_scv is None else p.predicted.arrival_scv for p in pools)
    return _planned_setup(tuple(_prediction(p) for p in pools), routing, options, scvs)


def setup_from_plan(plan: FleetPlan) -> CrossCheckSetup:
    """The best fleet of an in-memory plan (``fleetopt plan --validate``), any number of pools."""
    best = plan.best
    if best is None:
        raise ValidationError("plan: no feasible fleet to validate")
    pools = tuple(
        DeployablePool.of_sizing(name, sizing, hardware)
        for name, sizing, hardware in zip(best.pool_names, best.pools, best.hardware, strict=True)
    )
    return _deployed_setup(pools, best.routing, plan.options)


def _planned_setup(
    pools: tuple[PoolPrediction, ...], routing: Routing, options: PlanOptions,
    arrival_scvs: tuple[float, ...] = (),
) -> CrossCheckSetup:  # fmt: skip
    """A setup at the plan's own rate, SLO, cap, quantile, long context and service model."""
    return CrossCheckSetup(
        pools=pools,
        routing=routing,
        arrival_rate_per_s=options.sizing_rate_per_s,
        ttft_slo_s=options.ttft_slo_s,
        max_utilization=options.max_utilization,
        quantile=options.quantile,
        long_context_tokens=options.long_context_tokens,
        analytical_model=options.service_model,
        mean_arrival_rate_per_s=options.mean_rate_per_s,
        rate_basis=options.rate_basis,
        arrival_scvs=arrival_scvs or tuple(1.0 for _ in pools),
    )


def single_pool_setup(
    sizing: PoolSizing,
    hardware: PoolHardware,
    *,
    ttft_slo_s: float,
    service_model: str,
    max_utilization: float = DEFAULT_MAX_UTILIZATION,
    quantile: float = DEFAULT_QUANTILE,
    name: str = "homogeneous",
) -> CrossCheckSetup:
    """One sized pool taking all the traffic it is given (``size_pool`` / ``evaluate_pool`` output)."""
    return CrossCheckSetup(
        pools=(_prediction(DeployablePool.of_sizing(name, sizing, hardware)),),
        routing=Routing.homogeneous(),
        arrival_rate_per_s=sizing.arrival_rate_per_s,
        ttft_slo_s=ttft_slo_s,
        max_utilization=max_utilization,
        quantile=quantile,
        long_context_tokens=sizing.context_tokens,
        analytical_model=service_model,
    )


def setup_from_planned(fleet: PlannedFleet, options: PlanOptions) -> CrossCheckSetup:
    """The best fleet of a plan file (as read by ``fleetopt.io.plans.read_plan``), any number of pools.

    The plan's own figures are the predictions; a figure the plan does not carry is NaN.
    """
    return _deployed_setup(fleet.pools, fleet.routing, options)


def reevaluate(
    setup: CrossCheckSetup, workload: Workload, arrival_rate_per_s: float, service_model: str
) -> CrossCheckSetup:
    """The same pools evaluated analytically under another workload, rate or service model, for
    Poisson arrivals (C_a² = 1: what a Poisson simulation offers them).

    The traffic split and pool moments come from ``Planner(...).pool_traffic(routing)`` (or the whole
    workload for a homogeneous fleet), each pool from :func:`fleetopt.core.sizing.evaluate_pool`
    with its planned instances and slots — the planner's own formulas, so the comparison with a
    simulation of that traffic is like for like.
    """
    routing = setup.routing
    options = PlanOptions(
        sizing_rate_per_s=arrival_rate_per_s,
        ttft_slo_s=setup.ttft_slo_s,
        long_context_tokens=setup.long_context_tokens,
        b_short_candidates=routing.boundaries_tokens or None,
        gammas=(routing.gamma,),
        compressibility=routing.compressibility,
        service_model=service_model,
        max_utilization=setup.max_utilization,
        quantile=setup.quantile,
    )
    traffic = Planner(workload, tuple(p.hardware for p in setup.pools), options).pool_traffic(routing)
    pools = []
    for prediction, (rate, moments) in zip(setup.pools, traffic, strict=True):
        pool = prediction.simulated
        sizing = evaluate_pool(
            arrival_rate_per_s=rate,
            moments=moments,
            hardware=prediction.hardware,
            context_tokens=pool.context_tokens,
            service_model=service_model,
            instances=pool.instances,
            slots_per_instance=pool.slots_per_instance,
            ttft_slo_s=setup.ttft_slo_s,
            max_utilization=setup.max_utilization,
        )
        predicted = PoolPredictions.of_sizing(sizing)
        pools.append(replace(prediction, pool=replace(prediction.pool, predicted=predicted)))
    return replace(
        setup,
        pools=tuple(pools),
        arrival_rate_per_s=arrival_rate_per_s,
        analytical_model=service_model,
        analytical_source="re-evaluated",
        arrival_scvs=tuple(1.0 for _ in pools),
    )


#: The most distinct rates :func:`reevaluate_over_profile` evaluates a profile at (windows grouped by
#: rate into this many equal-count groups, each at its mean rate).
PROFILE_RATE_GROUPS = 16


def reevaluate_over_profile(
    setup: CrossCheckSetup, workload: Workload, window_rates_per_s: np.ndarray, service_model: str
) -> CrossCheckSetup:
    """The pools' time-averaged predictions over a rate profile (a replay's or profile's windows, at
    the simulated scale): utilization averaged over the windows (each lasts as long), the mean TPOT
    averaged over them weighted by their rate (by the tokens they decode). Like with like for a
    simulation whose rate swings: both are nonlinear in the rate (iterations slow as batches fill),
    so the prediction at the mean rate is not the mean of the predictions. The windows are grouped
    by rate into at most :data:`PROFILE_RATE_GROUPS` equal-count groups, each evaluated at its mean
    (:func:`reevaluate`); the returned setup's rate is the profile's mean."""
    rates = np.sort(np.asarray(window_rates_per_s, dtype=np.float64))
    rates = rates[rates > 0]
    if rates.size == 0:
        raise ValidationError("profile: no window with arrivals to evaluate the pools at")
    groups = [g for g in np.array_split(rates, min(PROFILE_RATE_GROUPS, rates.size)) if g.size]
    evaluated = [
        (float(g.mean()), g.size, reevaluate(setup, workload, float(g.mean()), service_model)) for g in groups
    ]
    windows = float(sum(size for _, size, _ in evaluated))
    pools = []
    for index, base in enumerate(evaluated[0][2].pools):
        utilization = sum(size * e.pools[index].utilization for _, size, e in evaluated) / windows
        flow = sum(size * rate for rate, size, _ in evaluated)
        tpot = sum(size * rate * e.pools[index].tpot_s for rate, size, e in evaluated) / flow
        pools.append(base.with_predictions(utilization=utilization, iteration_s=tpot))
    return replace(evaluated[0][2], pools=tuple(pools), arrival_rate_per_s=float(rates.mean()))


# --------------------------------------------------------------------------------------------
# Run length
# --------------------------------------------------------------------------------------------


def longest_service_s(workload: Workload, setup: CrossCheckSetup, service_model: str) -> float:
    """The longest slot-holding time any request can have in any pool, seconds.

    Routes every atom as the simulator does (:meth:`Routing.route`; a band atom both compressed,
    when p_c > 0, and not, when p_c < 1; L_out ≥ 1) and takes max I·t over each pool with
    I = ⌈L_in/chunk⌉ + L_out and t the service model's time per output token (for ``physical``,
    lockstep's W + H·s, an upper bound).
    """
    keep = workload.weights > 0
    total = workload.total_tokens[keep].astype(np.int64)
    outputs = np.maximum(1, workload.output_tokens[keep].astype(np.int64))
    inputs = np.maximum(0, total - outputs)
    total = inputs + outputs
    routing = setup.routing
    model = get_service_model(LOCKSTEP.name if service_model == PHYSICAL else service_model)
    coins = [
        c
        for c, possible in ((0.0, routing.compressibility > 0), (1.0, routing.compressibility < 1))
        if possible
    ]
    longest = 0.0
    for coin in coins:
        index, routed_inputs, routed_totals = routing.route(total, inputs, outputs, np.full(total.size, coin))
        for k, prediction in enumerate(setup.pools):
            mine = index == k
            if not mine.any():
                continue
            pool = prediction.simulated
            prefill = -(-routed_inputs[mine] // pool.prefill_chunk_tokens)
            tpot, _ = model.request_times(
                pool.iteration_base_s, pool.iteration_per_slot_s, pool.calibration_context_tokens,
                pool.slots_per_instance, prefill, routed_totals[mine],
            )  # fmt: skip
            if service_model == PHYSICAL:  # one chunk of prompt in every iteration, a bound in practice
                tpot = tpot + pool.prefill_per_token_s * pool.prefill_chunk_tokens
            longest = max(longest, float(((prefill + outputs[mine]) * tpot).max()))
    return longest


def default_request_count(
    workload: Workload,
    setup: CrossCheckSetup,
    arrival_rate_per_s: float,
    service_model: str,
    warmup_fraction: float = DEFAULT_WARMUP_FRACTION,
) -> int:
    """Requests per seed so that the warm-up outlasts the longest service (with head-room).

    N = ⌈1.25 · λ · S_max / warm-up fraction⌉, at least 100,000 and at most the model's cap
    (4M for lockstep/fleet-sim, 600k for physical); the engine's ``warmed_up`` flag reports
    whether that was enough (waits add to the longest sojourn).
    """
    needed = WARMUP_MARGIN * arrival_rate_per_s * longest_service_s(workload, setup, service_model)
    count = math.ceil(needed / max(warmup_fraction, 1e-9))
    most = MAX_DEFAULT_REQUESTS_PHYSICAL if service_model == PHYSICAL else MAX_DEFAULT_REQUESTS
    return int(min(most, max(MIN_DEFAULT_REQUESTS, count)))


# --------------------------------------------------------------------------------------------
# Simulation and comparison
# --------------------------------------------------------------------------------------------


def _comparison(
    analytical: float | None, simulated: float, half_width: float, rate_per_s: float | None = None
) -> Comparison:
    error = None
    if analytical is not None and math.isfinite(analytical) and math.isfinite(simulated) and simulated != 0:
        error = 100.0 * (analytical - simulated) / simulated
    if analytical is not None and not math.isfinite(analytical):
        analytical = None
    return Comparison(analytical, simulated, half_width, error, rate_per_s)


def compare(
    setup: CrossCheckSetup,
    result: SimulationResult,
    alone: dict[int, tuple[int, float]] | None = None,
    mean_setup: CrossCheckSetup | None = None,
) -> CrossCheckReport:
    """Analytical vs simulated, per pool, with the findings (see the module docstring). ``alone``:
    for the pools whose summary comes from a simulation of their own stream, (requests the fleet
    run measured, that simulation's shortest warm-up in seconds).

    ``mean_setup``: the same pools re-evaluated at the simulated mean rate (a replay or a profile,
    whose rate swings around its mean): time-averaged figures — utilization and mean TPOT — are
    compared with it, like with like, and tails — P99 TTFT and wait, set by the busiest stretches —
    with ``setup``'s predictions at the rate the plan was sized for, the promise being checked; each
    comparison says its rate."""
    alone = alone or {}
    slo = setup.ttft_slo_s
    rows: list[PoolCrossCheck] = []
    findings: list[Finding] = []
    tail_rate = None if mean_setup is None else setup.arrival_rate_per_s
    mean_rate = None if mean_setup is None else mean_setup.arrival_rate_per_s
    for index, (prediction, summary) in enumerate(zip(setup.pools, result.pools, strict=True)):
        at_mean = prediction if mean_setup is None else mean_setup.pools[index]
        metrics = {
            "utilization": _comparison(
                at_mean.utilization, summary.utilization.mean, summary.utilization.ci95_half_width, mean_rate
            ),
            "p50_ttft_s": _comparison(None, summary.ttft_p50_s.mean, summary.ttft_p50_s.ci95_half_width),
            "p99_ttft_s": _comparison(
                prediction.p99_ttft_s, summary.ttft_p99_s.mean, summary.ttft_p99_s.ci95_half_width, tail_rate
            ),
            "p99_wait_s": _comparison(
                prediction.p99_wait_s, summary.wait_p99_s.mean, summary.wait_p99_s.ci95_half_width, tail_rate
            ),
            "tpot_s": _comparison(
                at_mean.tpot_s, summary.tpot_mean_s.mean, summary.tpot_mean_s.ci95_half_width, mean_rate
            ),
        }
        served = summary.requests_served
        ttft = metrics["p99_ttft_s"]
        half = ttft.ci95_half_width if math.isfinite(ttft.ci95_half_width) else 0.0
        gap = ttft.simulated - prediction.p99_ttft_s
        optimistic = gap if served and math.isfinite(gap) and gap > half and gap > 1e-9 else 0.0
        slo_met = served == 0 or ttft.simulated <= slo * (1 + SLO_SLACK)
        name = prediction.name
        utilization = metrics["utilization"]
        interval = p99_interval(summary)
        needed = min_requests_for_quantile(setup.quantile)
        limit = slo * (1 + SLO_SLACK)
        if served == 0 and prediction.simulated.instances == 0:
            verdict = PoolVerdict.NO_TRAFFIC
        elif served < needed:
            verdict = PoolVerdict.INCONCLUSIVE
            findings.append(Finding(FindingKind.TOO_FEW_REQUESTS, name, float(served), limit=float(needed)))
        elif interval[0] > limit:
            verdict = PoolVerdict.BREACH
        elif interval[1] <= limit:
            verdict = PoolVerdict.MET
        else:
            verdict = PoolVerdict.INCONCLUSIVE
            findings.append(
                Finding(
                    FindingKind.STRADDLES_SLO,
                    name,
                    ttft.simulated,
                    limit=slo,
                    low=interval[0],
                    high=interval[1],
                )
            )
        if served and not slo_met:
            findings.append(Finding(FindingKind.SLO_BREACH, name, ttft.simulated, None, slo, half))
        if optimistic > 0:
            findings.append(Finding(FindingKind.OPTIMISTIC, name, ttft.simulated, prediction.p99_ttft_s))
        if served and not summary.warmed_up:
            findings.append(
                Finding(
                    FindingKind.NOT_WARMED_UP,
                    name,
                    summary.longest_sojourn_s.mean,
                    None,
                    alone[index][1] if index in alone else min(result.warmup_s),
                )
            )
        if served and utilization.simulated >= 0.99 and at_mean.utilization < 0.99:
            findings.append(Finding(FindingKind.OVERLOADED, name, utilization.simulated, at_mean.utilization))
        rows.append(
            PoolCrossCheck(
                prediction=prediction,
                requests_measured=served,
                warmed_up=summary.warmed_up or served == 0,
                longest_sojourn_s=summary.longest_sojourn_s.mean,
                metrics=metrics,
                slo_met=slo_met,
                optimistic_p99_ttft_s=optimistic,
                verdict=verdict,
                p99_ttft_interval_s=interval,
                fleet_requests_measured=alone[index][0] if index in alone else None,
            )
        )
    return CrossCheckReport(
        setup=setup,
        result=result,
        pools=tuple(rows),
        slo_met=all(r.slo_met for r in rows),
        warmed_up=all(r.warmed_up for r in rows),
        findings=tuple(findings),
    )


def p99_interval(summary) -> tuple[float, float]:
    """The 95% interval of a pool's P99 TTFT: Student-t over the seeds with a finite P99 when there are
    two or more, else the order-statistic interval of the one seed's sample (±∞ where unbounded)."""
    values = [v for v in summary.ttft_p99_s.values if math.isfinite(v)]
    estimate = summary.ttft_p99_s
    if len(values) >= 2 and math.isfinite(estimate.ci95_half_width):
        return estimate.mean - estimate.ci95_half_width, estimate.mean + estimate.ci95_half_width
    if summary.ttft_p99_low_s is not None and summary.ttft_p99_high_s is not None:
        lows = [v for v in summary.ttft_p99_low_s.values if not math.isnan(v)]
        highs = [v for v in summary.ttft_p99_high_s.values if not math.isnan(v)]
        if lows and highs:
            return min(lows), max(highs)
    return -math.inf, math.inf


def crosscheck_setup(
    setup: CrossCheckSetup,
    workload: Workload,
    *,
    service_model: str,
    dispatch: str = DEFAULT_DISPATCH,
    requests: int | None = None,
    seeds: Sequence[int] = (1, 2, 3),
    warmup_fraction: float = DEFAULT_WARMUP_FRACTION,
    arrival_rate_per_s: float | None = None,
    arrival_times_s: np.ndarray | None = None,
    progress: ProgressCallback | None = None,
    arrivals: ArrivalSpec | None = None,
    mean_setup: CrossCheckSetup | None = None,
    scheduler: str = DEFAULT_SCHEDULER,
) -> CrossCheckReport:
    """Simulate the setup's fleet and compare it with its predictions.

    ``arrival_rate_per_s`` defaults to the setup's; with ``arrival_times_s`` the log is replayed
    (scaled to the rate when one is given). ``requests`` defaults to
    :func:`default_request_count`. ``arrivals``: a replay or profile at the plan's time scale
    (:class:`fleetopt.core.arrivals.ArrivalSpec`), which sets its own length and warm-up. The
    predictions are used as they are: call :func:`reevaluate` first when the simulated traffic or
    model differs from the one they were computed for. ``mean_setup`` (a replay or profile): the
    pools re-evaluated at the simulated mean, for the time-averaged comparisons (:func:`compare`).
    """
    if arrivals is not None and arrivals.kind != "poisson":
        result = simulate_fleet(
            workload, setup.simulated_pools, setup.routing, arrival_rate_per_s=None,
            service_model=service_model, dispatch=dispatch, seeds=seeds, progress=progress,
            arrivals=arrivals, scheduler=scheduler,
        )  # fmt: skip
        return compare(setup, result, mean_setup=mean_setup)
    rate = (
        setup.arrival_rate_per_s
        if arrival_rate_per_s is None and arrival_times_s is None
        else arrival_rate_per_s
    )
    count = requests
    if count is None:
        sizing_rate = rate
        if sizing_rate is None:  # a replay at the log's own rate, (m − 1)/span
            times = np.asarray(arrival_times_s, dtype=np.float64)
            span = float(times.max() - times.min()) if times.size > 1 else 0.0
            sizing_rate = (times.size - 1) / span if span > 0 else setup.arrival_rate_per_s
        count = default_request_count(workload, setup, sizing_rate, service_model, warmup_fraction)
    result = simulate_fleet(
        workload,
        setup.simulated_pools,
        setup.routing,
        arrival_rate_per_s=rate,
        service_model=service_model,
        dispatch=dispatch,
        requests=count,
        warmup_fraction=warmup_fraction,
        seeds=seeds,
        arrival_times_s=arrival_times_s,
        progress=progress,
        scheduler=scheduler,
    )
    alone: dict[int, tuple[int, float]] = {}
    if requests is None and arrival_times_s is None and len(setup.pools) > 1:
        result, alone = _thin_pools_alone(setup, workload, result, service_model, dispatch, seeds, scheduler)
    return compare(setup, result, alone)


def _thin_pools_alone(
    setup: CrossCheckSetup,
    workload: Workload,
    result: SimulationResult,
    service_model: str,
    dispatch: str,
    seeds: Sequence[int],
    scheduler: str = DEFAULT_SCHEDULER,
) -> tuple[SimulationResult, dict[int, tuple[int, float]]]:
    """Each pool the fleet run measured on fewer than :data:`MIN_POOL_REQUESTS` requests per seed,
    simulated again on its own Poisson stream at its share of the fleet's rate
    (:func:`fleetopt.core.simulate.simulate_pool_alone` on the atoms routed to it, with the longest
    service plus head-room in the warm-up and the model's cap on requests per seed). Returns the
    result with those pools' summaries replaced, and for each of them (requests the fleet run
    measured, the shortest warm-up of its own simulation)."""
    pools = list(result.pools)
    alone: dict[int, tuple[int, float]] = {}
    longest = None
    for index, (prediction, summary) in enumerate(zip(setup.pools, result.pools, strict=True)):
        rate = result.arrival_rate_per_s * prediction.arrival_rate_per_s / setup.arrival_rate_per_s
        if prediction.simulated.instances == 0 or not rate > 0:
            continue
        if summary.requests_served >= MIN_POOL_REQUESTS * len(seeds):
            continue
        own = routed_pool_workload(workload, setup.routing, index)
        if own is None:
            continue
        if longest is None:
            longest = longest_service_s(workload, setup, service_model)
        own_result = simulate_pool_alone(
            own, prediction.simulated, rate,
            residence_s=prediction.mean_service_s if math.isfinite(prediction.mean_service_s) else 0.0,
            measured_requests=MIN_POOL_REQUESTS, service_model=service_model, dispatch=dispatch,
            seeds=seeds, warmup_s=WARMUP_MARGIN * longest,
            max_requests=MAX_DEFAULT_REQUESTS_PHYSICAL if service_model == PHYSICAL else MAX_DEFAULT_REQUESTS,
            scheduler=scheduler,
        )  # fmt: skip
        pools[index] = own_result.pools[0]
        alone[index] = (summary.requests_served, min(own_result.warmup_s))
    return replace(result, pools=tuple(pools)), alone
