"""The service model of a pool: what one serving instance is and how long a request holds a slot.

FleetOpt Eq. 3–4: an iteration costs t_iter = W + H·n (n slots in lock step); a request holds
its slot for I = ⌈L_in / chunk⌉ + L_out iterations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

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


#: The service models ``--service-model`` accepts.
SERVICE_MODELS = ("lockstep", "fleet-sim")

#: The reference implementation floors the service-time SCV at this value (FACTS §1).
FLEET_SIM_MIN_SCV = 0.01


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
    moments: PoolMoments, hardware: PoolHardware, slots: Any, service_model: str
) -> tuple[Any, Any, Any, Any, Any]:
    """(E[S], C_s², TTFT overhead, prefill, iteration time) for ``slots`` (a float or a float array).

    Constants come back unbroadcast; see :func:`slot_service_times` for the formulas.
    """
    base_s, per_slot_s = hardware.iteration_base_s, hardware.iteration_per_slot_s
    if service_model == "lockstep":
        if moments.prefill_iterations_quantile is None:
            raise ValueError("the lockstep model needs the pool's prefill-iteration quantile")
        iteration_s = base_s + per_slot_s * slots
        mean_service_s = iteration_s * moments.mean_iterations
        prefill_s = moments.prefill_iterations_quantile * iteration_s
        return mean_service_s, moments.iterations_scv, prefill_s + iteration_s, prefill_s, iteration_s
    if service_model == "fleet-sim":
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
    raise ValueError(f"unknown service model {service_model!r}; choose one of {', '.join(SERVICE_MODELS)}")


def slot_service_times(
    moments: PoolMoments, hardware: PoolHardware, slots: np.ndarray, service_model: str
) -> SlotServiceTimes:
    """Service-time moments and TTFT overhead of a pool for each slot count in ``slots``.

    ``lockstep`` (FleetOpt Eq. 3–4, 7–8 as written): every iteration costs t = W + H·s, so
    S = I·t, E[S] = t·E[I], C_s² = Var[I]/E[I]², prefill = P_q·t, first decode = t.

    ``fleet-sim`` (the reference implementation, FACTS §1): a request of total length L
    iterates in t_L = W + H·(L / C_cal)·s, so S = I·t_L with
    E[S] = W·E[I] + k·E[I·L], E[S²] = W²E[I²] + 2Wk·E[I²L] + k²E[I²L²], k = H·s / C_cal;
    C_s² is floored at 0.01; the TTFT adds the *mean* prefill at one active sequence,
    W·E[P] + (H / C_cal)·E[P·L], and no first-decode step.
    """
    s = np.asarray(slots, dtype=np.float64)
    values = service_time_formulas(moments, hardware, s, service_model)
    mean_s, scv, overhead_s, prefill_s, iteration_s = (
        v if isinstance(v, np.ndarray) else np.full(s.shape, v) for v in values
    )
    return SlotServiceTimes(s, mean_s, scv, overhead_s, prefill_s, iteration_s)


def one_slot_service_time(
    moments: PoolMoments, hardware: PoolHardware, slots: int, service_model: str
) -> SlotServiceTime:
    """:func:`slot_service_times` for one slot count, in plain floats (the planner's hot path)."""
    mean_s, scv, overhead_s, prefill_s, iteration_s = service_time_formulas(
        moments, hardware, float(slots), service_model
    )
    return SlotServiceTime(int(slots), mean_s, scv, overhead_s, prefill_s, iteration_s)
