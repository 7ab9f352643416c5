"""What sizing or evaluating one pool answers: :class:`PoolSizing`, and why a pool is infeasible.

Every service model describes a pool at n instances of s slots with the same type (its
:class:`fleetopt.core.servicemodel.PoolQueue` builds it); :mod:`fleetopt.core.sizing` searches for
the (n, s) to describe.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import Enum
from functools import cached_property
from typing import Any

from fleetopt.core.hardware import PoolHardware
from fleetopt.core.queueing import mean_wait, peakedness


class ProblemKind(Enum):
    """What keeps a pool from meeting its targets (``fleetopt.render.words`` words it)."""

    KV_MISFIT = "kv_misfit"  # one context-length sequence does not fit: value = context, limit = KV tokens
    TPOT_OVER_SLO = "tpot_over_slo"  # value = iteration time at ``slots``, limit = TPOT SLO (s)
    PREFILL_OVER_SLO = "prefill_over_slo"  # value = least prefill + first decode (at ``slots``), limit = SLO
    NO_INSTANCES = "no_instances"  # an evaluated pool with traffic and no instances
    SLOTS_OVER_KV = "slots_over_kv"  # value = slots, limit = the KV limit at the pool's context
    OVER_CAP = "over_cap"  # value = utilization, limit = ρ_max
    TTFT_OVER_SLO = "ttft_over_slo"  # value = P99 TTFT, limit = SLO (s)
    # value = least P99 TTFT, limit = SLO (s): the prompt's compute at the GPU's peak FLOP/s alone breaks it
    COMPUTE_FLOOR = "compute_floor"


@dataclass(frozen=True)
class PoolProblem:
    """One reason a pool is infeasible, with its numbers (see :class:`ProblemKind` for units)."""

    kind: ProblemKind
    value: float = math.nan
    limit: float = math.nan
    slots: int | None = None


@dataclass(frozen=True)
class PoolSizing:
    """A sized (or evaluated) pool: counts, rates, latencies and what binds.

    Attributes:
        feasible: the pool meets its SLO and utilization cap (always true for a sizing that succeeded).
        instances: serving instances (tensor-parallel groups); 0 for an empty pool.
        gpus: instances × GPUs per instance.
        slots_per_instance: concurrent sequences per instance (vLLM ``max_num_seqs``).
        kv_slot_limit: the most slots the KV cache allows at ``context_tokens``.
        context_tokens: the pool's context window (vLLM ``max_model_len``), tokens.
        servers: instances × slots (the M/G/c servers).
        arrival_rate_per_s: requests per second reaching the pool.
        mean_service_s: E[S], seconds a request holds a slot.
        service_scv: C_s².
        service_rate_per_instance_per_s: μ per instance = s / E[S].
        utilization: λ·E[S] / (n·s).
        p99_wait_s, mean_wait_s: slot wait (q-quantile and mean), seconds.
        p99_prefill_s: prefill part of the TTFT, seconds.
        iteration_s: iteration time (TPOT), seconds.
        p99_ttft_s: P99 TTFT under the service model, seconds.
        binding_constraint: ``utilization`` (the cap sets n), ``ttft`` (the SLO forces more), ``minimum``
            (one instance, below the cap), ``none`` (empty pool), ``infeasible``.
        slots_binding: what set the slot count: ``kv`` (KV limit), ``ttft`` (the SLO made fewer slots
            cheaper or feasible), ``tpot`` (the TPOT cap), ``fixed`` (given).
        problems: why the pool is infeasible (empty when it is feasible).
        min_achievable_ttft_s: for an infeasible pool, the smallest TTFT any size reaches.
        cost_per_hour_usd: gpus × $/GPU-hour.
        compute_utilization: for an occupancy-aware model, the instances' compute utilization
            x = λ·(H·E[L_out] + τ·E[L_in] + κ·E[I·L]) / n (None otherwise).
        chain_mean_wait_s: for an occupancy-aware model, the chain's mean wait, seconds.
        arrival_scv: C_a², the arrival variability the pool was sized or evaluated for (1: Poisson).
        fewer_instances, p99_ttft_fewer_instances_s: for a pool the TTFT SLO sized under the engine
            model, n − max(1, round(f·n)) instances (f = FEWER_INSTANCES_FRACTION) and the P99 TTFT
            there (slots as sized, seconds; ∞ when unstable): how steeply the P99 falls with n, so
            how much a small error in the TTFT law moves the pool (None otherwise).
        slot_wait_over_slo: under the engine model, the share of requests over the TTFT SLO because
            they waited for a slot: P(TTFT > SLO) − P(T′ > SLO), T′ the same law without the wait
            (None for other models and unstable pools). Against 1 − q (1% at the P99) it says how
            much of the quantile's budget the slot wait takes.

    ``p99_ttft_s``, ``p99_prefill_s``, ``p99_ttft_fewer_instances_s`` and ``slot_wait_over_slo``
    may be given as a
    :class:`Deferred`: the figure is then computed on first read (and on comparison, hashing,
    ``dataclasses.replace`` or pickling), so a sweep does not pay for the quantiles of the pools no
    plan reports. Readers see a float either way.
    """

    feasible: bool
    instances: int
    gpus: int
    slots_per_instance: int
    kv_slot_limit: int
    context_tokens: int
    servers: int
    arrival_rate_per_s: float
    mean_service_s: float
    service_scv: float
    service_rate_per_instance_per_s: float
    utilization: float
    p99_wait_s: float
    p99_prefill_s: float
    iteration_s: float
    p99_ttft_s: float
    binding_constraint: str
    slots_binding: str
    problems: tuple[PoolProblem, ...]
    min_achievable_ttft_s: float | None
    cost_per_hour_usd: float
    compute_utilization: float | None = None
    chain_mean_wait_s: float | None = None
    arrival_scv: float = 1.0
    fewer_instances: int | None = None
    p99_ttft_fewer_instances_s: float | None = None
    slot_wait_over_slo: float | None = None
    spare_instances: int = 0

    def __getstate__(self) -> dict[str, Any]:
        """Pickled with every deferred figure computed (a :class:`Deferred` holds a closure)."""
        for name in _DEFERRED_FIELDS:
            getattr(self, name)
        return dict(self.__dict__)

    @property
    def load_utilization(self) -> float:
        """What the utilization cap bounds: ρ, or for an occupancy-aware model the larger of the slot
        occupancy and the compute utilization."""
        if self.compute_utilization is None:
            return self.utilization
        return max(self.utilization, self.compute_utilization)

    @cached_property
    def mean_wait_s(self) -> float:
        """Mean slot wait, seconds (computed on first use: the sweep never needs it for most cells)."""
        if self.chain_mean_wait_s is not None:
            return self.chain_mean_wait_s
        if self.servers == 0 or not self.arrival_rate_per_s > 0:
            return 0.0 if self.feasible else math.nan
        z = peakedness(self.arrival_scv)  # Hayward's (c/z, λ/z), as in _wait_one
        return float(
            mean_wait(
                self.servers / z, self.arrival_rate_per_s / z, 1.0 / self.mean_service_s,
                self.service_scv / z, self.arrival_scv / z,
            )
        )  # fmt: skip


class Deferred:
    """A figure of a :class:`PoolSizing` computed on first read: ``compute()`` returns it."""

    __slots__ = ("compute",)

    def __init__(self, compute: Callable[[], float]) -> None:
        self.compute = compute


class _DeferredField:
    """The descriptor behind a :class:`PoolSizing` field that may be given as a :class:`Deferred`:
    the dataclass's ``__init__`` stores what it gets; the first read computes a deferred value and
    keeps the float."""

    def __init__(self, name: str) -> None:
        self.key = f"_deferred_{name}"

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        value = instance.__dict__[self.key]
        if isinstance(value, Deferred):
            value = instance.__dict__[self.key] = float(value.compute())
        return value

    def __set__(self, instance: Any, value: Any) -> None:
        instance.__dict__[self.key] = value


_DEFERRED_FIELDS = ("p99_ttft_s", "p99_prefill_s", "p99_ttft_fewer_instances_s", "slot_wait_over_slo")
for _name in _DEFERRED_FIELDS:  # after @dataclass, so the fields keep no default and their order
    setattr(PoolSizing, _name, _DeferredField(_name))


def empty_pool(hardware: PoolHardware, context_tokens: int, kv_limit: int, slots: int) -> PoolSizing:
    """An empty pool (no traffic): no instances, feasible."""
    return PoolSizing(
        feasible=True, instances=0, gpus=0, slots_per_instance=slots, kv_slot_limit=kv_limit,
        context_tokens=context_tokens, servers=0, arrival_rate_per_s=0.0, mean_service_s=math.nan,
        service_scv=math.nan, service_rate_per_instance_per_s=math.nan, utilization=0.0, p99_wait_s=0.0,
        p99_prefill_s=0.0, iteration_s=math.nan, p99_ttft_s=0.0, binding_constraint="none",
        slots_binding="kv", problems=(), min_achievable_ttft_s=None, cost_per_hour_usd=0.0,
    )  # fmt: skip


def infeasible_pool(
    hardware: PoolHardware,
    context_tokens: int,
    kv_limit: int,
    rate: float,
    problem: PoolProblem,
    best_ttft: float | None,
) -> PoolSizing:
    """A pool no size makes feasible, with the ``problem`` and the smallest TTFT any size reaches."""
    return PoolSizing(
        feasible=False, instances=0, gpus=0, slots_per_instance=0, kv_slot_limit=kv_limit,
        context_tokens=context_tokens, servers=0, arrival_rate_per_s=rate, mean_service_s=math.nan,
        service_scv=math.nan, service_rate_per_instance_per_s=math.nan, utilization=math.nan,
        p99_wait_s=math.nan, p99_prefill_s=math.nan, iteration_s=math.nan,
        p99_ttft_s=math.nan, binding_constraint="infeasible", slots_binding="kv", problems=(problem,),
        min_achievable_ttft_s=best_ttft, cost_per_hour_usd=math.nan,
    )  # fmt: skip


def replace_pool(sizing: PoolSizing, **changes: object) -> PoolSizing:
    """``dataclasses.replace``, keeping deferred figures deferred."""
    for name in _DEFERRED_FIELDS:
        changes.setdefault(name, sizing.__dict__[f"_deferred_{name}"])
    return replace(sizing, **changes)
