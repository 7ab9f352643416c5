"""The service model of a pool: what one serving instance is and how long a request holds a slot.

FleetOpt Eq. 3–4: an iteration costs t_iter = W + H·n (n slots in lock step); a request holds
its slot for I = ⌈L_in / chunk⌉ + L_out iterations. Each service model is one
:class:`ServiceModel` implementation in :data:`SERVICE_MODEL_REGISTRY`; the rest of fleetopt
asks the model, never its name.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from fleetopt.core.kv import block_slots_per_instance
from fleetopt.core.poolstats import PoolMoments, PoolStatistics
from fleetopt.core.routing import Routing
from fleetopt.core.ttft import TtftCumulants, ttft_cumulants
from fleetopt.errors import ValidationError


@dataclass(frozen=True)
class PoolHardware:
    """One pool's serving instance: a (model, GPU, tensor-parallel size) calibration.

    Attributes:
        serving_name: the serving profile this came from.
        model_name, gpu_name: the model and GPU profile names.
        gpus_per_instance: tensor-parallel size (GPUs in one instance).
        gpu_hour_usd: price of one GPU for one hour, USD.
        iteration_base_s: W of t_iter = W + H·n, seconds.
        iteration_per_slot_s: H of t_iter = W + H·n, seconds per slot.
        prefill_chunk_tokens: chunked-prefill size, tokens per iteration.
        calibration_context_tokens: context at which W and H were measured, tokens.
        kv_capacity_tokens: KV cache of one instance, tokens.
        kv_block_tokens: KV block (page) size, tokens.
        max_num_seqs: an engine cap on concurrent sequences, if any.
        prefill_per_token_s: τ, iteration time per prompt token processed in the iteration, seconds.
        iteration_per_kv_token_s: κ, iteration time per KV token held by the batch, seconds.
        peak_flops_per_s: dense peak FLOP/s of one instance at the weights' precision, if known.
        memory_bandwidth_bytes_per_s: memory bandwidth of one instance, bytes/s, if known.
        parameters_active: parameters active per token (a count), if known.
        weight_bytes: bytes of weights one instance holds, if known.
        ttft_overhead_s: T0, a constant per-request TTFT overhead (API server, tokenization,
            scheduling), seconds; the engine model adds it to every TTFT.
        kv_bytes_per_token: KV-cache bytes one token occupies on the instance (all its GPUs), if known.
        max_context_tokens: the model's longest supported context, if known.
    """

    serving_name: str
    model_name: str
    gpu_name: str
    gpus_per_instance: int
    gpu_hour_usd: float
    iteration_base_s: float
    iteration_per_slot_s: float
    prefill_chunk_tokens: int
    calibration_context_tokens: int
    kv_capacity_tokens: int
    kv_block_tokens: int
    max_num_seqs: int | None = None
    prefill_per_token_s: float = 0.0
    iteration_per_kv_token_s: float = 0.0
    peak_flops_per_s: float | None = None
    memory_bandwidth_bytes_per_s: float | None = None
    parameters_active: float | None = None
    weight_bytes: float | None = None
    ttft_overhead_s: float = 0.0
    kv_bytes_per_token: float | None = None
    max_context_tokens: int | None = None

    def max_slots(self, context_tokens: int) -> int:
        """KV-limited slots per instance at ``context_tokens`` (block budget), capped by max_num_seqs."""
        slots = block_slots_per_instance(self.kv_capacity_tokens, context_tokens, self.kv_block_tokens)
        return slots if self.max_num_seqs is None else min(slots, self.max_num_seqs)

    @property
    def instance_hour_usd(self) -> float:
        """Price of one instance for one hour: GPUs per instance × $/GPU-hour."""
        return self.gpus_per_instance * self.gpu_hour_usd


#: The reference implementation floors the service-time SCV at this value (FACTS §1).
FLEET_SIM_MIN_SCV = 0.01
#: The reference implementation treats a pool after the first with λ ≤ 0.01 req/s as empty (FACTS §1).
FLEET_SIM_EMPTY_RATE_PER_S = 0.01


@dataclass(frozen=True)
class PoolShare:
    """The traffic one pool of a routed fleet receives: its share of requests and their moments."""

    traffic_fraction: float
    moments: PoolMoments


class ServiceModel(ABC):
    """How a pool serves requests: the seam every service model implements.

    A model answers four questions, and nothing outside its implementation branches on which
    model it is: (1) the service-time moments and TTFT terms of a pool at s slots
    (:meth:`service_times`); (2) whether slots are a decision or fixed at the KV limit
    (:meth:`fixed_slots`); (3) which requests, at which lengths, each pool of a routing receives
    (:meth:`pool_share`, :meth:`pool_rate`); (4) what the request-level simulator charges each
    request (:meth:`request_times`). Register new models in :data:`SERVICE_MODELS`.
    """

    #: The name ``--service-model`` and plan documents use.
    name: ClassVar[str]
    #: One line for help texts and documents.
    summary: ClassVar[str]
    #: Whether the TTFT uses the q-quantile of prefill iterations (else only moments are needed).
    uses_prefill_quantile: ClassVar[bool]
    #: Whether sizing uses the occupancy chain (:mod:`fleetopt.core.occupancy`) instead of M/G/c.
    occupancy_aware: ClassVar[bool] = False
    #: Whether pools need their prompt lengths by prefill level (:attr:`PoolMoments.prompt_levels`).
    uses_prompt_levels: ClassVar[bool] = False

    @abstractmethod
    def service_times(self, moments: PoolMoments, hardware: PoolHardware, slots: Any) -> tuple[Any, ...]:
        """(E[S], C_s², TTFT overhead, prefill, iteration time), seconds, for ``slots`` (a float or
        a float array); constants come back unbroadcast."""

    @abstractmethod
    def fixed_slots(self, hardware: PoolHardware, context_tokens: int) -> int | None:
        """The slot count this model always uses, or None when the sizer chooses it."""

    def pool_share(self, stats: PoolStatistics, routing: Routing, index: int, quantile: float) -> PoolShare:
        """Pool ``index`` of ``routing``: its share of all requests and the moments of its requests
        (``stats``: the pool statistics at this pool's prefill chunk). One pool takes everything
        (with its prefill quantile, whichever the model); pools after the second are plain ranges
        (:meth:`range_share`); the first two, split by the C&R band, are the model's own
        (:meth:`band_share`)."""
        if not routing.boundaries_tokens:
            return PoolShare(
                1.0, stats.range_moments(-1, math.inf, quantile, prompt_levels=self.uses_prompt_levels)
            )
        if index >= 2:
            return self.range_share(stats, *routing.pool_ranges[index], quantile)
        return self.band_share(stats, routing, index, quantile)

    @abstractmethod
    def band_share(self, stats: PoolStatistics, routing: Routing, index: int, quantile: float) -> PoolShare:
        """The first (``index`` 0) or second pool of a routed fleet, which the C&R band splits."""

    def range_share(
        self, stats: PoolStatistics, lo_tokens: float, hi_tokens: float, quantile: float
    ) -> PoolShare:
        """A pool after the second, serving lo < L ≤ hi at original lengths (both models alike)."""
        moments = stats.range_moments(
            lo_tokens,
            hi_tokens,
            quantile,
            prefill_quantile=self.uses_prefill_quantile,
            prompt_levels=self.uses_prompt_levels,
        )
        return PoolShare(moments.traffic_fraction, moments)

    @abstractmethod
    def pool_rate(self, share: PoolShare, index: int, arrival_rate_per_s: float) -> float:
        """Requests per second reaching pool ``index`` when the fleet receives ``arrival_rate_per_s``."""

    @abstractmethod
    def request_times(
        self,
        iteration_base_s: float,
        iteration_per_slot_s: float,
        calibration_context_tokens: int,
        slots: int,
        prefill_iterations: np.ndarray,
        total_tokens: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """(time per output token, delay from slot start to first token), seconds, per request."""


class LockstepModel(ServiceModel):
    """FleetOpt Eq. 3–4 and 7 as written: every iteration costs t = W + H·s (all s slots busy).

    S = I·t, E[S] = t·E[I], C_s² = Var[I]/E[I]², TTFT overhead = P_q·t + t (the q-quantile of
    prefill iterations, then the first decode). Pools receive the exact mixture of routed
    requests: compressed band requests at their compressed lengths, the rest at their own.
    """

    name = "lockstep"
    summary = "FleetOpt Eq. 3 as written: t_iter = W + H·s at full occupancy"
    uses_prefill_quantile = True

    def service_times(self, moments: PoolMoments, hardware: PoolHardware, slots: Any) -> tuple[Any, ...]:
        if moments.prefill_iterations_quantile is None:
            raise ValueError("the lockstep model needs the pool's prefill-iteration quantile")
        iteration_s = hardware.iteration_base_s + hardware.iteration_per_slot_s * slots
        mean_service_s = iteration_s * moments.mean_iterations
        prefill_s = moments.prefill_iterations_quantile * iteration_s
        return mean_service_s, moments.iterations_scv, prefill_s + iteration_s, prefill_s, iteration_s

    def fixed_slots(self, hardware: PoolHardware, context_tokens: int) -> int | None:
        return None

    def band_share(self, stats: PoolStatistics, routing: Routing, index: int, quantile: float) -> PoolShare:
        b, gamma, p_c = routing.boundaries_tokens[0], routing.gamma, routing.compressibility
        levels = self.uses_prompt_levels
        if index == 0:
            moments = stats.short_pool(
                b, gamma, p_c, quantile, prompt_levels=levels, max_cut_fraction=routing.max_cut_fraction
            )
        else:
            moments = stats.long_pool(
                b, gamma, p_c, quantile, hi_tokens=routing.pool_ranges[1][1], prompt_levels=levels,
                max_cut_fraction=routing.max_cut_fraction,
            )  # fmt: skip
        return PoolShare(moments.traffic_fraction, moments)

    def pool_rate(self, share: PoolShare, index: int, arrival_rate_per_s: float) -> float:
        return max(0.0, arrival_rate_per_s * share.traffic_fraction)

    def request_times(
        self, iteration_base_s: float, iteration_per_slot_s: float, calibration_context_tokens: int,
        slots: int, prefill_iterations: np.ndarray, total_tokens: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
        tpot = np.full(prefill_iterations.size, iteration_base_s + iteration_per_slot_s * slots)
        return tpot, (prefill_iterations + 1) * tpot


class FleetSimModel(ServiceModel):
    """The papers' reference implementation (FACTS §1): iteration time scales with the request's length.

    A request of total length L iterates in t_L = W + H·(L / C_cal)·s, so S = I·t_L with
    E[S] = W·E[I] + k·E[I·L], E[S²] = W²E[I²] + 2Wk·E[I²L] + k²E[I²L²], k = H·s / C_cal;
    C_s² is floored at 0.01; the TTFT adds the *mean* prefill at one active sequence,
    W·E[P] + (H / C_cal)·E[P·L], and no first-decode step. Slots are fixed at the KV limit.
    Routing statistics (FACTS §1): the first pool's moments come from L ≤ B₁ only and its share
    is α' = α + p_c·β; the second pool's moments from γB₁ < L ≤ B₂ only, with share F(B₂) − α'
    (1 − α' when it is the last); later pools are plain ranges. A pool after the first with
    λ ≤ 0.01 req/s is empty.
    """

    name = "fleet-sim"
    summary = "the papers' reference implementation: t_L = W + H·(L/C_cal)·s, slots at the KV limit"
    uses_prefill_quantile = False

    def service_times(self, moments: PoolMoments, hardware: PoolHardware, slots: Any) -> tuple[Any, ...]:
        base_s, per_slot_s = hardware.iteration_base_s, hardware.iteration_per_slot_s
        calibration = float(hardware.calibration_context_tokens)
        k = per_slot_s * slots / calibration
        mean_service_s = base_s * moments.mean_iterations + k * moments.mean_iter_x_len
        second = (
            base_s**2 * moments.mean_sq_iterations
            + 2.0 * base_s * k * moments.mean_sq_iter_x_len
            + k**2 * moments.mean_sq_iter_x_sq_len
        )
        raw_scv = second / mean_service_s**2 - 1.0
        scv = (
            np.maximum(FLEET_SIM_MIN_SCV, raw_scv)
            if isinstance(raw_scv, np.ndarray)
            else max(FLEET_SIM_MIN_SCV, raw_scv)
        )
        prefill_s = (
            base_s * moments.mean_prefill_iterations + per_slot_s / calibration * moments.mean_prefill_x_len
        )
        iteration_s = base_s + k * moments.mean_total_tokens
        return mean_service_s, scv, prefill_s, prefill_s, iteration_s

    def fixed_slots(self, hardware: PoolHardware, context_tokens: int) -> int | None:
        slots = hardware.max_slots(context_tokens)
        return slots if slots >= 1 else None  # below one slot the sizer reports the KV misfit

    def band_share(self, stats: PoolStatistics, routing: Routing, index: int, quantile: float) -> PoolShare:
        b = routing.boundaries_tokens[0]
        first_fraction = self._first_fraction(stats, routing)
        if index == 0:
            return PoolShare(first_fraction, stats.range_moments(-1, b, quantile, prefill_quantile=False))
        hi = routing.pool_ranges[1][1]
        moments = stats.range_moments(routing.gamma * b, hi, quantile, prefill_quantile=False)
        return PoolShare(_cdf_or_one(stats, hi) - first_fraction, moments)

    @staticmethod
    def _first_fraction(stats: PoolStatistics, routing: Routing) -> float:
        """α' = min(1, α + p_c·β) at B₁ (FACTS §1: every band request counts as compressible)."""
        b = routing.boundaries_tokens[0]
        alpha = stats.cdf(b)
        return min(1.0, alpha + (stats.cdf(routing.gamma * b) - alpha) * routing.compressibility)

    def range_share(
        self, stats: PoolStatistics, lo_tokens: float, hi_tokens: float, quantile: float
    ) -> PoolShare:
        moments = stats.range_moments(lo_tokens, hi_tokens, quantile, prefill_quantile=False)
        return PoolShare(_cdf_or_one(stats, hi_tokens) - stats.cdf(lo_tokens), moments)

    def pool_rate(self, share: PoolShare, index: int, arrival_rate_per_s: float) -> float:
        rate = arrival_rate_per_s * share.traffic_fraction
        if index > 0 and rate <= FLEET_SIM_EMPTY_RATE_PER_S:
            return 0.0
        return max(0.0, rate)

    def request_times(
        self, iteration_base_s: float, iteration_per_slot_s: float, calibration_context_tokens: int,
        slots: int, prefill_iterations: np.ndarray, total_tokens: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
        length_share = total_tokens / calibration_context_tokens
        tpot = iteration_base_s + iteration_per_slot_s * length_share * slots
        return tpot, prefill_iterations * (iteration_base_s + iteration_per_slot_s * length_share)


@dataclass(frozen=True)
class IterationCosts:
    """The iteration-time terms of one instance, t_iter = W + H·d + τ·p + κ·K (seconds), after the
    hardware floors; ``*_floor_binds`` say where a floor replaced the profile's value."""

    base_s: float
    per_decode_s: float
    per_prefill_token_s: float
    per_kv_token_s: float
    prefill_floor_binds: bool
    base_floor_binds: bool
    kv_read_floor_s_per_token: float = 0.0

    def per_sequence_s(self, moments: PoolMoments) -> float:
        """c₁ = (H·E[L_out] + τ·E[L_in] + κ·E[I·L]) / E[I]: the mean cost one sequence adds to an
        iteration, averaged over its residence (renewal–reward). E[I·L] bounds the KV tokens a
        request holds summed over its iterations from above."""
        mean_output = moments.mean_iterations - moments.mean_prefill_iterations
        mean_input = moments.mean_total_tokens - mean_output
        work = (
            self.per_decode_s * mean_output
            + self.per_prefill_token_s * mean_input
            + self.per_kv_token_s * moments.mean_iter_x_len
        )
        return work / moments.mean_iterations


def iteration_costs(hardware: PoolHardware) -> IterationCosts:
    """W, H, τ, κ of ``hardware`` with the physical floors applied where the profile gives the data.

    Prefill compute floor: τ ≥ 2·N_active / F_peak (two FLOPs per active parameter per prompt
    token, at the instance's dense peak; Kaplan et al. 2020, "Scaling Laws", §2.1). Weight
    streaming floor: W ≥ weight bytes / memory bandwidth (every iteration reads the weights once).
    KV-read floor: a decoding sequence's cost per iteration is at least its KV bytes / bandwidth
    (applied to the residence-averaged decode cost, so a measured H that already holds it is kept).
    """
    tau = hardware.prefill_per_token_s
    tau_floor = (
        2.0 * hardware.parameters_active / hardware.peak_flops_per_s
        if hardware.parameters_active and hardware.peak_flops_per_s
        else 0.0
    )
    base_floor = (
        hardware.weight_bytes / hardware.memory_bandwidth_bytes_per_s
        if hardware.weight_bytes and hardware.memory_bandwidth_bytes_per_s
        else 0.0
    )
    return IterationCosts(
        base_s=max(hardware.iteration_base_s, base_floor),
        per_decode_s=hardware.iteration_per_slot_s,
        per_prefill_token_s=max(tau, tau_floor),
        per_kv_token_s=hardware.iteration_per_kv_token_s,
        prefill_floor_binds=tau_floor > tau,
        base_floor_binds=base_floor > hardware.iteration_base_s,
        kv_read_floor_s_per_token=(
            hardware.kv_bytes_per_token / hardware.memory_bandwidth_bytes_per_s
            if hardware.kv_bytes_per_token and hardware.memory_bandwidth_bytes_per_s
            else 0.0
        ),
    )


class EngineModel(LockstepModel):
    """Token-aware and occupancy-aware: an iteration costs W + H·(sequences decoding) + τ·(prompt
    tokens in it) (+ κ·KV tokens), and the sequences in flight follow the load.

    Decode work grows with the sequences in flight, prompt work with the arrival flow (it takes the
    share u = λ_i·τ·E[L_in] of an instance's time). The pool is the state-dependent birth–death
    chain of :mod:`fleetopt.core.occupancy` with iterations (W + c_d·k/n)/(1 − u), which gives the
    slot wait and the mean occupancy; the TTFT law (:meth:`ttft_law`) adds the residual of the
    iteration in progress, the request's own prefill and first decode, the other requests' prompts
    that share those iterations, and the profile's constant overhead T0, by its first three
    cumulants (:mod:`fleetopt.core.ttft`; docs/math.md). Pools receive the exact routed mixture, as
    under ``lockstep``. :meth:`service_times` gives full-occupancy values (what the audit's
    throughput uses); sizing uses the chain (``occupancy_aware``), and the simulator checks it with
    its ``physical`` engine under least-loaded dispatch.
    """

    name = "engine"
    summary = "token- and occupancy-aware: t_iter = W + H·decoding + τ·prompt tokens, load-driven batches"
    uses_prefill_quantile = True
    occupancy_aware = True
    uses_prompt_levels = True

    def service_times(self, moments: PoolMoments, hardware: PoolHardware, slots: Any) -> tuple[Any, ...]:
        if moments.prefill_iterations_quantile is None:
            raise ValueError("the engine model needs the pool's prefill-iteration quantile")
        costs = iteration_costs(hardware)
        iteration_s = costs.base_s + costs.per_sequence_s(moments) * slots
        mean_service_s = iteration_s * moments.mean_iterations
        prefill_s = self.own_prefill_s(moments, hardware, costs, iteration_s)
        return mean_service_s, moments.iterations_scv, prefill_s + iteration_s, prefill_s, iteration_s

    @staticmethod
    def prompt_tokens_quantile(moments: PoolMoments, hardware: PoolHardware) -> float:
        """The q-quantile of L_in, interpolated inside its prefill level: (P_q − 1 + f)·chunk, with f the
        share of level P_q's weight that reaches q (uniform within the level), at most the pool's
        longest total."""
        level = moments.prefill_iterations_quantile
        tokens = (max(level - 1, 0) + moments.prefill_quantile_fraction) * hardware.prefill_chunk_tokens
        return float(min(tokens, moments.max_total_tokens))

    def own_prefill_s(
        self, moments: PoolMoments, hardware: PoolHardware, costs: IterationCosts, iteration_s: Any
    ) -> Any:
        """P_q iterations at ``iteration_s`` plus the request's own prompt compute τ·L_in,q, seconds
        (the full-occupancy figure of :meth:`service_times`)."""
        return (
            moments.prefill_iterations_quantile * iteration_s
            + costs.per_prefill_token_s * self.prompt_tokens_quantile(moments, hardware)
        )

    @staticmethod
    def decode_and_prompt_costs(moments: PoolMoments, costs: IterationCosts) -> tuple[float, float]:
        """(c_d, τ·E[L_in]): the decode-side cost one sequence adds to an iteration, averaged over its
        residence, and the compute of one request's prompt, seconds.

        A decoding sequence of L tokens costs max(H, κ_read·L) per iteration (the KV-read floor: it
        reads its whole cache, L ≤ its routed total) plus κ·L, for its L_out decode iterations:
        c_d = (H·E[L_out] + κ_read·E[L_out·(L − L*)⁺] + κ·E[I·L]) / E[I], L* = H/κ_read, the
        excess exact from the pool's sums (:attr:`PoolMoments.decode_above`); where a pool does not
        carry them, the floor on the averages, max(H·E[L_out], κ_read·E[I·L]) / E[I]."""
        mean_output = moments.mean_iterations - moments.mean_prefill_iterations
        mean_input = moments.mean_total_tokens - mean_output
        kv_read = costs.kv_read_floor_s_per_token
        decode = costs.per_decode_s * mean_output + costs.per_kv_token_s * moments.mean_iter_x_len
        if kv_read > 0 and moments.decode_above is not None:
            threshold = costs.per_decode_s / kv_read
            above, above_x_len = moments.decode_above(threshold)
            decode += kv_read * max(0.0, above_x_len - threshold * above)
        elif kv_read > 0:
            decode = max(decode, kv_read * moments.mean_iter_x_len)
        return decode / moments.mean_iterations, costs.per_prefill_token_s * mean_input

    def ttft_law(
        self,
        moments: PoolMoments,
        hardware: PoolHardware,
        costs: IterationCosts,
        *,
        rate_per_instance_per_s: float,
        instances: float,
        occupancy_per_instance: Any,
        slot_wait: tuple[Any, Any] = (0.0, 0.0),
        with_overhead: bool = True,
        decode_and_prompt: tuple[float, float] | None = None,
    ) -> TtftCumulants:
        """The TTFT law of one instance of the pool (:func:`fleetopt.core.ttft.ttft_cumulants`) with
        k = ``occupancy_per_instance`` sequences in flight (t_d = W + c_d·k; a float or an array),
        behind a least-loaded router over n = ``instances`` (:func:`least_loaded_time_share`), with
        the slot wait (P(wait), mean wait given a wait) and T0 (unless ``with_overhead`` is false).
        ``decode_and_prompt``: :meth:`decode_and_prompt_costs` when the caller already has them."""
        if moments.prompt_levels is None:
            raise ValueError("the engine model needs the pool's prompt lengths by prefill level")
        decode_per_sequence_s, prompt_work_s = decode_and_prompt or self.decode_and_prompt_costs(
            moments, costs
        )
        share_args = router_arguments(moments, costs, rate_per_instance_per_s, instances, prompt_work_s)
        return ttft_cumulants(
            moments.prompt_levels,
            tau_s=costs.per_prefill_token_s,
            decode_iteration_s=costs.base_s + decode_per_sequence_s * occupancy_per_instance,
            rate_per_instance_per_s=rate_per_instance_per_s * least_loaded_intake_factor(*share_args),
            time_share=least_loaded_time_share(*share_args),
            overhead_s=hardware.ttft_overhead_s if with_overhead else 0.0,
            slot_wait=slot_wait,
        )


def router_arguments(
    moments: PoolMoments,
    costs: IterationCosts,
    rate_per_instance_per_s: float,
    instances: float,
    prompt_work_s: float,
) -> tuple[float, float, float, float, float, float]:
    """(u, n, λ, W, E[I], τ·ĉ) of a pool behind a least-loaded router, the arguments of
    :func:`least_loaded_time_share`, :func:`least_loaded_intake_factor` and :func:`router_view`:
    u = λ/n · τ·E[L_in] (``prompt_work_s``) the prompt share, λ the pool's rate, W the iteration
    without decoding sequences, E[I] the mean iterations per request, ĉ = E[Σ_m c_m²]/E[L_in] the
    chunk a prompt token is prefilled in (:attr:`fleetopt.core.ttft.PromptLevels.token_biased_chunk_tokens`;
    0 where the pool carries no prompt levels)."""
    levels = moments.prompt_levels
    chunk_tokens = levels.token_biased_chunk_tokens if levels is not None else 0.0
    return (
        rate_per_instance_per_s * prompt_work_s,
        instances,
        rate_per_instance_per_s * instances,
        costs.base_s,
        moments.mean_iterations,
        costs.per_prefill_token_s * chunk_tokens,
    )


def least_loaded_time_share(
    prompt_share: float,
    instances: float,
    pool_rate_per_s: float = math.inf,
    base_iteration_s: float = 0.0,
    mean_iterations: float = math.inf,
    token_chunk_s: float = 0.0,
) -> float:
    """f: the share of an instance's intake that follows its own iteration lengths behind a
    least-loaded router over n instances:

        f = f₁ + (1 − f₁)·e^{−m}·(1 − e^{−k₀}),   f₁ = 1 − (1 − 1/n)^b,   b = max(1, u/(1 − u)),
        m = λ·(W / (1 − u) + u·τ·ĉ),   k₀ = (λ/n)·E[I]·W / (1 − u),

    u the prompt share, λ the pool's rate, W the iteration without decoding sequences, E[I] the
    mean iterations per request, τ·ĉ (``token_chunk_s``) the compute of the chunk a prompt token is
    prefilled in, averaged over prompt tokens (ĉ = E[Σ_m c_m²]/E[L_in]).

    To first order a least-loaded router keeps every instance at the pool's occupancy over n, so
    only the pool's arrival fluctuations, shared n ways, follow one instance's time: f = 1/n (and
    f = 1 for one instance, exact). When prompts take most of an instance's time the router can
    no longer even out the bursts a long prompt iteration sets off: b = u/(1 − u) of them, the mean
    number of further prompt iterations one sets off in the branching structure of
    :mod:`fleetopt.core.ttft`. Each lands on a given instance with chance 1/n, and the share is the
    chance that at least one does, 1 − (1 − 1/n)^b: b/n while b ≪ n, tending to 1 smoothly where
    a cut at min(1, b/n) overstated it (u ≥ 0.75 in pools of 7 to 14 instances, f₁ 0.45–0.62
    against 0.38–0.45 fitted to the simulated P99). And the router can only even out an
    instance's intake with the arrivals it sees: with m ≪ 1 pool arrivals per iteration an arrival
    finds the instances at random phases of their iterations, and when each holds several
    sequences (k₀, the fewest in flight per instance by Little's law, ≫ 1) their counts do not
    tell which one is in a long prompt iteration: the intake follows each one's time as under
    random dispatch. e^{−m}·(1 − e^{−k₀}) moves f towards 1 then; an idle pool (k₀ ≪ 1) keeps f₁,
    since the router sends an arrival to an idle instance, not the one busy with a prompt. The
    intake that follows an instance's time falls into its iterations in proportion to their
    length, so m counts the pool's arrivals over the length-biased iteration, E[t²]/E[t] =
    t̄ + Var(t)/t̄ with t̄ = W/(1 − u) and, to first order (each iteration's prompt tokens compound
    Poisson at λ/n per second), Var(t)/t̄ = τ²·(λ/n)·E[Σ_m c_m²] = u·τ·ĉ: a pool of long prompts
    runs long prompt iterations, during which the router does see arrivals, even when its mean
    iteration is short. These factors were chosen by comparison with the iteration-level
    simulation (docs/validation.md, which also checks them on workloads and profiles they were not
    chosen on); they are an interpolation, not a derivation."""
    if not instances >= 1.0:
        return 1.0
    branching = max(1.0, prompt_share / (1.0 - prompt_share)) if prompt_share < 1.0 else math.inf
    share = -math.expm1(branching * math.log1p(-1.0 / instances)) if instances > 1.0 else 1.0
    view = router_view(
        prompt_share, instances, pool_rate_per_s, base_iteration_s, mean_iterations, token_chunk_s
    )
    if view is not None:
        seen, in_flight = view
        share += (1.0 - share) * math.exp(-seen) * -math.expm1(-in_flight)
    return min(1.0, share)


def router_view(
    prompt_share: float,
    instances: float,
    pool_rate_per_s: float,
    base_iteration_s: float,
    mean_iterations: float,
    token_chunk_s: float = 0.0,
) -> tuple[float, float] | None:
    """(m, k₀): pool arrivals per length-biased iteration, λ·(W/(1 − u) + u·τ·ĉ), and the fewest
    sequences in flight per instance by Little's law, (λ/n)·E[I]·W/(1 − u) (the shortest mean
    iteration W/(1 − u)); None without the pool's rate."""
    if not (prompt_share < 1.0 and math.isfinite(pool_rate_per_s) and math.isfinite(mean_iterations)):
        return None
    iteration_s = base_iteration_s / (1.0 - prompt_share)
    biased_iteration_s = iteration_s + prompt_share * token_chunk_s
    return (
        pool_rate_per_s * biased_iteration_s,
        pool_rate_per_s / instances * mean_iterations * iteration_s,
    )


def least_loaded_intake_factor(
    prompt_share: float,
    instances: float,
    pool_rate_per_s: float = math.inf,
    base_iteration_s: float = 0.0,
    mean_iterations: float = math.inf,
    token_chunk_s: float = 0.0,
) -> float:
    """φ: the intake of the instance a request is routed to, relative to λ/n, behind a least-loaded
    router over n instances:

        φ = min(1, n·(1 − e^{−k₀})^{n−1}),   k₀ = (λ/n)·E[I]·W / (1 − u)

    (arguments as :func:`least_loaded_time_share`). The router sends a request to an instance
    holding the fewest sequences, and a later arrival joins that instance (now holding one more)
    only when every other instance holds at least one: with the others' counts Poisson with mean
    k₀, that is (1 − e^{−k₀})^{n−1} of the arrivals instead of 1/n. A busy pool (k₀ ≫ 1) keeps
    φ = 1; a nearly idle one (k₀ ≪ 1) sends a request's prefill almost no company. One instance: 1."""
    view = router_view(
        prompt_share, instances, pool_rate_per_s, base_iteration_s, mean_iterations, token_chunk_s
    )
    if not instances > 1.0 or view is None:
        return 1.0
    return min(1.0, instances * (-math.expm1(-view[1])) ** (instances - 1.0))


def _cdf_or_one(stats: PoolStatistics, tokens: float) -> float:
    """F(tokens), exactly 1 above every request (the reference's 1 − α' for the last pool)."""
    return 1.0 if math.isinf(tokens) else stats.cdf(tokens)


LOCKSTEP = LockstepModel()
FLEET_SIM = FleetSimModel()
ENGINE = EngineModel()

#: Every service model by name (what ``--service-model`` accepts). Add new models here.
SERVICE_MODEL_REGISTRY: dict[str, ServiceModel] = {m.name: m for m in (ENGINE, LOCKSTEP, FLEET_SIM)}
#: Their names, in order.
SERVICE_MODELS = tuple(SERVICE_MODEL_REGISTRY)


def get_service_model(model: ServiceModel | str) -> ServiceModel:
    """The registered model of that name (a model object is returned as is)."""
    if isinstance(model, ServiceModel):
        return model
    try:
        return SERVICE_MODEL_REGISTRY[model]
    except (KeyError, TypeError):
        raise ValidationError(f"service model: {model!r} is not one of {', '.join(SERVICE_MODELS)}") from None


@dataclass(frozen=True)
class SlotServiceTimes:
    """How one pool serves its requests, for each candidate slot count (arrays over ``slots``).

    Attributes:
        slots: slots per instance (int array).
        mean_service_s: E[S], seconds a request holds its slot.
        service_scv: C_s² = Var[S] / E[S]².
        ttft_overhead_s: the TTFT added after the slot wait: prefill plus first decode (lockstep:
            (P_q + 1)·t_iter with P_q the q-quantile of prefill iterations; fleet-sim: the mean
            prefill at one active sequence, FACTS §1).
        prefill_s: the prefill part of ``ttft_overhead_s``.
        iteration_s: iteration time (TPOT) at full occupancy (fleet-sim: at the pool's mean length).
    """

    slots: np.ndarray
    mean_service_s: np.ndarray
    service_scv: np.ndarray
    ttft_overhead_s: np.ndarray
    prefill_s: np.ndarray
    iteration_s: np.ndarray


@dataclass(frozen=True)
class SlotServiceTime:
    """:class:`SlotServiceTimes` for one slot count, as plain numbers (same attributes, same units)."""

    slots: int
    mean_service_s: float
    service_scv: float
    ttft_overhead_s: float
    prefill_s: float
    iteration_s: float


def service_time_formulas(
    moments: PoolMoments, hardware: PoolHardware, slots: Any, service_model: ServiceModel | str
) -> tuple[Any, Any, Any, Any, Any]:
    """(E[S], C_s², TTFT overhead, prefill, iteration time) for ``slots`` (a float or a float array).

    Constants come back unbroadcast; the formulas are the model's :meth:`ServiceModel.service_times`.
    """
    return get_service_model(service_model).service_times(moments, hardware, slots)


def slot_service_times(
    moments: PoolMoments, hardware: PoolHardware, slots: np.ndarray, service_model: ServiceModel | str
) -> SlotServiceTimes:
    """Service-time moments and TTFT overhead of a pool for each slot count in ``slots`` (see
    :class:`LockstepModel` and :class:`FleetSimModel` for the formulas)."""
    s = np.asarray(slots, dtype=np.float64)
    values = service_time_formulas(moments, hardware, s, service_model)
    mean_s, scv, overhead_s, prefill_s, iteration_s = (
        v if isinstance(v, np.ndarray) else np.full(s.shape, v) for v in values
    )
    return SlotServiceTimes(s, mean_s, scv, overhead_s, prefill_s, iteration_s)


def one_slot_service_time(
    moments: PoolMoments, hardware: PoolHardware, slots: int, service_model: ServiceModel | str
) -> SlotServiceTime:
    """:func:`slot_service_times` for one slot count, in plain floats (the planner's hot path)."""
    mean_s, scv, overhead_s, prefill_s, iteration_s = service_time_formulas(
        moments, hardware, float(slots), service_model
    )
    return SlotServiceTime(int(slots), mean_s, scv, overhead_s, prefill_s, iteration_s)
