"""The ``engine`` service model: token-aware iterations and load-driven batches.

An iteration costs W + H·(sequences decoding) + τ·(prompt tokens in it) (+ κ·KV tokens), and the
sequences in flight follow the load. Decode work grows with the sequences in flight, prompt work
with the arrival flow (it takes the share u = λ_i·τ·E[L_in] of an instance's time). The pool is the
state-dependent birth–death chain of :mod:`fleetopt.core.engine.occupancy` with iterations
(W + c_d·k/n)/(1 − u), which gives the slot wait and the mean occupancy; the TTFT law
(:meth:`EngineModel.ttft_law`) adds the residual of the iteration in progress, the request's own
prefill and first decode, the other requests' prompts that share those iterations, and the
profile's constant overhead T0, by its first three cumulants (:mod:`fleetopt.core.engine.ttft`;
docs/math.md). The corrections around that core are :class:`EngineAssumptions` (the model takes
them as a value). The simulator checks the model with its ``physical`` engine under least-loaded
dispatch (docs/validation.md).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, NamedTuple

import numpy as np

from fleetopt.core.backends import ARRAYS, FLOATS, backend_of
from fleetopt.core.engine.assumptions import DEFAULT_ASSUMPTIONS, EngineAssumptions
from fleetopt.core.engine.occupancy import (
    ChainState,
    negative_binomial_log_tail_bound,
    occupancy_quantile,
    occupancy_state,
    slot_wait_given_wait_s,
    widened_chain,
)
from fleetopt.core.engine.prompts import PromptPrice
from fleetopt.core.engine.router import router_arguments
from fleetopt.core.engine.ttft import TtftCumulants, ttft_cumulants
from fleetopt.core.hardware import IterationCosts, PoolHardware, iteration_costs
from fleetopt.core.poolsizing import Deferred, PoolProblem, PoolSizing, ProblemKind
from fleetopt.core.poolstats import PoolMoments
from fleetopt.core.queueing import peakedness
from fleetopt.core.servicemodel import PoolQueue, PoolTargets, ServiceModel
from fleetopt.defaults import FEWER_INSTANCES_FRACTION

#: The simulator model that checks the engine model (:data:`fleetopt.core.simulate.PHYSICAL`).
PHYSICAL = "physical"
#: The least decode cost per sequence the occupancy chain uses, as a share of W (see EngineQueue).
LEAST_DECODE_SHARE = 1e-6
#: Below this log of a bound on P(wait) the prefill-stall widening of the chain is skipped (e^-230 ≈
#: 10⁻¹⁰⁰: no TTFT quantile can see it), in the point and the array evaluations alike.
NEGLIGIBLE_LOG_WAIT = -230.0


class EngineModel(ServiceModel):
    """Token-aware and occupancy-aware (module docstring). Pools receive the exact routed mixture,
    as under ``lockstep``; :meth:`service_times` gives full-occupancy values (what the audit's
    throughput uses); sizing uses :class:`EngineQueue`.

    ``assumptions``: the corrections around the derived core (:class:`EngineAssumptions`; the
    registered ``engine`` model uses the defaults)."""

    name = "engine"
    summary = "token- and occupancy-aware: t_iter = W + H·decoding + τ·prompt tokens, load-driven batches"
    uses_prefill_quantile = True
    uses_prompt_levels = True

    def __init__(self, assumptions: EngineAssumptions = DEFAULT_ASSUMPTIONS) -> None:
        self.assumptions = assumptions

    def __repr__(self) -> str:
        changed = self.assumptions.changed_terms()
        return f"EngineModel({', '.join(changed) + ' changed' if changed else 'default assumptions'})"

    @property
    def simulation_model(self) -> str:
        """The simulator's iteration-level ``physical`` engine (the model has no request-level form)."""
        return PHYSICAL

    def pool_queue(
        self, arrival_rate_per_s: float, moments: PoolMoments, hardware: PoolHardware, context_tokens: int,
        targets: PoolTargets, arrival_scv: float = 1.0,
    ) -> EngineQueue:  # fmt: skip
        return EngineQueue(self, arrival_rate_per_s, moments, hardware, context_tokens, targets, arrival_scv)

    def fixed_slots(self, hardware: PoolHardware, context_tokens: int) -> int | None:
        return None

    def service_times(self, moments: PoolMoments, hardware: PoolHardware, slots: Any) -> tuple[Any, ...]:
        if moments.prefill_iterations_quantile is None:
            raise ValueError("the engine model needs the pool's prefill-iteration quantile")
        costs, price = self.pool_costs(moments, hardware)
        iteration_s = costs.base_s + costs.per_sequence_s(moments) * slots
        mean_service_s = iteration_s * moments.mean_iterations
        prefill_s = self.own_prefill_s(moments, hardware, price, iteration_s)
        return mean_service_s, moments.iterations_scv, prefill_s + iteration_s, prefill_s, iteration_s

    @staticmethod
    def prompt_tokens_quantile(moments: PoolMoments, hardware: PoolHardware) -> float:
        """The q-quantile of L_in, interpolated inside its prefill level: (P_q − 1 + f)·chunk, with f the
        share of level P_q's weight that reaches q (uniform within the level), at most the pool's
        longest total."""
        level = moments.prefill_iterations_quantile
        tokens = (max(level - 1, 0) + moments.prefill_quantile_fraction) * hardware.prefill_chunk_tokens
        return float(min(tokens, moments.max_total_tokens))

    def pool_costs(self, moments: PoolMoments, hardware: PoolHardware) -> tuple[IterationCosts, PromptPrice]:
        """The pool's iteration costs with τ the pool's mean price of a prompt token, τ*, and that
        price (:attr:`EngineAssumptions.prompt_price`: with the prompts' attention by default)."""
        costs = iteration_costs(hardware)
        price = self.assumptions.prompt_price(moments, costs)
        if price.tau_s != costs.per_prefill_token_s:
            costs = replace(costs, per_prefill_token_s=price.tau_s)
        return costs, price

    def own_prefill_s(
        self, moments: PoolMoments, hardware: PoolHardware, price: PromptPrice, iteration_s: Any
    ) -> Any:
        """P_q iterations at ``iteration_s`` plus the request's own prompt compute at L_in,q tokens
        (:meth:`PromptPrice.own_s`), seconds (the full-occupancy figure of :meth:`service_times`)."""
        return moments.prefill_iterations_quantile * iteration_s + price.own_s(
            self.prompt_tokens_quantile(moments, hardware)
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
        mean_input = moments.mean_total_tokens - mean_output - moments.mean_cached_tokens
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
        price: PromptPrice | None = None,
    ) -> TtftCumulants:
        """The TTFT law of one instance of the pool (:func:`fleetopt.core.engine.ttft.ttft_cumulants`)
        with k = ``occupancy_per_instance`` sequences in flight (t_d = W + c_d·k; a float or an
        array), behind a least-loaded router over n = ``instances`` (the intake share f and company
        factor φ of :attr:`assumptions`), with the slot wait (P(wait), mean wait given a wait) and T0
        (unless ``with_overhead`` is false). ``decode_and_prompt``: :meth:`decode_and_prompt_costs`
        when the caller already has them. ``costs`` and ``price``: :meth:`pool_costs` (the
        iteration costs at the pool's mean prompt price τ*, and the prompt price); without
        ``price`` both are worked out from ``hardware``."""
        if moments.prompt_levels is None:
            raise ValueError("the engine model needs the pool's prompt lengths by prefill level")
        if price is None:  # (the pool's costs and prompt price, from the hardware)
            costs, price = self.pool_costs(moments, hardware)
        decode_per_sequence_s, prompt_work_s = decode_and_prompt or self.decode_and_prompt_costs(
            moments, costs
        )
        router = router_arguments(moments, costs, rate_per_instance_per_s, instances, prompt_work_s)
        return ttft_cumulants(
            moments.prompt_levels,
            tau_s=costs.per_prefill_token_s,
            own_excess=(price.square_s, price.linear_s),
            first_token_iteration=self.assumptions.first_token_iteration,
            decode_iteration_s=costs.base_s + decode_per_sequence_s * occupancy_per_instance,
            rate_per_instance_per_s=rate_per_instance_per_s * self.assumptions.company_factor(router),
            time_share=self.assumptions.intake_share(router),
            overhead_s=hardware.ttft_overhead_s if with_overhead else 0.0,
            slot_wait=slot_wait,
        )


class EnginePoint(NamedTuple):
    """The engine model's answer at n instances of s slots (:meth:`EngineQueue.point`): floats at one
    slot count, arrays over a sweep of them.

    Attributes:
        ok: stable, within the cap (slot occupancy and compute), meets the TTFT SLO and TPOT cap.
        margin: how far the tests pass (< 0: fail), the least of log(limit / value) over the caps,
            the TPOT cap and (when the caps pass) log((1 − q) / P(TTFT > SLO)); one point only
            (NaN over a sweep): it places the search's next instance count.
        utilization: the slot occupancy E[min(K, c)]/c (the offered load σ ≥ 1 where unstable).
        compute: the instances' compute utilization λ·E[I]·c₁/n.
        seen_iteration_s: the iteration at the q-quantile of the occupancy an arrival finds, seconds
            (NaN without a TPOT cap).
        p_wait, wait_given_s: P(wait for a slot) and the mean wait given a wait, seconds.
        mean_busy: the chain's mean sequences in flight in the pool.
        stable: the chain keeps up (σ < 1) and so do the instances with their prompts (u < 1).
        law: the TTFT law (:class:`fleetopt.core.engine.ttft.TtftCumulants`) at one stable point
            within the caps (elsewhere :meth:`EngineQueue.law_at` works it out when asked); None
            where unstable, outside the caps and over a sweep.
    """

    ok: Any
    margin: float
    utilization: Any
    compute: float
    seen_iteration_s: Any
    p_wait: Any
    wait_given_s: Any
    mean_busy: Any
    stable: Any
    law: TtftCumulants | None


class EngineQueue(PoolQueue):
    """One pool under the engine model (:class:`fleetopt.core.servicemodel.PoolQueue`).

    ``decode_per_sequence_s``: c_d, the decode-side cost one sequence adds to an iteration;
    ``prompt_work_s``: τ·E[L_in], the compute of one request's prompt (so the prompt share of an
    instance's time is u = λ/n · τ·E[L_in]); ``work_per_request_s``: E[I]·c₁ = E[I]·c_d + τ·E[L_in];
    ``prompt_square_work_s2``: τ²·E[L_in²] (NaN without prompt levels: no stall widening).
    """

    model: EngineModel

    def prepare(self) -> None:
        """The pool's iteration costs and per-request work (class docstring), worked out once."""
        moments = self.moments
        self.assumptions = self.model.assumptions
        self.costs, self.price = self.model.pool_costs(moments, self.hardware)
        costs = self.costs
        decode, prompt = self.model.decode_and_prompt_costs(moments, costs)
        # A pool whose requests all ask for no output tokens decodes nothing (c_d = 0), where the
        # chain's NB(r, x) has r = W/(c_d/n) + 1 = ∞ (its Poisson limit); c_d ≥ 10⁻⁶·W keeps r finite
        # and moves an iteration by at most 10⁻⁶·W per sequence.
        self.decode_per_sequence_s = max(decode, LEAST_DECODE_SHARE * costs.base_s)
        self.prompt_work_s = prompt
        self.work_per_request_s = moments.mean_iterations * self.decode_per_sequence_s + prompt
        levels = moments.prompt_levels
        tau = costs.per_prefill_token_s
        self.prompt_square_work_s2 = math.nan if levels is None else tau * tau * levels.mean_square_tokens
        self.peakedness = peakedness(self.arrival_scv)
        #: v = (C_a² + C_I²)/2, the two-moment factor of the slot wait
        self.variability = 0.5 * (self.arrival_scv + moments.iterations_scv)
        #: evaluations at (n, s) already made: the search's last one is the one the report describes
        self.evaluated: dict[tuple[float, float], EnginePoint] = {}

    # -- the model's figures -------------------------------------------------------------------
    def stall_factor(self, instances: float) -> float:
        """How much prefill stalls widen the occupancy's variance at n = ``instances``
        (:attr:`EngineAssumptions.stall_widening`)."""
        return self.assumptions.stall_widening(
            self.rate / instances, self.prompt_work_s, self.prompt_square_work_s2
        )

    def slot_wait(self, p_wait: Any, drain_rate_per_s: Any, instances: float) -> tuple[Any, Any]:
        """(P(wait), m): the slot wait is 0 with probability 1 − P(wait), else exponential with mean
        m (:meth:`EngineAssumptions.slot_wait_given_wait_s` of the chain's drain rate μ(c) − λ, with
        the two-moment factor v = (C_a² + C_I²)/2; C_a² = 1 for Poisson)."""
        assumptions = self.assumptions
        return p_wait, slot_wait_given_wait_s(
            drain_rate_per_s, self.rate, instances, self.variability, assumptions.slot_queue,
            assumptions.two_moment_factor,
        )  # fmt: skip

    def law(
        self, instances: float, occupancy_per_instance: Any, slot_wait: tuple[Any, Any] = (0.0, 0.0)
    ) -> TtftCumulants:
        """The TTFT law at n ``instances`` with that many sequences in flight per instance."""
        return self.model.ttft_law(
            self.moments, self.hardware, self.costs, rate_per_instance_per_s=self.rate / instances,
            instances=instances, occupancy_per_instance=occupancy_per_instance, slot_wait=slot_wait,
            decode_and_prompt=(self.decode_per_sequence_s, self.prompt_work_s), price=self.price,
        )  # fmt: skip

    def point(self, instances: float, slots: Any, *, last_fails: bool = False) -> EnginePoint:
        """The chain's figures at n ``instances`` (one count) of s ``slots`` (a float: one point, every
        figure, in plain floats, the sizing hot path; or an array: a sweep over slot counts that only
        decides ``ok``), and ``ok``: the pool is stable, within the cap (slot occupancy and compute),
        meets the TTFT SLO and TPOT cap.

        Other requests' prompts take the share u = λ_i·τ·E[L_in] of an instance's time, stretching
        every iteration by 1/(1 − u); with k sequences in flight per instance an iteration lasts
        (W + c_d·k)/(1 − u), which is the chain of :mod:`fleetopt.core.engine.occupancy` with
        W' = W/(1 − u) and c' = c_d/(1 − u). The P99 TTFT is the q-quantile of
        :meth:`EngineModel.ttft_law` at the chain's mean occupancy per instance, with its slot wait;
        the TPOT cap is checked at the q-quantile of the occupancy an arrival finds. Over slot counts
        only t_d = W + c_d·k and the wait change: the law is evaluated over an array of t_d, and the
        SLO test uses its survival function. ``last_fails`` (a sweep): the last slot count is known to
        fail the SLO; a slot count whose mean occupancy is no lower than the last one's then fails too
        (the law grows with t_d and the wait, and fewer slots only add waiting), so its law is not
        evaluated.

        Arrivals with SCV C_a² (peakedness z = (1 + C_a²)/2) wait as in Hayward's approximation for
        M/G/c: the probability of waiting and the occupancy an arrival finds come from the chain of
        n/z instances fed λ/z (the same load per instance, so the same iteration times and compute
        utilization, but a z times wider occupancy distribution), scaled back by z; the wait given a
        wait is exponential with mean (C_a² + C_I²)/2 over the unscaled drain rate. The mean occupancy
        (what the iteration times and the slot utilization see) stays the chain's own: Hayward's
        equivalent pool has c/z slots, and its truncated mean would understate a bursty pool's
        occupancy. At C_a² = 1 this is the Poisson chain exactly. The slot wait is its own part of the
        TTFT mixture (:class:`fleetopt.core.engine.ttft.TtftCumulants`), so the P99 grows with the wait
        and a bursty pool is never sized below a Poisson one without a second check under the Poisson
        chain.
        """
        xp = backend_of(slots)
        report = xp is FLOATS  # one point is reported whatever its verdict; a sweep only decides
        m = self.moments
        q = m.quantile
        peak = self.peakedness
        cap, tpot_slo_s = self.targets.max_utilization, self.targets.tpot_slo_s
        n = float(instances)
        s = np.asarray(slots, dtype=np.float64) if xp is ARRAYS else float(slots)
        prompt_share = self.rate / n * self.prompt_work_s
        compute = self.rate / n * self.work_per_request_s
        servers = n * s
        stretch = 1.0 / max(1.0 - prompt_share, 1e-12)
        base_s, per_sequence_s = self.costs.base_s * stretch, self.decode_per_sequence_s * stretch
        chain = occupancy_state(self.rate, n, s, m.mean_iterations, base_s, per_sequence_s)
        stable = chain.stable & (prompt_share < 1.0)
        if not xp.any(stable):
            # unstable: report the offered slot load σ = λ·E[I]·t(s)/c ≥ 1, as M/G/c reports ρ ≥ 1
            utilization = xp.maximum(chain.sigma, 1.0)
            margin = _log_margin(cap, utilization) if report else math.nan
            full_iteration_s = base_s + per_sequence_s * s
            return EnginePoint(
                xp.full_like(s, False), margin, utilization, compute, full_iteration_s, xp.full_like(s, 1.0),
                xp.full_like(s, math.inf), servers, stable, None,
            )  # fmt: skip
        utilization = xp.where(stable, chain.mean_busy / servers, xp.maximum(chain.sigma, 1.0))
        within_caps = stable & (utilization <= cap) & (compute <= cap)
        # the waiting (and the occupancy an arrival finds); the mean in flight stays the chain's own
        waiting = self._waiting_chain(n, s, chain, stable if report else within_caps, base_s, per_sequence_s)
        drain = peak * waiting.drain_rate_per_s
        ok = within_caps
        seen_iteration_s: Any = math.nan
        if tpot_slo_s is not None:
            with xp.quiet():
                seen_iteration_s = self._seen_iteration_s(n, s, waiting, servers, stretch)
            ok = ok & (seen_iteration_s <= tpot_slo_s)
        if report:
            slot_wait = self.slot_wait(waiting.p_wait, drain, n)
            margin = min(_log_margin(cap, compute), _log_margin(cap, utilization))
            law = None  # (outside the caps the verdict needs no law: law_at works it out if asked)
            if within_caps:
                law = self.law(n, chain.mean_busy / n, slot_wait)
                tail = law.survival_one(self.targets.ttft_slo_s)
                ok = ok and not tail > 1.0 - q  # (the test of TtftCumulants.exceeds_one)
                margin = min(margin, _log_margin(1.0 - q, tail))
            if tpot_slo_s is not None:
                margin = min(margin, _log_margin(tpot_slo_s, seen_iteration_s))
            wait_given_s, mean_busy = slot_wait[1], chain.mean_busy
            return EnginePoint(
                ok,
                margin,
                utilization,
                compute,
                seen_iteration_s,
                waiting.p_wait,
                wait_given_s,
                mean_busy,
                stable,
                law,
            )
        if last_fails and tpot_slo_s is None:  # (with a TPOT cap the last may fail on TPOT alone)
            ok &= chain.mean_busy < chain.mean_busy[-1]
        chosen = np.flatnonzero(ok)
        if chosen.size:
            with xp.quiet():
                slot_wait = self.slot_wait(waiting.p_wait[chosen], drain[chosen], n)
                law = self.law(n, chain.mean_busy[chosen] / n, slot_wait)
                ok[chosen] = ~law.exceeds(self.targets.ttft_slo_s, q)
        return EnginePoint(
            ok,
            math.nan,
            utilization,
            compute,
            seen_iteration_s,
            waiting.p_wait,
            math.nan,
            chain.mean_busy,
            stable,
            None,
        )

    def _waiting_chain(
        self, n: float, s: Any, chain: ChainState, needed: Any, base_s: float, per_sequence_s: float
    ) -> ChainState:
        """The chain for the waiting (and the occupancy an arrival finds): ``chain`` (the chain itself)
        widened by the prefill stalls (:meth:`stall_factor`), at Hayward's equivalent pool (n/z
        instances at λ/z) for peakedness z ≠ 1. Where the widened chain's P(wait) is negligible (below
        e^NEGLIGIBLE_LOG_WAIT by a Chernoff bound), or the point is not ``needed``, its P(wait) and
        normalizer are the chain's own (only its (r, x) widen, for the occupancy an arrival finds:
        without a TPOT cap nothing reads them, and where nothing widens the chain is returned as is)."""
        xp = backend_of(s)
        z, m = self.peakedness, self.moments
        widen = self.stall_factor(n)
        if z != 1.0:
            return occupancy_state(
                self.rate / z, n / z, s, m.mean_iterations, base_s, per_sequence_s, widen, wait_only=True
            )
        if widen == 1.0:
            return chain
        wide_r, wide_x = widened_chain(chain.r, chain.x, widen)
        with xp.quiet():
            log_bound = negative_binomial_log_tail_bound(wide_r, wide_x, n * s)
            log_bound = log_bound - xp.log1p(-xp.where(chain.stable, chain.sigma, 0.0))
        widened = needed & chain.stable & xp.logical_not(log_bound < NEGLIGIBLE_LOG_WAIT)
        if self.targets.tpot_slo_s is None and not xp.any(widened):
            return chain
        p_wait, chain_z = xp.piecewise(
            widened, _widened_waiting, _own_waiting, s, chain.p_wait, chain.z, self.rate, n,
            m.mean_iterations, base_s, per_sequence_s, widen,
        )  # fmt: skip
        return ChainState(
            chain.stable, p_wait, chain.drain_rate_per_s, chain.mean_busy, wide_r, wide_x, chain_z,
            chain.sigma, chain.compute_utilization,
        )  # fmt: skip

    def _seen_iteration_s(self, n: float, s: Any, waiting: ChainState, servers: Any, stretch: float) -> Any:
        """The iteration time at the q-quantile of the occupancy an arrival finds (all slots when the
        q-quantile arrival waits): (W + c_d·m_q/n)/(1 − u), m_q the NB quantile by Cornish–Fisher
        (``waiting``: the chain of n/z instances for arrivals of peakedness z)."""
        xp = backend_of(s)
        q, peak = self.moments.quantile, self.peakedness
        full = servers / peak
        target = xp.minimum(1.0, q * waiting.z)
        seen = xp.where(waiting.p_wait > 1.0 - q, full, occupancy_quantile(target, waiting.r, waiting.x))
        finite = xp.isfinite(seen)
        seen = xp.where(finite, xp.ceil(xp.where(finite, seen, 0.0)), full)
        per_instance = xp.minimum(s, seen / (n / peak))
        return (self.costs.base_s + self.decode_per_sequence_s * per_instance) * stretch

    def at(self, instances: float, slots: float) -> EnginePoint:
        """:meth:`point` at one point, memoized per (n, s)."""
        key = (float(instances), float(slots))
        known = self.evaluated.get(key)
        if known is None:
            known = self.evaluated[key] = self.point(*key)
        return known

    def law_at(self, instances: float, slots: float) -> TtftCumulants | None:
        """The TTFT law at one point (:meth:`at`; None when unstable), worked out now if the point
        was outside the caps."""
        point = self.at(instances, slots)
        if point.law is None and point.stable:
            n = float(instances)
            law = self.law(n, point.mean_busy / n, (point.p_wait, point.wait_given_s))
            point = self.evaluated[(n, float(slots))] = point._replace(law=law)
        return point.law

    def floor(self) -> TtftCumulants:
        """The TTFT law at no load (no other request, no sequence decoding, no wait): no pool size does
        better."""
        return self.model.ttft_law(
            self.moments, self.hardware, self.costs, rate_per_instance_per_s=0.0, instances=1.0,
            occupancy_per_instance=0.0, price=self.price,
        )  # fmt: skip

    def p99_ttft_at(self, instances: int, slots: int) -> float:
        """The P99 TTFT of the pool at n ``instances`` of s ``slots`` (∞ when unstable), seconds."""
        law = self.law_at(instances, slots)
        return math.inf if law is None else float(law.quantile_s(self.moments.quantile))

    # -- the seam -------------------------------------------------------------------------------
    def passes(self, instances: int, slots: int) -> tuple[bool, float | None]:
        point = self.at(instances, slots)
        return bool(point.ok), point.margin

    def passing_slots(self, instances: int, slots: np.ndarray) -> np.ndarray:
        return self.point(float(instances), slots, last_fails=True).ok

    def slot_limit(self, fixed_slots: int | None) -> int | PoolProblem:
        least_iteration_s = self.costs.base_s
        tpot = self.targets.tpot_slo_s
        if tpot is not None and not least_iteration_s <= tpot:
            return PoolProblem(ProblemKind.TPOT_OVER_SLO, least_iteration_s, tpot, 1)
        return fixed_slots if fixed_slots is not None else self.kv_limit

    def least_instances(self, slots: int) -> int:
        """No pool with fewer instances than the compute bound λ·E[I]·c₁ / cap is allowed (x ≤ cap),
        whatever its slot count."""
        return max(1, math.ceil(self.rate * self.work_per_request_s / self.targets.max_utilization))

    def could_pass(self, instances: int) -> bool:
        """A necessary condition for some slot count to pass at n ``instances``: the TTFT law with the
        fewest sequences in flight any slot count has and no slot wait meets the SLO (the law grows
        with t_d and the wait), and the TPOT cap allows an iteration of W/(1 − u).

        The fewest in flight: each of the λ/n requests per second an instance takes holds its slot for
        E[I] iterations of at least W/(1 − u), so by Little's law the chain's mean occupancy per
        instance is at least k₀ = (λ/n)·E[I]·W/(1 − u), whatever the slot count (taken 10⁻⁶ lower, for
        rounding)."""
        n = float(instances)
        prompt_share = self.rate / n * self.prompt_work_s
        if not prompt_share < 1.0:
            return False
        least_iteration_s = self.costs.base_s / (1.0 - prompt_share)
        if self.targets.tpot_slo_s is not None and not least_iteration_s <= self.targets.tpot_slo_s:
            return False
        fewest = self.rate / n * self.moments.mean_iterations * least_iteration_s * (1.0 - 1e-6)
        return not self.law(n, fewest).exceeds_one(self.targets.ttft_slo_s, self.moments.quantile)

    def out_of_reach(self) -> PoolProblem | None:
        """The no-load floor (the TTFT law with no other request and no wait; no pool size does
        better) against the SLO, by the survival test sizing uses; the quantile only for the report."""
        least_law = self.floor()
        if not least_law.exceeds_one(self.targets.ttft_slo_s, self.moments.quantile):
            return None
        least_ttft_s = float(least_law.quantile_s(self.moments.quantile))
        kind = ProblemKind.COMPUTE_FLOOR if self.costs.prefill_floor_binds else ProblemKind.PREFILL_OVER_SLO
        return PoolProblem(kind, least_ttft_s, self.targets.ttft_slo_s, 1)

    def binding(self, instances: int, slots: int) -> str:
        if instances == self.least_instances(slots) and instances > 1:
            return "utilization"
        if instances == 1:
            return "minimum"
        return "ttft"

    def tpot_s(self, instances: int, slots: int) -> float:
        return self.at(instances, slots).seen_iteration_s

    def exceeds_ttft_slo(self, instances: int, slots: int, described: PoolSizing) -> bool:
        law = self.law_at(instances, slots)
        return law is None or law.exceeds_one(self.targets.ttft_slo_s, self.moments.quantile)

    def describe(self, instances: int, slots: int, binding: str, slots_binding: str) -> PoolSizing:
        law, q = self.law_at(instances, slots), self.moments.quantile
        ev = self.at(instances, slots)
        mean_busy = float(ev.mean_busy)
        # the slot wait: 0 with probability 1 − P(wait), else exponential with mean ``wait_given_s``
        p_wait, wait_given_s = ev.p_wait, ev.wait_given_s
        wait_q = wait_given_s * math.log(p_wait / (1.0 - q)) if p_wait > 1.0 - q else 0.0
        # The P99 TTFT, and the P99 from a free slot to the first token (the same law without the slot
        # wait and T0): mixture quantiles, computed when first read (a sweep reports few of its pools).
        stable = law is not None
        ttft_q: float | Deferred = math.inf
        prefill_q: float | Deferred = math.nan
        wait_over: float | Deferred | None = None
        if stable:
            overhead_s = self.hardware.ttft_overhead_s
            ttft_q = Deferred(lambda: law.quantile_s(q))
            prefill_q = Deferred(lambda: law.without_wait_and_overhead(overhead_s).quantile_s(q))
            wait_over = Deferred(lambda: _slot_wait_over_slo(law, self.targets.ttft_slo_s, overhead_s))
        fewer: int | None = None
        fewer_q: float | Deferred | None = None
        if binding == "ttft":
            fewer = instances - max(1, round(FEWER_INSTANCES_FRACTION * instances))
            if fewer >= 1:
                fewer_q = Deferred(lambda: self.p99_ttft_at(fewer, slots))
            else:
                fewer = None
        mean_service_s = mean_busy / self.rate
        return self.sizing(
            instances, slots, binding, slots_binding,
            feasible=bool(ev.ok),
            mean_service_s=mean_service_s,
            service_scv=self.moments.iterations_scv,
            service_rate_per_instance_per_s=slots / mean_service_s,
            utilization=float(ev.utilization),
            p99_wait_s=wait_q if stable else math.inf,
            p99_prefill_s=prefill_q,
            iteration_s=(self.costs.base_s + self.decode_per_sequence_s * mean_busy / instances)
            / max(1.0 - self.rate / instances * self.prompt_work_s, 1e-12),
            p99_ttft_s=ttft_q,
            compute_utilization=float(ev.compute),
            chain_mean_wait_s=p_wait * wait_given_s if p_wait > 0.0 else 0.0,
            fewer_instances=fewer,
            p99_ttft_fewer_instances_s=fewer_q,
            slot_wait_over_slo=wait_over,
        )  # fmt: skip


def _widened_waiting(xp: Any, s: Any, p_wait: Any, z: Any, *chain_arguments: float) -> tuple[Any, Any]:
    """(P(wait), normalizer) of the widened chain at s slots (``chain_arguments``: λ, n, E[I], W', c',
    the variance factor; :func:`fleetopt.core.engine.occupancy.occupancy_state`)."""
    part = occupancy_state(*chain_arguments[:2], s, *chain_arguments[2:], wait_only=True)
    return part.p_wait, part.z


def _own_waiting(xp: Any, s: Any, p_wait: Any, z: Any, *chain_arguments: float) -> tuple[Any, Any]:
    """The chain's own (P(wait), normalizer): the widening is negligible there, or not needed."""
    return p_wait, z


def _log_margin(limit: float, value: float) -> float:
    """log(limit / value): ≥ 0 when value ≤ limit (∞ for value ≤ 0, NaN for NaN)."""
    return math.log(limit) - math.log(value) if value > 0.0 else (math.nan if math.isnan(value) else math.inf)


def _slot_wait_over_slo(law: TtftCumulants, ttft_slo_s: float, overhead_s: float) -> float:
    """P(TTFT > SLO) − P(T′ > SLO): the share of requests over the SLO because they waited for a slot
    (T′: the law without the wait; T0 is a constant shift of both)."""
    without = law.without_wait_and_overhead(overhead_s).survival_one(ttft_slo_s - overhead_s)
    return max(0.0, law.survival_one(ttft_slo_s) - without)


ENGINE = EngineModel()
