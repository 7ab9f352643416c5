"""The seam every service model implements: what a pool's traffic is, and how the pool serves it.

A service model (:class:`ServiceModel`) answers, for the planner, which requests at which lengths
each pool of a routing receives (:meth:`ServiceModel.pool_share`, :meth:`ServiceModel.pool_rate`)
and whether slots are a decision (:meth:`ServiceModel.fixed_slots`); for the audit, the service
time at full occupancy (:meth:`ServiceModel.service_times`); for the request-level simulator, what
each request is charged (:meth:`ServiceModel.request_times`); and, for sizing, the queue of one
pool (:meth:`ServiceModel.pool_queue`): a :class:`PoolQueue` that, given n instances of s slots,
says whether the pool meets its targets and describes it (utilization, P99 wait, P99 TTFT, TPOT)
as a :class:`fleetopt.core.poolsizing.PoolSizing`. :mod:`fleetopt.core.sizing` searches over
(n, s) through that interface alone; nothing outside a model's implementation branches on which
model it is. The M/G/c models share one queue (:mod:`fleetopt.core.mgc`); the ``engine`` model has
its own (:mod:`fleetopt.core.engine`). The registry is :mod:`fleetopt.core.service`.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import numpy as np

from fleetopt.core.hardware import PoolHardware
from fleetopt.core.poolsizing import PoolProblem, PoolSizing, ProblemKind, replace_pool
from fleetopt.core.poolstats import PoolMoments, PoolStatistics
from fleetopt.core.routing import Routing


@dataclass(frozen=True)
class PoolShare:
    """The traffic one pool of a routed fleet receives: its share of requests and their moments."""

    traffic_fraction: float
    moments: PoolMoments


class PoolTargets(NamedTuple):
    """What a pool must meet: the P99 (q-quantile) TTFT SLO, the utilization cap and, optionally, a
    TPOT cap (seconds; the cap a fraction in (0, 1])."""

    ttft_slo_s: float
    max_utilization: float
    tpot_slo_s: float | None = None


class PoolQueue(ABC):
    """One pool under one service model: its traffic (λ, the moments of its requests, C_a²), its
    hardware and context, and its targets. Answers, for n instances of s slots per instance, the
    same typed question whatever the model: does the pool meet its targets (:meth:`passes`, and
    :meth:`passing_slots` over a sweep of slot counts), and what are its utilization, P99 wait,
    P99 TTFT and TPOT (:meth:`describe`). The search hooks (:meth:`slot_limit`,
    :meth:`least_instances`, …) let :func:`fleetopt.core.sizing.size_pool` find the fewest
    instances, then the most slots, with one search for every model.

    Every test must be monotone in n at a fixed s (more instances: less load per instance).
    """

    def __init__(
        self, model: ServiceModel, arrival_rate_per_s: float, moments: PoolMoments, hardware: PoolHardware,
        context_tokens: int, targets: PoolTargets, arrival_scv: float = 1.0,
    ) -> None:  # fmt: skip
        self.model = model
        self.rate = arrival_rate_per_s
        self.moments = moments
        self.hardware = hardware
        self.context_tokens = context_tokens
        self.kv_limit = hardware.max_slots(context_tokens)
        self.targets = targets
        self.arrival_scv = arrival_scv
        self.prepare()

    @abstractmethod
    def prepare(self) -> None:
        """What the model works out once per pool, and its memos (called at the end of ``__init__``)."""

    # -- the question at (n, s) --------------------------------------------------------------
    @abstractmethod
    def passes(self, instances: int, slots: int) -> tuple[bool, float | None]:
        """(whether n instances of s slots meet the targets, a margin): the margin is a smooth
        measure of n's distance from the threshold that grows with n (< 0 failing), or None; it
        only places the search's next evaluation (:func:`fleetopt.core.search.smallest_passing_from`)."""

    @abstractmethod
    def passing_slots(self, instances: int, slots: np.ndarray) -> np.ndarray:
        """:meth:`passes` for every slot count of ``slots`` (1 … s_max as floats) at n instances, as a
        bool array. Called only below the fewest instances at which the most slots pass (the last
        slot count fails there)."""

    @abstractmethod
    def describe(self, instances: int, slots: int, binding: str, slots_binding: str) -> PoolSizing:
        """The pool at n instances of s slots, its figures as the model gives them (``binding`` and
        ``slots_binding``: what set n and s, see :class:`fleetopt.core.poolsizing.PoolSizing`)."""

    @abstractmethod
    def exceeds_ttft_slo(self, instances: int, slots: int, described: PoolSizing) -> bool:
        """Whether the pool at (n, s) (``described`` by :meth:`describe`) breaks its TTFT SLO, by
        the test sizing uses (so a sized pool re-evaluated passes exactly when sizing passed it)."""

    # -- search hooks ---------------------------------------------------------------------------
    @abstractmethod
    def slot_limit(self, fixed_slots: int | None) -> int | PoolProblem:
        """The most slots per instance worth trying (``fixed_slots`` when given), or the problem
        when no slot count can meet the targets at any size (checked before any search)."""

    @abstractmethod
    def least_instances(self, slots: int) -> int:
        """A lower bound on the instances that pass at s slots (the caps' bound), ≥ 1."""

    def search_hint(self, hint: int | None) -> int | None:
        """Where the search over n starts (:func:`fleetopt.core.search.smallest_passing_from`): the
        planner's ``hint`` (a similar pool's answer), or None to start at the caps' bound."""
        return hint

    def least_instances_any(self, most: int) -> int:
        """A lower bound on the instances that pass at any slot count 1 … ``most``."""
        return self.least_instances(most)

    def could_pass(self, instances: int) -> bool:
        """False only when no slot count can pass at n instances (a cheap necessary condition
        that spares the sweep over slot counts)."""
        return True

    def out_of_reach(self) -> PoolProblem | None:
        """Asked when the search's first point fails: the problem when no size meets the SLO (the
        problem's value is then the least TTFT any size reaches), else None."""
        return None

    @abstractmethod
    def binding(self, instances: int, slots: int) -> str:
        """What set n at the chosen (n, s): ``utilization``, ``ttft`` or ``minimum``."""

    @abstractmethod
    def tpot_s(self, instances: int, slots: int) -> float:
        """The TPOT the cap is tested against at (n, s), seconds."""

    def sizing(
        self, instances: int, slots: int, binding: str, slots_binding: str, **figures: Any
    ) -> PoolSizing:
        """A :class:`PoolSizing` of n instances of s slots of this pool: the counts, the traffic and
        the cost filled in, the model's ``figures`` (latencies, utilization, …) as given."""
        return PoolSizing(
            instances=instances,
            gpus=instances * self.hardware.gpus_per_instance,
            slots_per_instance=slots,
            kv_slot_limit=self.kv_limit,
            context_tokens=self.context_tokens,
            servers=instances * slots,
            arrival_rate_per_s=self.rate,
            binding_constraint=binding,
            slots_binding=slots_binding,
            problems=(),
            min_achievable_ttft_s=None,
            cost_per_hour_usd=instances * self.hardware.instance_hour_usd,
            arrival_scv=self.arrival_scv,
            **figures,
        )

    def evaluate(self, instances: int, slots: int) -> PoolSizing:
        """A given pool: :meth:`describe` with ``feasible`` and its problems (slots over the KV
        limit, over the utilization or compute cap, over the TTFT SLO)."""
        result = self.describe(instances, slots, "evaluated", "fixed")
        cap = self.targets.max_utilization
        problems = []
        if slots > self.kv_limit:
            problems.append(PoolProblem(ProblemKind.SLOTS_OVER_KV, slots, self.kv_limit))
        if not result.utilization <= cap:
            problems.append(PoolProblem(ProblemKind.OVER_CAP, result.utilization, cap))
        elif result.compute_utilization is not None and not result.compute_utilization <= cap:
            problems.append(PoolProblem(ProblemKind.OVER_CAP, result.compute_utilization, cap))
        if self.exceeds_ttft_slo(instances, slots, result):
            problems.append(
                PoolProblem(ProblemKind.TTFT_OVER_SLO, result.p99_ttft_s, self.targets.ttft_slo_s)
            )
        return replace_pool(result, feasible=not problems, problems=tuple(problems))


class ServiceModel(ABC):
    """How a pool serves requests: the seam every service model implements (module docstring).
    Register new models in :data:`fleetopt.core.service.SERVICE_MODEL_REGISTRY`."""

    #: The name ``--service-model`` and plan documents use.
    name: ClassVar[str]
    #: One line for help texts and documents.
    summary: ClassVar[str]
    #: Whether the TTFT uses the q-quantile of prefill iterations (else only moments are needed).
    uses_prefill_quantile: ClassVar[bool]
    #: Whether pools need their prompt lengths by prefill level (:attr:`PoolMoments.prompt_levels`).
    uses_prompt_levels: ClassVar[bool] = False

    @property
    def simulation_model(self) -> str:
        """The simulator model that checks this one (:mod:`fleetopt.core.simulate`): the model
        itself where it has a request-level form (:meth:`request_times`)."""
        return self.name

    @abstractmethod
    def pool_queue(
        self, arrival_rate_per_s: float, moments: PoolMoments, hardware: PoolHardware, context_tokens: int,
        targets: PoolTargets, arrival_scv: float = 1.0,
    ) -> PoolQueue:  # fmt: skip
        """The queue of one pool with this traffic, hardware and targets (:class:`PoolQueue`)."""

    @abstractmethod
    def service_times(self, moments: PoolMoments, hardware: PoolHardware, slots: Any) -> tuple[Any, ...]:
        """(E[S], C_s², TTFT overhead, prefill, iteration time), seconds, at full occupancy of
        ``slots`` (a float or a float array); constants come back unbroadcast."""

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

    def band_share(self, stats: PoolStatistics, routing: Routing, index: int, quantile: float) -> PoolShare:
        """The first (``index`` 0) or second pool of a routed fleet, which the C&R band splits: the
        exact mixture of routed requests, compressed band requests at their compressed lengths and
        the rest at their own."""
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

    def range_share(
        self, stats: PoolStatistics, lo_tokens: float, hi_tokens: float, quantile: float
    ) -> PoolShare:
        """A pool after the second, serving lo < L ≤ hi at original lengths."""
        moments = stats.range_moments(
            lo_tokens,
            hi_tokens,
            quantile,
            prefill_quantile=self.uses_prefill_quantile,
            prompt_levels=self.uses_prompt_levels,
        )
        return PoolShare(moments.traffic_fraction, moments)

    def pool_rate(self, share: PoolShare, index: int, arrival_rate_per_s: float) -> float:
        """Requests per second reaching pool ``index`` when the fleet receives ``arrival_rate_per_s``."""
        return max(0.0, arrival_rate_per_s * share.traffic_fraction)

    def request_times(
        self,
        iteration_base_s: float,
        iteration_per_slot_s: float,
        calibration_context_tokens: int,
        slots: int,
        prefill_iterations: np.ndarray,
        total_tokens: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """(time per output token, delay from slot start to first token), seconds, per request, for
        the request-level simulator; a model without a request-level form is simulated by
        :attr:`simulation_model` instead."""
        raise NotImplementedError(f"the {self.name} model has no request-level form")


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


def slot_service_times(
    moments: PoolMoments, hardware: PoolHardware, slots: np.ndarray, service_model: ServiceModel
) -> SlotServiceTimes:
    """Service-time moments and TTFT overhead of a pool at full occupancy for each slot count in
    ``slots`` (the model's :meth:`ServiceModel.service_times`)."""
    s = np.asarray(slots, dtype=np.float64)
    values = service_model.service_times(moments, hardware, s)
    mean_s, scv, overhead_s, prefill_s, iteration_s = (
        v if isinstance(v, np.ndarray) else np.full(s.shape, v) for v in values
    )
    return SlotServiceTimes(s, mean_s, scv, overhead_s, prefill_s, iteration_s)


def one_slot_service_time(
    moments: PoolMoments, hardware: PoolHardware, slots: int, service_model: ServiceModel
) -> SlotServiceTime:
    """:func:`slot_service_times` for one slot count, in plain floats (the planner's hot path)."""
    mean_s, scv, overhead_s, prefill_s, iteration_s = service_model.service_times(
        moments, hardware, float(slots)
    )
    return SlotServiceTime(int(slots), mean_s, scv, overhead_s, prefill_s, iteration_s)
