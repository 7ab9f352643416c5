"""The M/G/c service models (``lockstep``, ``fleet-sim``) and the queue they share.

A pool of n instances with s slots each is an M/G/c queue with c = n·s servers (FleetOpt §3.1).
Its P99 TTFT is the P99 slot wait plus the prefill and first-decode time (FleetOpt Eq. 7–8, with
the P99 prefill); it passes when utilization ≤ ρ_max and P99 TTFT ≤ SLO (Eq. 11 and §4.1). The
slot count s ≤ the KV limit is a decision too: fewer slots iterate faster (t = W + H·s), which can
make a pool whose SLO binds cheaper below its KV limit. Each model gives only its service times
(:meth:`fleetopt.core.servicemodel.ServiceModel.service_times`); :class:`MgcQueue` is the shared
default :class:`fleetopt.core.servicemodel.PoolQueue` built on them (Erlang-C/Kimura in log space,
:mod:`fleetopt.core.queueing`, with Hayward's peakedness for bursty arrivals).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fleetopt.core.backends import ARRAYS, backend_of
from fleetopt.core.hardware import PoolHardware
from fleetopt.core.poolsizing import PoolProblem, PoolSizing, ProblemKind
from fleetopt.core.poolstats import PoolMoments, PoolStatistics
from fleetopt.core.queueing import peakedness, unchecked_wait_statistics, unchecked_wait_statistics_arrays
from fleetopt.core.routing import Routing
from fleetopt.core.search import smallest_passing
from fleetopt.core.servicemodel import (
    PoolQueue,
    PoolShare,
    PoolTargets,
    ServiceModel,
    SlotServiceTime,
    one_slot_service_time,
    slot_service_times,
)

#: The reference implementation floors the service-time SCV at this value (FACTS §1).
FLEET_SIM_MIN_SCV = 0.01
#: The reference implementation treats a pool after the first with λ ≤ 0.01 req/s as empty (FACTS §1).
FLEET_SIM_EMPTY_RATE_PER_S = 0.01

_LOG_2 = math.log(2.0)


def _no_wait_log_bound(servers: Any, offered_load: Any, xp: Any) -> Any:
    """An upper bound on ln C(c, a), valid where c ≥ a + 1 and a > 0 (``xp``: the float or array
    backend of :mod:`fleetopt.core.backends`, so one formula serves both paths).

    C = B / (1 − ρ(1 − B)) ≤ B / (1 − ρ) and B = pmf(c; a) / cdf(c; a) ≤ 2·pmf(c; a) once
    c ≥ a + 1 (the Poisson median is below a + 1/3). ln c! is bounded below by Stirling,
    c·ln c − c + ½·ln(2πc), so the bound on ln pmf is an upper bound.
    """
    log_factorial_lower = servers * xp.log(servers) - servers + 0.5 * xp.log(2.0 * math.pi * servers)
    log_pmf_upper = servers * xp.log(offered_load) - offered_load - log_factorial_lower
    return _LOG_2 + log_pmf_upper - xp.log1p(-offered_load / servers)


def surely_no_wait(servers: Any, offered_load: Any, quantile: float) -> Any:
    """True where Erlang C ≤ 1 − q is certain from :func:`_no_wait_log_bound` (then the q-wait is
    exactly 0); an extra e⁻¹ margin absorbs rounding. Skips the exact Erlang C in the many-server
    regime, where C is astronomically small. One point (floats) or arrays of them."""
    xp = backend_of(servers)
    if xp is ARRAYS:
        servers, offered_load = np.asarray(servers, np.float64), np.asarray(offered_load, np.float64)
    usable = (servers >= offered_load + 1.0) & (offered_load > 0)
    if not xp.any(usable):
        return usable
    # (the bound where it is valid; elsewhere it is computed at a harmless point and not used)
    c, a = xp.where(usable, servers, 2.0), xp.where(usable, offered_load, 1.0)
    with xp.quiet():
        log_bound = _no_wait_log_bound(c, a, xp)
    return usable & (log_bound <= math.log1p(-quantile) - 1.0)


def wait_quantile_s(
    servers: float, rate: float, mean_service_s: float, scv: float, quantile: float, arrival_scv: float = 1.0
) -> float:
    """The q-quantile of the slot wait at c servers (one point, plain floats), seconds.

    Arrivals with SCV C_a² (peakedness z = (1 + C_a²)/2) wait as in Hayward's approximation: the
    probability of waiting is Erlang C at (c/z, a/z) (Fredericks 1980; Whitt 1992), and the wait
    given a wait is exponential with mean ((C_a² + C_s²)/2)/(cμ − λ) (Kimura's two-moment form, as
    for Poisson arrivals). Both reduce to the M/G/c formulas at C_a² = 1. Passing (c/z, λ/z) with
    SCVs divided by z to the M/G/c formula gives exactly that: its slack (c/z)μ − λ/z = (cμ − λ)/z
    cancels the 1/z of the variability.
    """
    z = peakedness(arrival_scv)
    servers, rate = servers / z, rate / z
    if surely_no_wait(servers, rate * mean_service_s, quantile):
        return 0.0  # C ≤ 1 − q for certain, so the q-quantile of the wait is exactly 0
    return unchecked_wait_statistics(quantile, servers, rate, 1.0 / mean_service_s, scv / z, arrival_scv / z)[
        0
    ]


def utilization_bound(rate: float, mean_service_s: Any, slots: Any, cap: float) -> Any:
    """Smallest n with λ·E[S] / (n·s) ≤ cap (exact, guarding float rounding on both sides), for one
    slot count (an int) or per slot count (an int array)."""
    xp = backend_of(slots)
    load = rate * mean_service_s
    n = xp.maximum(xp.ceil(load / (cap * slots)), 1)
    n = n + (load / (n * slots) > cap)
    fewer = n - 1
    return xp.as_int(n - ((fewer >= 1) & (load / (xp.maximum(fewer, 1) * slots) <= cap)))


class MgcQueue(PoolQueue):
    """The M/G/c queue of one pool (module docstring): the shared default :class:`PoolQueue`.

    At s slots the service times are the model's (E[S], C_s², the TTFT overhead: prefill and first
    decode); n passes when n is at least the utilization bound at s and the P99 wait (Erlang C and
    Kimura at c = n·s, Hayward's (c/z, λ/z) for C_a² > 1) fits in SLO − overhead. The slot counts
    worth trying are 1 … s_max, the most whose overhead leaves a wait budget ≥ 0 and whose
    iteration meets the TPOT cap; a sweep over them is vectorized."""

    def prepare(self) -> None:
        """Memos: the service times by slot count, the waits by (n, s), the sweeps by s_max."""
        self._times: dict[int, SlotServiceTime] = {}
        self._waits: dict[tuple[int, int], float] = {}
        self._sweeps: dict[int, tuple[Any, ...]] = {}

    def times(self, slots: int) -> SlotServiceTime:
        """The service times at s slots (plain floats; memoized)."""
        known = self._times.get(slots)
        if known is None:
            known = self._times[slots] = one_slot_service_time(self.moments, self.hardware, slots, self.model)
        return known

    def _wait(self, instances: int, slots: int) -> float:
        """The P99 (q-quantile) slot wait at n instances of s slots, seconds (memoized)."""
        known = self._waits.get((instances, slots))
        if known is None:
            t = self.times(slots)
            known = wait_quantile_s(
                float(instances * slots), self.rate, t.mean_service_s, t.service_scv, self.moments.quantile,
                self.arrival_scv,
            )  # fmt: skip
            self._waits[(instances, slots)] = known
        return known

    def _sweep(self, most: int) -> tuple[Any, ...]:
        """(service times, utilization bounds, wait budgets) for s = 1 … ``most`` as arrays."""
        known = self._sweeps.get(most)
        if known is None:
            slots = np.arange(1.0, most + 1.0)
            times = slot_service_times(self.moments, self.hardware, slots, self.model)
            bound = utilization_bound(self.rate, times.mean_service_s, slots, self.targets.max_utilization)
            known = self._sweeps[most] = (times, bound, self.targets.ttft_slo_s - times.ttft_overhead_s)
        return known

    def slot_limit(self, fixed_slots: int | None) -> int | PoolProblem:
        slo, tpot = self.targets.ttft_slo_s, self.targets.tpot_slo_s
        if fixed_slots is not None:
            t = self.times(fixed_slots)
            if tpot is not None and not t.iteration_s <= tpot:
                return PoolProblem(ProblemKind.TPOT_OVER_SLO, t.iteration_s, tpot, fixed_slots)
            if not slo - t.ttft_overhead_s >= 0:
                return PoolProblem(ProblemKind.PREFILL_OVER_SLO, t.ttft_overhead_s, slo, fixed_slots)
            return fixed_slots
        most = _most_allowed_slots(self.moments, self.hardware, self.kv_limit, self.model, slo, tpot)
        if most == 0:
            return _no_slot_count_fits(self.moments, self.hardware, self.kv_limit, self.model, slo, tpot)
        return most

    def least_instances(self, slots: int) -> int:
        t = self.times(slots)
        return utilization_bound(self.rate, t.mean_service_s, float(slots), self.targets.max_utilization)

    def search_hint(self, hint: int | None) -> int | None:
        """None: the utilization bound is usually the answer, and a wait at a hint above it (an
        Erlang C at many servers) costs more than the hint saves."""
        return None

    def least_instances_any(self, most: int) -> int:
        if _load_per_slot_falls(self.moments, self.hardware, most, self.model):
            return self.least_instances(most)  # the bound falls with s: least at the most slots
        return int(self._sweep(most)[1].min())

    def passes(self, instances: int, slots: int) -> tuple[bool, float | None]:
        if instances < self.least_instances(slots):
            return False, None
        budget_s = self.targets.ttft_slo_s - self.times(slots).ttft_overhead_s
        wait_s = self._wait(instances, slots)
        margin = math.log(budget_s) - math.log(wait_s) if budget_s > 0 and wait_s > 0 else None
        return wait_s <= budget_s, margin

    def passing_slots(self, instances: int, slots: np.ndarray) -> np.ndarray:
        times, bound, budget = self._sweep(slots.size)
        ok = instances >= bound
        subset = np.flatnonzero(ok)
        if subset.size:
            # the waits as wait_quantile_s: Hayward's (c/z, λ/z) with the SCVs divided by z
            rate, q, z = self.rate, self.moments.quantile, peakedness(self.arrival_scv)
            mean_s = times.mean_service_s[subset]
            servers = instances * slots[subset] / z
            passed = surely_no_wait(servers, rate * mean_s / z, q)
            unsure = ~passed
            if unsure.any():
                rest = subset[unsure]
                c = servers[unsure]
                waits, _ = unchecked_wait_statistics_arrays(
                    q, c, np.full(c.shape, rate / z), 1.0 / times.mean_service_s[rest],
                    0.5 * (self.arrival_scv + times.service_scv[rest]) / z,
                )  # fmt: skip
                passed[unsure] = waits <= budget[rest]
            ok[subset] = passed
        return ok

    def describe(self, instances: int, slots: int, binding: str, slots_binding: str) -> PoolSizing:
        t = self.times(slots)
        mean_s = t.mean_service_s
        servers = instances * slots
        p99_wait = self._wait(instances, slots)
        return self.sizing(
            instances, slots, binding, slots_binding,
            feasible=True,
            mean_service_s=mean_s,
            service_scv=t.service_scv,
            service_rate_per_instance_per_s=slots / mean_s,
            utilization=self.rate * mean_s / servers,
            p99_wait_s=p99_wait,
            p99_prefill_s=t.prefill_s,
            iteration_s=t.iteration_s,
            p99_ttft_s=p99_wait + t.ttft_overhead_s,
        )  # fmt: skip

    def exceeds_ttft_slo(self, instances: int, slots: int, described: PoolSizing) -> bool:
        return not described.p99_ttft_s <= self.targets.ttft_slo_s

    def binding(self, instances: int, slots: int) -> str:
        if instances > self.least_instances(slots):
            return "ttft"
        if (
            instances == 1
            and self.rate * self.times(slots).mean_service_s < self.targets.max_utilization * slots
        ):
            return "minimum"  # one instance is the least a pool with traffic can have
        return "utilization"

    def tpot_s(self, instances: int, slots: int) -> float:
        return self.times(slots).iteration_s


def _load_per_slot_falls(
    moments: PoolMoments, hardware: PoolHardware, most: int, model: ServiceModel
) -> bool:
    """True when E[S](s)/s strictly falls over s = 1 … ``most`` by a relative step above 1e-9.

    Under both M/G/c models E[S] = a + b·s (a, b ≥ 0). With a > 0 the step from s to s + 1 is
    a / ((s + 1)(a + b·s)) of the value, smallest at s = ``most``; far above float rounding
    (~1e-16), the computed utilization bound is then non-increasing in s, exactly as its array
    form, and least at s = ``most``. False (use the arrays) when a = 0, or when E[S] is not affine
    after all.
    """
    at_one = model.service_times(moments, hardware, 1.0)[0]
    slope = model.service_times(moments, hardware, 2.0)[0] - at_one
    intercept = at_one - slope
    at_most = model.service_times(moments, hardware, float(most))[0]
    if not (intercept > 0 and slope >= 0):
        return False
    if abs(intercept + slope * most - at_most) > 1e-9 * at_most:
        return False
    return intercept / ((most + 1) * (intercept + slope * most)) > 1e-9


def _most_allowed_slots(
    moments: PoolMoments, hardware: PoolHardware, kv_limit: int, service_model: ServiceModel,
    ttft_slo_s: float, tpot_slo_s: float | None,
) -> int:  # fmt: skip
    """The largest s ≤ the KV limit whose prefill + first decode leaves a wait budget ≥ 0 (and whose
    iteration time meets the TPOT cap), or 0 if even s = 1 does not.

    Both grow with s under either M/G/c model, and so do their float evaluations (each step
    is a monotone IEEE operation on W + H·s), so the allowed slot counts are exactly 1 … s_max.
    Both are affine in s, so s_max is guessed from the ends and checked at s and s + 1; bisection
    with the same scalar formulas finishes if the guess is off.
    """

    def margins(slots: int) -> tuple[float, float]:
        """(SLO − prefill − first decode, TPOT SLO − iteration time) at ``slots``, seconds."""
        _, _, overhead_s, _, iteration_s = service_model.service_times(moments, hardware, float(slots))
        return ttft_slo_s - overhead_s, (math.inf if tpot_slo_s is None else tpot_slo_s - iteration_s)

    def fits(margin: tuple[float, float]) -> bool:
        return margin[0] >= 0 and margin[1] >= 0

    def allowed(slots: int) -> bool:
        return fits(margins(slots))

    first, last = margins(1), margins(kv_limit)
    if not fits(first):
        return 0
    if fits(last):
        return kv_limit
    lo, hi = 1, kv_limit  # allowed at lo, not at hi
    # Probe where the binding margin crosses zero, and one past it: when the guess is right (the
    # usual case) that settles it.
    crossings = [
        1 + (kv_limit - 1) * a / (a - b) for a, b in zip(first, last, strict=True) if b < 0 and a - b > 0
    ]
    guess = math.floor(min(crossings)) if crossings else lo
    for probe in (guess, guess + 1):
        if lo < probe < hi:
            if allowed(probe):
                lo = probe
            else:
                hi = probe
    first_refused, _ = smallest_passing(lambda slots: (not allowed(slots), None), failing=lo, passing=hi)
    return first_refused - 1


def _no_slot_count_fits(
    moments: PoolMoments, hardware: PoolHardware, kv_limit: int, service_model: ServiceModel,
    ttft_slo_s: float, tpot_slo_s: float | None,
) -> PoolProblem:  # fmt: skip
    """Why no slot count meets the SLO (or TPOT cap): the TPOT cap at one slot when no slot count
    meets it, else the least prefill + first decode (a TPOT-allowed slot count's) over the SLO."""
    candidates = np.arange(1, kv_limit + 1)
    times = slot_service_times(moments, hardware, candidates, service_model)
    tpot_ok = np.ones(candidates.size, bool) if tpot_slo_s is None else times.iteration_s <= tpot_slo_s
    if not tpot_ok.any():
        return PoolProblem(
            ProblemKind.TPOT_OVER_SLO, float(times.iteration_s[0]), tpot_slo_s, int(candidates[0])
        )
    best = int(np.argmin(np.where(tpot_ok, times.ttft_overhead_s, np.inf)))
    best_ttft = float(times.ttft_overhead_s[best])
    return PoolProblem(ProblemKind.PREFILL_OVER_SLO, best_ttft, ttft_slo_s, int(candidates[best]))


class MgcModel(ServiceModel):
    """An M/G/c service model: it gives its service times, and pools are :class:`MgcQueue`."""

    def pool_queue(
        self, arrival_rate_per_s: float, moments: PoolMoments, hardware: PoolHardware, context_tokens: int,
        targets: PoolTargets, arrival_scv: float = 1.0,
    ) -> PoolQueue:  # fmt: skip
        return MgcQueue(self, arrival_rate_per_s, moments, hardware, context_tokens, targets, arrival_scv)


class LockstepModel(MgcModel):
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

    def request_times(
        self, iteration_base_s: float, iteration_per_slot_s: float, calibration_context_tokens: int,
        slots: int, prefill_iterations: np.ndarray, total_tokens: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
        tpot = np.full(prefill_iterations.size, iteration_base_s + iteration_per_slot_s * slots)
        return tpot, (prefill_iterations + 1) * tpot


class FleetSimModel(MgcModel):
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


def _cdf_or_one(stats: PoolStatistics, tokens: float) -> float:
    """F(tokens), exactly 1 above every request (the reference's 1 − α' for the last pool)."""
    return 1.0 if math.isinf(tokens) else stats.cdf(tokens)


LOCKSTEP = LockstepModel()
FLEET_SIM = FleetSimModel()
