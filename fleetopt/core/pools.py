"""The pool vocabulary: a deployable pool and what a plan predicts for it.

:class:`DeployablePool` is one pool as it is deployed (name, context, slots, instances, hardware),
whether it comes from the planner (:meth:`DeployablePool.of_sizing`) or from a plan file
(:func:`fleetopt.io.plans.read_plan`); :class:`PoolPredictions` is what the plan predicts for it at
the rate it was sized for. Drift, the cross-check and the simulator's setup read pools through
these two types.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fleetopt.core.hardware import PoolHardware


@dataclass(frozen=True)
class PoolPredictions:
    """A plan's figures for one pool at its sizing rate (None where a plan does not carry one).

    Attributes:
        arrival_rate_per_s: requests per second reaching the pool (its share of the sizing rate).
        utilization: λ·E[S] / (n·s).
        p99_ttft_s, p99_wait_s: P99 TTFT and P99 slot wait, seconds.
        iteration_s: iteration time (TPOT), seconds.
        mean_service_s: E[S], seconds a request holds a slot.
        arrival_scv: C_a², the arrival variability the pool was sized for (1: Poisson).
    """

    arrival_rate_per_s: float | None = None
    utilization: float | None = None
    p99_ttft_s: float | None = None
    p99_wait_s: float | None = None
    iteration_s: float | None = None
    mean_service_s: float | None = None
    arrival_scv: float | None = None

    @classmethod
    def of_sizing(cls, sizing: Any) -> PoolPredictions:
        """The figures of a sized (or evaluated) pool: a
        :class:`fleetopt.core.poolsizing.PoolSizing`, or a plan document's pool (same names; a
        figure it leaves out is None)."""
        return cls(
            arrival_rate_per_s=sizing.arrival_rate_per_s,
            utilization=sizing.utilization,
            p99_ttft_s=sizing.p99_ttft_s,
            p99_wait_s=sizing.p99_wait_s,
            iteration_s=sizing.iteration_s,
            mean_service_s=sizing.mean_service_s,
            arrival_scv=sizing.arrival_scv,
        )


@dataclass(frozen=True)
class DeployablePool:
    """One pool as deployed: ``instances`` serving instances of ``hardware``, each with
    ``slots_per_instance`` slots (vLLM ``max_num_seqs``) at a ``context_tokens`` context window
    (vLLM ``max_model_len``), and what the plan predicts for it."""

    name: str
    context_tokens: int
    slots_per_instance: int
    instances: int
    hardware: PoolHardware
    predicted: PoolPredictions = PoolPredictions()

    @property
    def gpus(self) -> int:
        """instances × GPUs per instance."""
        return self.instances * self.hardware.gpus_per_instance

    @classmethod
    def of_sizing(cls, name: str, sizing: Any, hardware: PoolHardware) -> DeployablePool:
        """A sized pool on ``hardware`` with its figures as the predictions: the planner's
        :class:`fleetopt.core.poolsizing.PoolSizing`, or a plan document's pool (the same names)."""
        return cls(
            name=name,
            context_tokens=sizing.context_tokens,
            slots_per_instance=sizing.slots_per_instance,
            instances=sizing.instances,
            hardware=hardware,
            predicted=PoolPredictions.of_sizing(sizing),
        )
