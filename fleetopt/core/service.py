"""The service model of a pool: what one serving instance is and how long a request holds a slot.

FleetOpt Eq. 3–4: an iteration costs t_iter = W + H·n (n slots in lock step); a request holds
its slot for I = ⌈L_in / chunk⌉ + L_out iterations.
"""

from __future__ import annotations

from dataclasses import dataclass

from fleetopt.core.kv import block_slots_per_instance


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

    def max_slots(self, context_tokens: int) -> int:
        """KV-limited slots per instance at ``context_tokens`` (block budget), capped by max_num_seqs."""
        slots = block_slots_per_instance(self.kv_capacity_tokens, context_tokens, self.kv_block_tokens)
        return slots if self.max_num_seqs is None else min(slots, self.max_num_seqs)

    @property
    def instance_hour_usd(self) -> float:
        """Price of one instance for one hour: GPUs per instance × $/GPU-hour."""
        return self.gpus_per_instance * self.gpu_hour_usd
