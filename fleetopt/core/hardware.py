"""One pool's serving instance and what an iteration costs on it.

:class:`PoolHardware` is a (model, GPU, tensor-parallel size) calibration from a serving profile;
:func:`iteration_costs` turns it into the terms of t_iter = W + H·d + τ·p + κ·K with the physical
floors applied where the profile gives the data (what the ``engine`` model and the simulator's
``physical`` engine charge).
"""

from __future__ import annotations

from dataclasses import dataclass

from fleetopt.core.kv import block_slots_per_instance
from fleetopt.core.poolstats import PoolMoments


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
        attention_flops_per_token_pair: FLOPs of one prompt token's attention to one token of its
            context, over all layers (``ModelProfile.attention_flops_per_token_pair`` in
            :mod:`fleetopt.io.profiles`), if known.
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
    attention_flops_per_token_pair: float | None = None

    def max_slots(self, context_tokens: int) -> int:
        """KV-limited slots per instance at ``context_tokens`` (block budget), capped by max_num_seqs."""
        slots = block_slots_per_instance(self.kv_capacity_tokens, context_tokens, self.kv_block_tokens)
        return slots if self.max_num_seqs is None else min(slots, self.max_num_seqs)

    @property
    def instance_hour_usd(self) -> float:
        """Price of one instance for one hour: GPUs per instance × $/GPU-hour."""
        return self.gpus_per_instance * self.gpu_hour_usd


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
    attention_s_per_token_pair: float = 0.0

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


def attention_s_per_token_pair(
    per_prefill_token_s: float, parameters_active: float | None, flops_per_token_pair: float | None
) -> float:
    """τ_a = τ·F_pair / (2·N_active), seconds per (prompt token, context token) pair: a prompt token's
    attention at the rate its dense compute runs (τ buys 2·N_active FLOPs; Kaplan et al. 2020, §2.1),
    F_pair the attention FLOPs per pair (``ModelProfile.attention_flops_per_token_pair`` in
    :mod:`fleetopt.io.profiles`). τ is at least the FLOP floor (:func:`iteration_costs`), so the
    attention never runs faster than the GPU's peak either. 0 without the model's attention geometry
    or parameters."""
    if not flops_per_token_pair or not parameters_active:
        return 0.0
    return per_prefill_token_s * flops_per_token_pair / (2.0 * parameters_active)


def iteration_costs(hardware: PoolHardware) -> IterationCosts:
    """W, H, τ, κ of ``hardware`` with the physical floors applied where the profile gives the data.

    Prefill compute floor: τ ≥ 2·N_active / F_peak (two FLOPs per active parameter per prompt
    token, at the instance's dense peak; Kaplan et al. 2020, "Scaling Laws", §2.1). Weight
    streaming floor: W ≥ weight bytes / memory bandwidth (every iteration reads the weights once).
    KV-read floor: a decoding sequence's cost per iteration is at least its KV bytes / bandwidth
    (applied to the residence-averaged decode cost, so a measured H that already holds it is kept).
    Prompt attention: τ_a per (prompt token, context token) pair (:func:`attention_s_per_token_pair`)
    where the profile gives the model's attention geometry.
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
    tau = max(tau, tau_floor)
    return IterationCosts(
        base_s=max(hardware.iteration_base_s, base_floor),
        per_decode_s=hardware.iteration_per_slot_s,
        per_prefill_token_s=tau,
        per_kv_token_s=hardware.iteration_per_kv_token_s,
        prefill_floor_binds=tau_floor > hardware.prefill_per_token_s,
        base_floor_binds=base_floor > hardware.iteration_base_s,
        kv_read_floor_s_per_token=(
            hardware.kv_bytes_per_token / hardware.memory_bandwidth_bytes_per_s
            if hardware.kv_bytes_per_token and hardware.memory_bandwidth_bytes_per_s
            else 0.0
        ),
        attention_s_per_token_pair=attention_s_per_token_pair(
            tau, hardware.parameters_active, hardware.attention_flops_per_token_pair
        ),
    )
