"""Discrete-event simulation of a routed fleet of KV-slot pools (validates the planner's model).

The planner sizes each pool as an M/G/c queue whose c = instances × slots servers are KV-cache
slots (FleetOpt §3.1, Eq. 3–6). This module replays that model request by request and, in the
``physical`` service model, at the level of engine iterations, so a plan can be checked against
simulated utilization, waits and TTFT (FleetOpt §7.4 does the same with inference-fleet-sim).

Routing (FleetOpt §2.1, §5.1, Eq. 1–2; :class:`fleetopt.core.routing.Routing`): a request of
total length L goes to the pool whose range (B_{k−1}, B_k] holds L; when B₁ < L ≤ γB₁ and
L_out < B₁ it is compressed with probability p_c to L_in' = B₁ − L_out (total B₁) and goes to the
first pool. With no boundaries one pool takes everything. Any number of pools.

Service models, with I = ⌈L_in / chunk⌉ + L_out iterations and P = ⌈L_in / chunk⌉:

* ``lockstep`` (FleetOpt Eq. 3–4, 7): every iteration costs t = W + H·s (all s slots busy);
  S = I·t; TTFT = wait + P·t + t; TPOT = t.
* ``fleet-sim`` (the reference implementation, FACTS §1): t_L = W + H·(L / L_cal)·s;
  S = I·t_L; TTFT = wait + P·(W + H·L / L_cal) (prefill at one active sequence); TPOT = t_L.
* ``physical``: iteration by iteration, each instance scheduling as vLLM's V1 scheduler does
  (``scheduler="vllm"``: one token budget per iteration shared by the running requests and then
  the waiting ones, KV blocks allocated as tokens are computed, the newest request preempted when
  they run out, the first token with the last prompt chunk; an iteration costs W + H·decoding +
  τ·prompt tokens + each chunk's attention), or as the engine before it did (``"slots"``): see
  :func:`iteration_settings` and :mod:`fleetopt.core.engines`. TPOT is vLLM's, (departure − first
  token)/(L_out − 1) (``slots``: the mean iteration over the residence, (departure − admission)/I).

Dispatch (:data:`DISPATCH_POLICIES`): ``pooled`` (one FCFS queue per pool, any free slot: the
M/G/c assumption), ``round-robin`` (request k of a pool goes to instance k mod n),
``least-loaded`` (the instance with the fewest requests in service or queued; ties to the
lowest index) and, with ``physical``, ``least-waiting``, ``least-kv``, ``least-tokens`` and
``random``; all but ``pooled`` give every instance its own FCFS queue.

Measurement: the first ``warmup_fraction`` of the fleet's arrivals are discarded; statistics
are over the remaining requests of each pool, and utilization is the busy slot-time clipped to
the window [first measured arrival, last arrival] divided by c × window length. Confidence
intervals over seeds are Student-t 95% (mean ± t_{0.975,k−1}·sd/√k).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from fleetopt.core.arrivals import ArrivalSpec
from fleetopt.core.engines import (
    IterationRun,
    IterationSettings,
    dispatch_known_service,
    run_iteration_engine,
)
from fleetopt.core.engines import fcfs_start_times as fcfs_start_times  # re-exported
from fleetopt.core.hardware import attention_s_per_token_pair as attention_s_per_token_pair  # re-exported
from fleetopt.core.routing import Routing
from fleetopt.core.service import SERVICE_MODELS as PLANNER_SERVICE_MODELS
from fleetopt.core.service import get_service_model
from fleetopt.core.workload import Workload
from fleetopt.errors import ValidationError

#: The simulator's own iteration-level engine, beside every planner service model.
PHYSICAL = "physical"
#: What the simulator runs: the planner's request-level models (those simulated as themselves), and
#: the iteration-level engine (which checks the planner models that have no request-level form).
SERVICE_MODELS = (
    *(name for name in PLANNER_SERVICE_MODELS if get_service_model(name).simulation_model == name),
    PHYSICAL,
)
#: How a pool's requests reach its instances. ``pooled``: one FCFS queue, any free slot (the M/G/c
#: assumption); ``round-robin``: request k to instance k mod n (vLLM production-stack's default
#: ``roundrobin``); ``least-loaded``: the fewest outstanding requests, running and waiting, lowest
#: index on ties (llm-d's ``active-request-scorer``, a least-request balancer); ``least-kv``: the
#: lowest KV-cache usage (llm-d's ``kv-cache-utilization-scorer``); ``least-waiting``: the fewest
#: waiting requests (llm-d's ``queue-scorer``); ``random``: uniformly at random (a hash or random
#: balancer); ``least-tokens``: the fewest prompt tokens of outstanding requests (llm-d's
#: ``token-load-scorer``). The last four break ties at random, as llm-d's max-score picker does, and
#: need the ``physical`` engine (the KV and the waiting queue are its state). Sources:
#: docs/validation.md.
DISPATCH_POLICIES = (
    "pooled", "round-robin", "least-loaded", "least-kv", "least-waiting", "random", "least-tokens",
)  # fmt: skip
#: The policies the request-level models (lockstep, fleet-sim) also run.
REQUEST_LEVEL_DISPATCH = ("pooled", "round-robin", "least-loaded")
#: How the ``physical`` engine schedules one instance's iterations (:func:`iteration_settings`):
#: ``vllm``, vLLM's V1 scheduler; ``slots``, the engine before it (each request its own chunk, a
#: KV slot reserved per request, FleetOpt's first-token convention), kept as its parameters.
SCHEDULERS = ("vllm", "slots")
DEFAULT_SCHEDULER = "vllm"
DEFAULT_SEEDS = (1, 2, 3)
#: Requests per seed the simulator accepts: it keeps ~10 arrays of 8 bytes per request and, for
#: ``physical``, Python lists per request (~100 bytes each), so 10⁷ is about 1 GB.
MAX_REQUESTS = 10_000_000
#: The most seeds (independent replications) one simulation runs: each re-runs the whole fleet,
#: and 100 already narrow a confidence interval ~6× below the default 3 (1/√n).
MAX_SEEDS = 100
#: The longest simulated time, seconds (about 32 years): arrival and service times are float64
#: seconds, which keep microseconds only below ~2⁵³ µs ≈ 9·10⁹ s; a Poisson run of N requests at rate
#: λ spans N/λ (at 10⁻³⁰⁰ req/s every wait rounded to 0 and the fleet "met" its SLO).
MAX_SIMULATED_SPAN_S = 1e9

#: Progress callback: ``progress(requests_done, requests_total)`` over all seeds and pools.
ProgressCallback = Callable[[int, int], None]


@dataclass(frozen=True)
class SimulatedPool:
    """One pool of identical serving instances.

    Attributes:
        name: label (e.g. ``"short"``, ``"long"``).
        instances: number of serving instances n.
        slots_per_instance: concurrent sequences (KV slots) per instance s; c = n·s.
        context_tokens: the pool's context window; a routed request longer than this is an error.
        iteration_base_s: W of t_iter = W + H·n, seconds.
        iteration_per_slot_s: H of t_iter = W + H·n, seconds per active sequence.
        prefill_chunk_tokens: chunked-prefill size, tokens per iteration.
        calibration_context_tokens: L_cal of the fleet-sim model's H·(L / L_cal), tokens.
        prefill_per_token_s: τ, seconds per prompt token in an iteration (``physical`` only).
        physical_iteration_base_s: the W the ``physical`` engine uses when it differs from the
            profile's (the weight-streaming floor of :func:`fleetopt.core.service.iteration_costs`).
        ttft_overhead_s: T0, added to every first token by the ``physical`` engine, seconds.
        kv_read_s_per_token: the KV-read floor of the ``physical`` engine: a decoding sequence of L
            tokens costs max(H, this × L) per iteration (the engine model's floor,
            :func:`fleetopt.core.service.iteration_costs`), seconds per token; 0 = H always. The
            ``vllm`` scheduler also floors a prompt chunk at this × the tokens it reads and writes.
        kv_capacity_tokens: KV cache of one instance, tokens (the ``vllm`` scheduler allocates it in
            blocks as tokens are computed and preempts when it runs out); None = never runs out.
        kv_block_tokens: KV block size, tokens (vLLM's ``block_size``).
        attention_s_per_token_pair: what a prompt token's attention costs per token before it in the
            context, seconds (the ``vllm`` scheduler: a chunk of c tokens at context x costs
            τ·c + this × (c·x + c(c + 1)/2)); 0 = prompt tokens cost τ whatever the context.
    """

    name: str
    instances: int
    slots_per_instance: int
    context_tokens: int
    iteration_base_s: float
    iteration_per_slot_s: float
    prefill_chunk_tokens: int
    calibration_context_tokens: int = 8192
    prefill_per_token_s: float = 0.0
    physical_iteration_base_s: float | None = None
    ttft_overhead_s: float = 0.0
    kv_read_s_per_token: float = 0.0
    kv_capacity_tokens: int | None = None
    kv_block_tokens: int = 16
    attention_s_per_token_pair: float = 0.0

    @property
    def servers(self) -> int:
        """c = instances × slots_per_instance."""
        return self.instances * self.slots_per_instance


@dataclass(frozen=True)
class Estimate:
    """A statistic over seeds: the mean, the Student-t 95% half-width and the per-seed values."""

    mean: float
    ci95_half_width: float
    values: tuple[float, ...]


@dataclass(frozen=True)
class PoolSeedStats:
    """One pool in one seed's run (measured requests and window only).

    ``utilization`` is the time average: busy slot-time clipped to the window / (c·window).
    ``work_utilization`` is the work brought by the measured arrivals: Σ slot-holding times /
    (c·window); it does not depend on the warm-up, and in steady state both have the same mean
    (λ·E[S]/c). ``longest_sojourn_s`` is the longest arrival-to-departure time of any request of
    the pool in the run; a warm-up shorter than it leaves ``utilization`` biased low (see
    :attr:`PoolSummary.warmed_up`). ``wait`` is the wait for a slot.
    """

    pool_name: str
    seed: int
    requests_served: int
    routed_fraction: float
    arrival_rate_per_s: float
    utilization: float
    ttft_p50_s: float
    ttft_p99_s: float
    wait_mean_s: float
    wait_p99_s: float
    wait_probability: float
    tpot_mean_s: float
    tpot_p99_s: float
    service_mean_s: float
    work_utilization: float
    longest_sojourn_s: float
    ttft_p99_low_s: float = math.nan
    ttft_p99_high_s: float = math.nan
    preempted_fraction: float = 0.0


@dataclass(frozen=True)
class PoolSummary:
    """One pool across seeds: every :class:`PoolSeedStats` field as an :class:`Estimate`.

    ``warmed_up`` is true when in every seed the warm-up lasted at least the pool's longest
    sojourn, so no request that a stationary system would have carried into the window is missing.
    """

    pool: SimulatedPool
    requests_served: int
    warmed_up: bool
    routed_fraction: Estimate
    arrival_rate_per_s: Estimate
    utilization: Estimate
    ttft_p50_s: Estimate
    ttft_p99_s: Estimate
    wait_mean_s: Estimate
    wait_p99_s: Estimate
    wait_probability: Estimate
    tpot_mean_s: Estimate
    tpot_p99_s: Estimate
    service_mean_s: Estimate
    work_utilization: Estimate
    longest_sojourn_s: Estimate
    ttft_p99_low_s: Estimate | None = None
    ttft_p99_high_s: Estimate | None = None
    preempted_fraction: Estimate | None = None


@dataclass(frozen=True, eq=False)
class RequestTrace:
    """Per-request times of one pool in one seed (kept only with ``keep_requests=True``).

    ``slot_start_s`` is when the request got a slot (lockstep/fleet-sim: service start;
    physical: when a slot was reserved, admission following at the next iteration boundary).
    ``measured`` flags the requests past the warm-up; ``preemptions`` counts how often each was
    preempted (the ``physical`` engine's ``vllm`` scheduler; zeros otherwise).
    """

    pool_name: str
    seed: int
    arrival_s: np.ndarray
    slot_start_s: np.ndarray
    admission_s: np.ndarray
    first_token_s: np.ndarray
    departure_s: np.ndarray
    iterations: np.ndarray
    measured: np.ndarray
    preemptions: np.ndarray | None = None


@dataclass(frozen=True, eq=False)
class SimulationResult:
    """Output of :func:`simulate_fleet`.

    Attributes:
        service_model, dispatch: as requested.
        arrival_rate_per_s: the fleet's arrival rate (target for replay), req/s.
        requests: fleet requests simulated per seed (warm-up included).
        warmup_fraction: share of each seed's first arrivals discarded.
        seeds: the seeds run.
        window_s: per seed, the length of the measured window, seconds.
        warmup_s: per seed, the length of the discarded warm-up, seconds (it should span several
            mean service times for the pools to reach steady state).
        pools: per-pool summaries across seeds, in the order of the input pools.
        per_seed: every (pool, seed) statistic.
        traces: per-request arrays when ``keep_requests=True``, else empty.
    """

    service_model: str
    dispatch: str
    arrival_rate_per_s: float
    requests: int
    warmup_fraction: float
    seeds: tuple[int, ...]
    window_s: tuple[float, ...]
    warmup_s: tuple[float, ...]
    pools: tuple[PoolSummary, ...]
    per_seed: tuple[PoolSeedStats, ...]
    traces: tuple[RequestTrace, ...] = ()
    requests_per_seed: tuple[int, ...] = ()
    arrival_process: str = "poisson"
    scheduler: str = DEFAULT_SCHEDULER


# --------------------------------------------------------------------------------------------
# Inputs: validation, sampling, routing
# --------------------------------------------------------------------------------------------


def _validate(
    workload: Workload,
    pools: Sequence[SimulatedPool],
    routing: Routing,
    arrival_rate_per_s: float | None,
    service_model: str,
    dispatch: str,
    requests: int,
    warmup_fraction: float,
    seeds: Sequence[int],
    arrival_times_s: np.ndarray | None,
    scheduler: str = DEFAULT_SCHEDULER,
) -> None:
    if service_model not in SERVICE_MODELS:
        raise ValidationError(f"service model: {service_model!r} is not one of {', '.join(SERVICE_MODELS)}")
    if dispatch not in DISPATCH_POLICIES:
        raise ValidationError(f"dispatch: {dispatch!r} is not one of {', '.join(DISPATCH_POLICIES)}")
    if service_model != PHYSICAL and dispatch not in REQUEST_LEVEL_DISPATCH:
        raise ValidationError(
            f"dispatch: {dispatch!r} reads the engine's KV cache or waiting queue, which only the {PHYSICAL} "
            f"service model has; {service_model} takes {', '.join(REQUEST_LEVEL_DISPATCH)}"
        )
    if scheduler not in SCHEDULERS:
        raise ValidationError(f"scheduler: {scheduler!r} is not one of {', '.join(SCHEDULERS)}")
    if arrival_times_s is None and arrival_rate_per_s is None:
        raise ValidationError("arrival rate: needed unless arrival times are replayed")
    if arrival_rate_per_s is not None and not (arrival_rate_per_s > 0 and math.isfinite(arrival_rate_per_s)):
        raise ValidationError(f"arrival rate: {arrival_rate_per_s!r} req/s must be a finite number > 0")
    if requests < 2:
        raise ValidationError(f"requests: {requests} must be ≥ 2")
    if requests > MAX_REQUESTS:
        raise ValidationError(
            f"requests: {requests:,} per seed is more than this simulator holds in memory "
            f"(at most {MAX_REQUESTS:,}, about 1 GB); use more seeds instead"
        )
    if not 0.0 <= warmup_fraction < 1.0:
        raise ValidationError(f"warm-up fraction: {warmup_fraction!r} must be in [0, 1)")
    if len(seeds) == 0:
        raise ValidationError("seeds: at least one seed is needed")
    if len(seeds) > MAX_SEEDS:
        raise ValidationError(
            f"seeds: {len(seeds):,} is more than the {MAX_SEEDS} a simulation runs (each re-runs the whole "
            f"fleet; {MAX_SEEDS} already narrow the intervals ~6× below 3): use fewer seeds or more requests"
        )
    if (
        arrival_times_s is None
        and arrival_rate_per_s is not None
        and requests / arrival_rate_per_s > MAX_SIMULATED_SPAN_S
    ):
        raise ValidationError(
            f"arrival rate: {arrival_rate_per_s:g} req/s spreads {requests:,} requests over "
            f"{requests / arrival_rate_per_s:.3g} s, beyond the {MAX_SIMULATED_SPAN_S:.0e} s (about 32 "
            f"years) a simulation keeps to the microsecond; simulate at least "
            f"{requests / MAX_SIMULATED_SPAN_S:.3g} req/s (or fewer requests)"
        )
    if len(pools) != routing.pool_count:
        raise ValidationError(
            f"pools: a routing with {len(routing.boundaries_tokens)} boundaries takes {routing.pool_count} "
            f"pool(s), got {len(pools)}"
        )
    for pool, boundary in zip(pools, routing.boundaries_tokens, strict=False):
        if pool.context_tokens < boundary:
            raise ValidationError(
                f"pool {pool.name!r}: context {pool.context_tokens} tokens is below its boundary {boundary}"
            )
    if len({pool.name for pool in pools}) != len(pools):
        raise ValidationError(f"pools: names must be distinct, got {[pool.name for pool in pools]}")
    for pool in pools:
        if pool.instances < 0 or pool.slots_per_instance < 1:
            raise ValidationError(
                f"pool {pool.name!r}: instances {pool.instances} must be ≥ 0 and slots "
                f"{pool.slots_per_instance} ≥ 1"
            )
        if pool.iteration_base_s < 0 or pool.iteration_per_slot_s < 0:
            raise ValidationError(f"pool {pool.name!r}: W and H must be ≥ 0 seconds")
        if pool.iteration_base_s + pool.iteration_per_slot_s <= 0:
            raise ValidationError(f"pool {pool.name!r}: W + H must be > 0 (service times would be 0)")
        if pool.prefill_chunk_tokens < 1 or pool.calibration_context_tokens < 1:
            raise ValidationError(f"pool {pool.name!r}: chunk and calibration context must be ≥ 1 token")
        if pool.kv_block_tokens < 1:
            raise ValidationError(f"pool {pool.name!r}: KV block {pool.kv_block_tokens} must be ≥ 1 token")
        if (
            service_model == PHYSICAL
            and scheduler == "vllm"
            and pool.kv_capacity_tokens is not None
            and pool.kv_capacity_tokens // pool.kv_block_tokens * pool.kv_block_tokens < pool.context_tokens
        ):
            raise ValidationError(
                f"pool {pool.name!r}: its KV cache ({pool.kv_capacity_tokens} tokens in blocks of "
                f"{pool.kv_block_tokens}) cannot hold one request of its context ({pool.context_tokens} "
                "tokens); vLLM would preempt it forever"
            )
    if workload.max_total_tokens > pools[-1].context_tokens:
        raise ValidationError(
            f"workload {workload.name!r}: its longest request ({workload.max_total_tokens} tokens) "
            f"exceeds pool {pools[-1].name!r}'s context of {pools[-1].context_tokens} tokens"
        )


def routed_pool_workload(workload: Workload, routing: Routing, index: int) -> Workload | None:
    """The atoms pool ``index`` receives as a workload of their own (None when it receives none):
    every atom as routed uncompressed (weight w·(1 − p_c) for band atoms, w otherwise) and
    compressed (w·p_c, with L_in' = B − L_out), keeping those in the pool. Fed at the pool's rate,
    it is the pool's own request stream (Poisson arrivals split by routing stay Poisson)."""
    total, inputs, outputs = workload.total_tokens, workload.input_tokens, workload.output_tokens
    p_c = routing.compressibility
    pool, _, _ = routing.route(total, inputs, outputs, np.ones(total.size))
    pool_if_compressed, _, compressed_total = routing.route(total, inputs, outputs, np.zeros(total.size))
    band = compressed_total != total  # the atoms compressed when their coin falls below p_c
    totals = np.concatenate((total, compressed_total))
    outs = np.concatenate((outputs, outputs))
    cached = np.maximum(0, total - outputs - inputs)  # prefix caching's uncharged prompt tokens, if any
    ins = totals - outs - np.concatenate((cached, np.zeros_like(cached)))
    weights = np.concatenate((
        workload.weights * np.where(pool == index, np.where(band, 1.0 - p_c, 1.0), 0.0),
        workload.weights * np.where((pool_if_compressed == index) & band, p_c, 0.0),
    ))  # fmt: skip
    keep = weights > 0
    if not keep.any():
        return None
    order = np.argsort(totals[keep], kind="stable")
    return Workload(
        name=f"{workload.name}[{index}]", total_tokens=totals[keep][order], input_tokens=ins[keep][order],
        output_tokens=outs[keep][order], weights=weights[keep][order], kind="requests",
    )  # fmt: skip


def simulate_pool_alone(
    workload: Workload,
    pool: SimulatedPool,
    arrival_rate_per_s: float,
    *,
    residence_s: float,
    measured_requests: int,
    service_model: str,
    dispatch: str,
    seeds: Sequence[int],
    warmup_s: float = 0.0,
    max_requests: int | None = None,
    scheduler: str = DEFAULT_SCHEDULER,
) -> SimulationResult:
    """One pool on its own Poisson stream (``workload``: its routed atoms,
    :func:`routed_pool_workload`): a warm-up of at least 30 s, ten mean residences (a pool's
    occupancy builds up over several of them) and ``warmup_s``, then ``measured_requests``
    measured requests per seed (at least a minute of them). With ``max_requests`` the run keeps
    within it: at most half of it measured, the warm-up cut to the rest (the summary's
    ``warmed_up`` says whether that was enough). ``residence_s``: the pool's mean slot-holding time."""
    warmup, measured = pool_alone_requests(
        arrival_rate_per_s, residence_s=residence_s, measured_requests=measured_requests, warmup_s=warmup_s
    )
    if max_requests is not None:
        measured = min(measured, max_requests // 2)
        warmup = min(warmup, max_requests - measured)
    return simulate_fleet(
        workload, [pool], Routing.homogeneous(), arrival_rate_per_s=arrival_rate_per_s,
        service_model=service_model, dispatch=dispatch, requests=warmup + measured,
        warmup_fraction=warmup / (warmup + measured), seeds=seeds, scheduler=scheduler,
    )  # fmt: skip


def pool_alone_requests(
    arrival_rate_per_s: float, *, residence_s: float, measured_requests: int, warmup_s: float = 0.0
) -> tuple[int, int]:
    """(warm-up, measured) requests per seed :func:`simulate_pool_alone` runs uncapped: a warm-up of
    at least 30 s, ten mean residences and ``warmup_s``; at least ``measured_requests`` measured and
    a minute of them."""
    warmup_s = max(30.0, 10.0 * residence_s, warmup_s)
    measured = max(measured_requests, math.ceil(arrival_rate_per_s * 60.0))
    return math.ceil(arrival_rate_per_s * warmup_s), measured


def _sample_atoms(workload: Workload, rng: np.random.Generator, count: int) -> np.ndarray:
    """Atom indices drawn independently with probability ∝ weight (inverse-CDF on the weights)."""
    cumulative = np.cumsum(workload.weights, dtype=np.float64)
    draws = rng.random(count) * cumulative[-1]
    index = np.searchsorted(cumulative, draws, side="right")
    return np.minimum(index, cumulative.size - 1)


def _arrival_times(
    rng: np.random.Generator,
    count: int,
    arrival_rate_per_s: float | None,
    replay_times_s: np.ndarray | None,
) -> np.ndarray:
    """Poisson arrivals at ``arrival_rate_per_s``, or a replayed log of times.

    Replay: the times are sorted and shifted to start at 0; with a target rate the inter-arrival
    times are multiplied by (log rate / target rate), log rate = (m − 1)/span. A log shorter than
    ``count`` is repeated, each copy starting one mean gap after the previous one ends.
    """
    if replay_times_s is None:
        assert arrival_rate_per_s is not None
        return np.cumsum(rng.exponential(1.0 / arrival_rate_per_s, count))
    times = np.sort(np.asarray(replay_times_s, dtype=np.float64))
    times = times - times[0]
    span = float(times[-1])
    mean_gap = span / (times.size - 1) if times.size > 1 and span > 0 else 1.0
    if arrival_rate_per_s is not None:
        scale = 1.0 / (mean_gap * arrival_rate_per_s)
        times, span, mean_gap = times * scale, span * scale, mean_gap * scale
    copies = -(-count // times.size)
    offsets = np.arange(copies, dtype=np.float64) * (span + mean_gap)
    return (times[None, :] + offsets[:, None]).ravel()[:count]


# --------------------------------------------------------------------------------------------
# Engines: fleetopt/core/engines.py (the hot loops, compiled with numba when it is installed)
# --------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------
# Statistics
# --------------------------------------------------------------------------------------------


def _estimate(values: Sequence[float]) -> Estimate:
    """Mean and Student-t 95% half-width over seeds (NaN half-width with one seed)."""
    array = np.asarray(values, dtype=np.float64)
    finite = array[np.isfinite(array)]
    if finite.size == 0:
        return Estimate(math.nan, math.nan, tuple(array.tolist()))
    mean = float(finite.mean())
    if finite.size < 2:
        return Estimate(mean, math.nan, tuple(array.tolist()))
    from scipy.stats import t as student_t

    half = float(student_t.ppf(0.975, finite.size - 1) * finite.std(ddof=1) / math.sqrt(finite.size))
    return Estimate(mean, half, tuple(array.tolist()))


def _busy_time(start: np.ndarray, end: np.ndarray, window_start: float, window_end: float) -> float:
    """Σ |[start, end] ∩ [window_start, window_end]|."""
    return float(np.clip(np.minimum(end, window_end) - np.maximum(start, window_start), 0.0, None).sum())


def _pool_stats(
    pool: SimulatedPool,
    seed: int,
    trace: RequestTrace,
    tpot_s: np.ndarray,
    measured_total: int,
    window: tuple[float, float],
) -> PoolSeedStats:
    measured = trace.measured
    served = int(measured.sum())
    window_s = window[1] - window[0]
    capacity = pool.servers * window_s
    busy = _busy_time(trace.admission_s, trace.departure_s, *window)
    utilization = busy / capacity if capacity > 0 else math.nan
    nan = math.nan
    longest = float((trace.departure_s - trace.arrival_s).max()) if trace.arrival_s.size else 0.0
    if served == 0:
        return PoolSeedStats(
            pool.name, seed, 0, 0.0, 0.0, utilization, nan, nan, nan, nan, nan, nan, nan, nan, 0.0, longest
        )
    holding = (trace.departure_s - trace.admission_s)[measured]
    wait = (trace.slot_start_s - trace.arrival_s)[measured]
    ttft = (trace.first_token_s - trace.arrival_s)[measured]
    tpot = tpot_s[measured]
    low, high = quantile_interval(ttft, 0.99)
    return PoolSeedStats(
        pool_name=pool.name,
        seed=seed,
        requests_served=served,
        routed_fraction=served / measured_total,
        arrival_rate_per_s=served / window_s if window_s > 0 else nan,
        utilization=utilization,
        ttft_p50_s=float(np.percentile(ttft, 50)),
        ttft_p99_s=float(np.percentile(ttft, 99)),
        wait_mean_s=float(wait.mean()),
        wait_p99_s=float(np.percentile(wait, 99)),
        wait_probability=float((wait > 0).mean()),
        tpot_mean_s=_nan_aware(tpot, np.mean, np.nanmean),
        tpot_p99_s=_nan_aware(tpot, lambda v: np.percentile(v, 99), lambda v: np.nanpercentile(v, 99)),
        service_mean_s=float(holding.mean()),
        work_utilization=float(holding.sum() / capacity) if capacity > 0 else nan,
        longest_sojourn_s=longest,
        ttft_p99_low_s=low,
        ttft_p99_high_s=high,
        preempted_fraction=(
            0.0 if trace.preemptions is None else float((trace.preemptions[measured] > 0).mean())
        ),
    )


def _nan_aware(
    values: np.ndarray, plain: Callable[[np.ndarray], float], nan: Callable[[np.ndarray], float]
) -> float:
    """``plain(values)``, or ``nan(values)`` when some are NaN (a TPOT of one output token); NaN when
    all are."""
    if not np.isnan(values).any():
        return float(plain(values))
    return float(nan(values)) if not np.isnan(values).all() else math.nan


def quantile_interval(values: np.ndarray, quantile: float, confidence: float = 0.95) -> tuple[float, float]:
    """The distribution-free ``confidence`` interval of the ``quantile`` of i.i.d. ``values``: order
    statistics x_(l) ≤ Q ≤ x_(u) with l, u the binomial(n, q) quantiles at (1 ∓ confidence)/2
    (Hahn & Meeker 1991, §5.2). ±∞ where n is too small for that bound to exist (for the P99 at
    95%, an upper bound needs n ≥ 368)."""
    from scipy.stats import binom

    n = int(values.size)
    if n == 0:
        return math.nan, math.nan
    tail = 0.5 * (1.0 - confidence)
    lower_rank = int(binom.ppf(tail, n, quantile))  # P(Bin < l) ≤ tail: x_(l) ≤ Q (1-based rank l)
    upper_rank = int(binom.ppf(1.0 - tail, n, quantile)) + 1
    ordered = np.partition(values, [r - 1 for r in (lower_rank, upper_rank) if 1 <= r <= n])
    low = float(ordered[lower_rank - 1]) if lower_rank >= 1 else -math.inf
    high = float(ordered[upper_rank - 1]) if upper_rank <= n else math.inf
    return low, high


def iteration_settings(pool: SimulatedPool, scheduler: str = DEFAULT_SCHEDULER) -> IterationSettings:
    """How the ``physical`` engine schedules ``pool``'s iterations under ``scheduler``.

    ``vllm``: vLLM's V1 scheduler (vllm/v1/core/sched/scheduler.py at vLLM commit 00024d3;
    docs/validation.md): one budget of ``prefill_chunk_tokens`` tokens per iteration
    (``max_num_batched_tokens``) shared by the running requests in order and then the waiting
    ones, no per-request cap (``long_prefill_token_threshold`` 0, its default), at most
    ``slots_per_instance`` running (``max_num_seqs``), KV blocks of ``kv_block_tokens`` allocated
    as tokens are computed out of ``kv_capacity_tokens``, preemption of the newest running request
    when they run out, the first token with the last prompt chunk, and prompt chunks that cost their
    attention over the context already cached, floored at the KV they read.

    ``slots``: the engine as it was before (every prefilling request its own chunk of
    ``prefill_chunk_tokens`` per iteration and no shared budget, a KV slot reserved per request so the
    cache never runs out, the first token one iteration after the prompt — FleetOpt Eq. 7's
    wait + P·t + t — and prompt tokens at τ whatever the context)."""
    if scheduler == "slots":
        return IterationSettings(
            token_budget=None, prefill_cap_tokens=pool.prefill_chunk_tokens, kv_blocks=None,
            kv_block_tokens=pool.kv_block_tokens, first_token_offset=1,
        )  # fmt: skip
    blocks = None if pool.kv_capacity_tokens is None else pool.kv_capacity_tokens // pool.kv_block_tokens
    return IterationSettings(
        token_budget=pool.prefill_chunk_tokens, prefill_cap_tokens=None, kv_blocks=blocks,
        kv_block_tokens=pool.kv_block_tokens, first_token_offset=0,
        attention_s_per_token_pair=pool.attention_s_per_token_pair,
        prefill_kv_read_s_per_token=pool.kv_read_s_per_token,
    )  # fmt: skip


def run_pool_engine(
    pool: SimulatedPool,
    arrival_s: np.ndarray,
    inputs: np.ndarray,
    outputs: np.ndarray,
    dispatch: str,
    scheduler: str = DEFAULT_SCHEDULER,
    draws: np.ndarray | None = None,
    record_from_s: float = -1.0,
    cached: np.ndarray | None = None,
) -> IterationRun:
    """One pool's request stream through the ``physical`` engine (:func:`run_iteration_engine`):
    prompts of ``inputs`` tokens (vLLM needs one to sample from: an empty prompt is its BOS token
    alone), ``outputs`` ≥ 1, the decode KV-read excess of each request at its total length,
    ``draws`` for the dispatch ties (zeros when None), the iteration record from ``record_from_s``
    and ``cached`` prompt tokens per request found in the prefix cache (none when None)."""
    settings = iteration_settings(pool, scheduler)
    prompts = inputs if settings.first_token_offset else np.maximum(inputs, 1)
    totals = prompts + outputs
    h = pool.iteration_per_slot_s
    w = pool.iteration_base_s if pool.physical_iteration_base_s is None else pool.physical_iteration_base_s
    return run_iteration_engine(
        arrival_s, prompts, outputs, np.maximum(0.0, pool.kv_read_s_per_token * totals - h),
        np.zeros(arrival_s.size) if draws is None else draws,
        instances=pool.instances, slots=pool.slots_per_instance,
        base_s=w, per_decode_s=h, per_prefill_token_s=pool.prefill_per_token_s, settings=settings,
        dispatch=dispatch, record_from_s=record_from_s,
        cached_tokens=None if cached is None else np.minimum(cached, np.maximum(prompts - 1, 0)),
    )  # fmt: skip


def _simulate_pool(
    pool: SimulatedPool,
    seed: int,
    arrival_s: np.ndarray,
    inputs: np.ndarray,
    outputs: np.ndarray,
    totals: np.ndarray,
    measured: np.ndarray,
    service_model: str,
    dispatch: str,
    progress: Callable[[int], None] | None,
    scheduler: str = DEFAULT_SCHEDULER,
    draws: np.ndarray | None = None,
    cached: np.ndarray | None = None,
) -> tuple[RequestTrace, np.ndarray]:
    """Simulate one pool's request stream; returns the trace and each request's TPOT. ``cached``:
    the prompt tokens of each request its prefix cache holds (none when None): not computed, but
    held in the KV cache (``physical``), or left out of the prefill iterations (the others)."""
    w, h, s = pool.iteration_base_s, pool.iteration_per_slot_s, pool.slots_per_instance
    computed = inputs if cached is None else inputs - np.minimum(cached, np.maximum(inputs - 1, 0))
    prefill = -(-computed // pool.prefill_chunk_tokens)
    iterations = prefill + outputs
    if service_model == PHYSICAL:
        settings = iteration_settings(pool, scheduler)
        run = run_pool_engine(pool, arrival_s, inputs, outputs, dispatch, scheduler, draws, cached=cached)
        if progress is not None:
            progress(arrival_s.size)
        trace = RequestTrace(
            pool.name, seed, arrival_s, run.slot_start_s, run.admission_s,
            run.first_token_s + pool.ttft_overhead_s, run.departure_s, iterations, measured, run.preemptions,
        )  # fmt: skip
        if settings.first_token_offset:  # the mean iteration over the request's residence
            tpot = (run.departure_s - run.admission_s) / iterations if arrival_s.size else np.empty(0)
        else:  # vLLM's: the time between output tokens after the first (none with one output token)
            with np.errstate(divide="ignore", invalid="ignore"):
                tpot = np.where(outputs > 1, (run.departure_s - run.first_token_s) / (outputs - 1), np.nan)
        return trace, tpot
    tpot, first_token_delay = get_service_model(service_model).request_times(
        w, h, pool.calibration_context_tokens, s, prefill, totals
    )
    service = iterations * tpot
    start = dispatch_known_service(arrival_s, service, pool.instances, s, dispatch)
    if progress is not None:
        progress(arrival_s.size)
    trace = RequestTrace(
        pool.name,
        seed,
        arrival_s,
        start,
        start,
        start + first_token_delay,
        start + service,
        iterations,
        measured,
    )
    return trace, tpot


# --------------------------------------------------------------------------------------------
# Public entry point
# --------------------------------------------------------------------------------------------


def simulate_fleet(
    workload: Workload,
    pools: Sequence[SimulatedPool],
    routing: Routing,
    *,
    arrival_rate_per_s: float | None,
    service_model: str = "lockstep",
    dispatch: str = "pooled",
    requests: int = 100_000,
    warmup_fraction: float = 0.2,
    seeds: Sequence[int] = DEFAULT_SEEDS,
    arrival_times_s: np.ndarray | None = None,
    keep_requests: bool = False,
    progress: ProgressCallback | None = None,
    arrivals: ArrivalSpec | None = None,
    gateway: Callable[..., tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None,
    scheduler: str = DEFAULT_SCHEDULER,
) -> SimulationResult:
    """Simulate ``requests`` fleet arrivals per seed through the routed pools.

    ``gateway(rng, arrival_s, inputs, outputs, coin)``, when given, routes the requests instead of
    ``routing.route`` (a gateway that estimates prompt lengths, :mod:`fleetopt.core.gateway_sim`):
    it returns each request's pool (−1: rejected, served by no pool), prompt and total tokens.

    Lengths are drawn independently by atom weight from ``workload`` (a Workload keeps
    aggregated atoms only, so a log's own (time, length) pairing is not available). Arrivals are
    Poisson at ``arrival_rate_per_s``, or, with ``arrival_times_s``, the given times replayed
    (scaled to ``arrival_rate_per_s`` when it is given; see :func:`_arrival_times`). ``arrivals``
    (:class:`fleetopt.core.arrivals.ArrivalSpec`) replaces both: each seed draws its own arrivals
    (a replay or a profile covers the log once, after its own warm-up, so ``requests`` and
    ``warmup_fraction`` do not apply). Pools run from the shortest to the longest, one per pool of
    ``routing``. See the module docstring for the service models, dispatch policies and the
    measurement window.
    """
    if arrivals is not None and arrivals.kind == "poisson":
        arrival_rate_per_s, arrivals = arrivals.rate_per_s, None
    if arrivals is not None:
        arrival_rate_per_s, arrival_times_s = None, None
        requests = max(2, math.ceil(arrivals.expected_requests()))
    _validate(
        workload,
        pools,
        routing,
        arrival_rate_per_s if arrivals is None else 1.0,  # the arrival spec checked its own rate
        service_model,
        dispatch,
        requests,
        warmup_fraction,
        seeds,
        arrival_times_s,
        scheduler,
    )
    if arrival_times_s is not None and np.asarray(arrival_times_s).size < 2:
        raise ValidationError("arrival times: a replay needs at least 2 times")
    if arrivals is None and arrival_rate_per_s is None and arrival_times_s is None:
        raise ValidationError("arrival rate: needed unless arrival times are replayed")
    total_work = requests * len(seeds)
    done = [0]

    def advance(count: int) -> None:
        if progress is not None and count:
            done[0] += count
            progress(done[0], total_work)

    per_seed: list[PoolSeedStats] = []
    traces: list[RequestTrace] = []
    windows: list[float] = []
    warmups: list[float] = []
    counts: list[int] = []
    rates: list[float] = []
    warm_shares: list[float] = []
    # a replay of a log that keeps each request's atom (a cached plan's log: its prompts as charged,
    # request by request) replays each arrival's own request, in the log's order
    request_atoms = workload.metadata.get("request_atoms")
    paired = (
        arrivals is not None and arrivals.kind == "replay" and request_atoms is not None
        and len(request_atoms) == np.asarray(arrivals.times_s).size
    )  # fmt: skip
    for seed in seeds:
        rng = np.random.default_rng(seed)
        replayed = None
        if arrivals is None:
            count = requests
            warmup = int(math.floor(warmup_fraction * requests))
            arrival = _arrival_times(rng, requests, arrival_rate_per_s, arrival_times_s)
        else:
            arrival, warmup, replayed = arrivals.generate_indexed(rng)
            count = int(arrival.size)
            if count < warmup + 2:
                raise ValidationError(
                    f"arrivals: seed {seed} drew {count - warmup} arrivals after the warm-up; at least 2 "
                    "are needed"
                )
            if count > MAX_REQUESTS:
                raise ValidationError(
                    f"arrivals: {count:,} requests in one seed is more than this simulator holds in memory "
                    f"(at most {MAX_REQUESTS:,}, about 1 GB); replay part of the log (--requests) or a "
                    "lower rate"
                )
        counts.append(count)
        warm_shares.append(warmup / count)
        atoms = np.asarray(request_atoms)[replayed] if paired else _sample_atoms(workload, rng, count)
        coin = rng.random(count)
        total = workload.total_tokens[atoms]
        outputs = np.maximum(1, workload.output_tokens[atoms])
        inputs = np.maximum(0, total - outputs)  # a zero-output request is served with one token
        total = inputs + outputs
        # prefix caching (a workload whose atoms charge only their uncached prompt tokens)
        cached = np.maximum(0, workload.total_tokens - workload.output_tokens - workload.input_tokens)
        cached = cached[atoms] if cached.any() else None
        if gateway is None:
            pool_index, inputs, total = routing.route(total, inputs, outputs, coin)
        else:  # a gateway's routing (fleetopt.core.gateway_sim); pool −1: served by none
            pool_index, inputs, total = gateway(rng, arrival, inputs, outputs, coin)
        # the physical engine's dispatch draws, from a stream of their own (the others stay as they were)
        draws = np.random.default_rng([seed, 30]).random(count) if service_model == PHYSICAL else None
        measured_all = np.arange(count) >= warmup
        window = (float(arrival[warmup]), float(arrival[-1]))
        windows.append(window[1] - window[0])
        warmups.append(window[0] - float(arrival[0]))
        rates.append((count - warmup - 1) / windows[-1] if windows[-1] > 0 else math.nan)
        for index, pool in enumerate(pools):
            mine = pool_index == index
            if mine.any() and pool.instances == 0:
                raise ValidationError(
                    f"pool {pool.name!r}: {int(mine.sum())} requests are routed to it but it has 0 instances"
                )
            if mine.any() and int(total[mine].max()) > pool.context_tokens:
                raise ValidationError(
                    f"pool {pool.name!r}: a routed request of {int(total[mine].max())} tokens exceeds "
                    f"its context of {pool.context_tokens} tokens"
                )
            trace, tpot = _simulate_pool(
                pool,
                seed,
                arrival[mine],
                inputs[mine],
                outputs[mine],
                total[mine],
                measured_all[mine],
                service_model,
                dispatch,
                advance,
                scheduler,
                None if draws is None else draws[mine],
                None if cached is None else cached[mine],
            )
            per_seed.append(_pool_stats(pool, seed, trace, tpot, count - warmup, window))
            if keep_requests:
                traces.append(trace)
    summaries = []
    for pool in pools:
        rows = [row for row in per_seed if row.pool_name == pool.name]
        fields = {
            name: _estimate([getattr(row, name) for row in rows])
            for name in PoolSeedStats.__dataclass_fields__
            if name not in ("pool_name", "seed", "requests_served")
        }
        warmed_up = all(row.longest_sojourn_s <= warm for row, warm in zip(rows, warmups, strict=True))
        served = sum(row.requests_served for row in rows)
        summaries.append(PoolSummary(pool=pool, requests_served=served, warmed_up=warmed_up, **fields))
    return SimulationResult(
        service_model=service_model,
        dispatch=dispatch,
        arrival_rate_per_s=(
            float(arrival_rate_per_s) if arrival_rate_per_s is not None else float(np.nanmean(rates))
        ),
        requests=max(counts),
        warmup_fraction=warmup_fraction if arrivals is None else float(np.mean(warm_shares)),
        seeds=tuple(int(s) for s in seeds),
        window_s=tuple(windows),
        warmup_s=tuple(warmups),
        pools=tuple(summaries),
        per_seed=tuple(per_seed),
        traces=tuple(traces),
        requests_per_seed=tuple(counts),
        arrival_process=(
            arrivals.kind
            if arrivals is not None
            else ("replay" if arrival_times_s is not None else "poisson")
        ),
        scheduler=scheduler,
    )
