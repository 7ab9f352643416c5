"""A pool whose iteration time grows with the sequences in flight: a state-dependent birth–death queue.

A pool of n instances with s slots each (c = n·s) receives Poisson arrivals at rate λ. With k
requests in service, spread evenly over the instances, every instance iterates in

    t(k) = W + a·k,   a = c₁ / n,

where c₁ is the mean cost one sequence adds to an iteration (H for a decoding sequence, τ per
prompt token for a prefilling one, averaged over a request's I iterations). Each request needs
I iterations, so the k requests in service complete at rate μ(k) = k / (E[I]·t(k)) for k ≤ c, and
at μ(c) with k ≥ c (the rest wait, FCFS). This is a birth–death chain. Below the cap it is a
symmetric (processor-sharing-like) station, insensitive to the distribution of I (Kelly,
*Reversibility and Stochastic Networks*, 1979, §3.3), and its law has a closed form:

    π(k) ∝ Π_{j≤k} λ E[I] (W + a j) / j = x^k · Γ(r + k) / (Γ(r) · k!),
    x = λ·E[I]·a = λ·E[I]·c₁ / n (the instances' compute utilization),   r = W / a + 1,

which is the negative-binomial law NB(r, x) up to normalization. Above c the chain is geometric
with ratio σ = λ / μ(c) = λ·E[I]·t(c) / c. So, with F and f the NB(r, x) CDF and pmf,

    Z = F(c − 1) + f(c) / (1 − σ),   P(wait) = f(c) / ((1 − σ)·Z),

and by PASTA an arrival finding k ≥ c waits for k − c + 1 departures at rate μ(c): Exp(μ(c) − λ)
given it waits, in one pooled queue (:func:`pooled_slot_queue`). Behind a least-loaded router a
waiting request joins the queue of its own instance (:func:`local_slot_queue`), and variability
of I beyond the exponential's is carried by the two-moment factor (C_a² + C_I²)/2 (Allen–Cunneen /
Kimura) on the queue's build-up (:func:`two_moment_on_build_up`); :func:`slot_wait_given_wait_s`
puts them together. Prefill stalls widen the occupancy's variance
(:func:`prefill_stall_variance_factor`). Everything is evaluated in log space, each formula
once over a backend (:mod:`fleetopt.core.backends`): plain floats at one point, numpy over an array
of slot counts.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from fleetopt.core.backends import ARRAYS, FLOATS, backend_of


class ChainState(NamedTuple):
    """The stationary chain of one pool (:func:`occupancy_state`): floats at one slot count, arrays
    over an array of them.

    Attributes:
        stable: σ < 1 (the queue keeps up).
        p_wait: P(an arrival waits for a slot); 1 where unstable.
        drain_rate_per_s: μ(c) − λ, per second (−∞ at an unstable point).
        mean_busy: E[min(K, c)], the mean sequences in flight (c where unstable; NaN when the chain
            was asked for its waiting only).
        r, x: the (widened) chain's negative-binomial parameters (x is the compute utilization
            when the chain is not widened; 0.5 in place of x where an array point is unstable).
        z: the normalizer F(c − 1) + f(c)/(1 − σ) (NaN at an unstable point).
        sigma: σ = λ / μ(c), the offered slot load.
        compute_utilization: λ·E[I]·c₁/n, the instances' compute utilization (one number).
    """

    stable: Any
    p_wait: Any
    drain_rate_per_s: Any
    mean_busy: Any
    r: Any
    x: Any
    z: Any
    sigma: Any
    compute_utilization: float


def occupancy_state(
    arrival_rate_per_s: float,
    instances: float,
    slots: Any,
    mean_iterations: float,
    iteration_base_s: float,
    per_sequence_s: float,
    variance_factor: float = 1.0,
    wait_only: bool = False,
) -> ChainState:
    """The stationary chain of one pool at s ``slots`` per instance (a float, or an array of slot
    counts: the chain for each).

    Args:
        arrival_rate_per_s: λ, requests per second.
        instances: n. slots: s per instance.
        mean_iterations: E[I], iterations a request holds its slot.
        iteration_base_s: W, seconds. per_sequence_s: c₁, seconds one sequence adds to an iteration.
        variance_factor: φ ≥ 1, the chain's NB(r, x) replaced below c by the negative binomial with
            the same mean and φ times its variance (:func:`widened_chain`; 1: the chain itself).
        wait_only: skip the mean occupancy (``mean_busy`` is then NaN): the waiting figures only.

    Unstable points (σ ≥ 1) get p_wait = 1 and infinite waits downstream.
    """
    xp = backend_of(slots)
    s = np.asarray(slots, dtype=np.float64) if xp is ARRAYS else slots
    lam, n = arrival_rate_per_s, instances
    c = n * s
    a = per_sequence_s / n
    r = iteration_base_s / a + 1.0
    compute = x = lam * mean_iterations * a
    if variance_factor != 1.0 and 0.0 < x < 1.0:
        r, x = widened_chain(r, x, variance_factor)
    full_iteration_s = iteration_base_s + per_sequence_s * s
    sigma = lam * mean_iterations * full_iteration_s / c
    stable = sigma < 1.0
    if not xp.any(stable):
        unstable = xp.full_like(c, 1.0)
        return ChainState(
            stable, unstable, xp.full_like(c, -math.inf), xp.full_like(c, math.nan) if wait_only else c,
            r, xp.where(stable, x, 0.5), xp.full_like(c, math.nan), sigma, compute,
        )  # fmt: skip
    with xp.quiet():
        safe_x = xp.where(stable, x, 0.5)
        log_f = (
            xp.lgamma(c + r) - xp.lgamma(r) - xp.lgamma(c + 1.0) + r * xp.log1p(-safe_x) + c * xp.log(safe_x)
        )
        below = xp.betainc(r, c, 1.0 - safe_x)  # F(c − 1) = P(K ≤ c − 1)
        tail = xp.exp(log_f) / (1.0 - xp.where(stable, sigma, 0.5))
        z = below + tail
        p_wait = xp.where(stable, tail / z, 1.0)
        if wait_only:
            mean_busy = xp.full_like(c, math.nan)
        else:
            # E[K; K ≤ c − 1] = r·x/(1 − x) · P(NB(r + 1, x) ≤ c − 2)
            busy_below = xp.where(
                c >= 2,
                r * safe_x / (1.0 - safe_x) * xp.betainc(r + 1.0, xp.maximum(c - 1.0, 1.0), 1.0 - safe_x),
                0.0,
            )
            mean_busy = xp.where(stable, (busy_below + c * tail) / z, c)
        drain = c / (mean_iterations * full_iteration_s) - lam
    return ChainState(stable, p_wait, drain, mean_busy, r, safe_x, z, sigma, compute)


def local_drain_rate_per_s(drain_rate_per_s: Any, arrival_rate_per_s: float, instances: float) -> Any:
    """The drain rate of the wait behind a least-loaded router that queues at the instances:

        μ_JSQ = (μ(c)/n)·(1 − σⁿ),   μ(c) = drain + λ,   σ = λ/μ(c),

    so the wait given a wait has mean n / (μ(c)·(1 − σⁿ)) instead of 1 / (μ(c) − λ). A request that
    finds every slot busy joins the instance with the fewest requests and waits for a slot *there*:
    with Q requests already waiting, spread evenly (join-the-shortest-queue keeps the queues within
    one), it is ⌊Q/n⌋ + 1 in line and departures at its instance come at μ(c)/n. With Q geometric
    of ratio σ (the chain's tail), E[⌊Q/n⌋ + 1] = 1 / (1 − σⁿ). One instance is the pooled queue
    exactly; in heavy traffic (σ → 1) the two agree; with light queues the wait is one of the
    instance's own departures, E[S]/s, not one of the pool's, E[S]/(n·s) — long for a long pool of
    few slots. Floats or arrays; a drain ≤ 0 (unstable) is returned as is."""
    xp = backend_of(drain_rate_per_s)
    drain = drain_rate_per_s if xp is FLOATS else np.asarray(drain_rate_per_s, dtype=np.float64)
    valid = (drain > 0) & xp.isfinite(drain)
    with xp.quiet():
        local, _ = local_slot_queue(xp.where(valid, drain, 1.0), arrival_rate_per_s, instances)
    return xp.where(valid, local, drain)


def local_slot_queue(drain_rate_per_s: Any, arrival_rate_per_s: float, instances: float) -> tuple[Any, Any]:
    """(μ_JSQ, σⁿ): the queue a request that waits for a slot joins behind a least-loaded router with
    a queue at every instance — its instance's share of the drain, μ_JSQ = (μ(c)/n)·(1 − σⁿ)
    (:func:`local_drain_rate_per_s`; the drain itself for one instance), and the chance σⁿ
    (σ = λ/μ(c)) that the line ahead of it is more than one departure long — from the chain's
    drain rate μ(c) − λ > 0 (floats or arrays).

    Source: join-the-shortest-queue keeps the instances' queues within one of each other, so with
    Q waiting (geometric of ratio σ, the chain's tail) a request is ⌊Q/n⌋ + 1 in line at its own
    instance (docs/math.md); checked against the request-level simulator's least-loaded dispatch,
    which it was not fitted to (tests/test_occupancy.py). Alternative: :func:`pooled_slot_queue`."""
    xp = backend_of(drain_rate_per_s)
    full = drain_rate_per_s + arrival_rate_per_s  # μ(c)
    sigma = xp.clip(arrival_rate_per_s / full, 0.0, 1.0)
    local = (
        full / instances * -xp.expm1(instances * xp.log_or_minus_inf(sigma))
        if instances > 1.0
        else drain_rate_per_s
    )
    return local, xp.power(sigma, max(instances, 1.0))


def pooled_slot_queue(drain_rate_per_s: Any, arrival_rate_per_s: float, instances: float) -> tuple[Any, Any]:
    """(μ(c) − λ, σ): one queue for the whole pool, drained by every slot (the M/G/c queue's, and
    the simplest alternative to :func:`local_slot_queue`)."""
    xp = backend_of(drain_rate_per_s)
    return drain_rate_per_s, xp.clip(arrival_rate_per_s / (drain_rate_per_s + arrival_rate_per_s), 0.0, 1.0)


def two_moment_on_build_up(variability: float, sigma_power: Any) -> Any:
    """1 + (v − 1)·σᵏ: the two-moment factor v = (C_a² + C_I²)/2 on the queue's build-up only, the
    E[⌊Q/k⌋] = σᵏ/(1 − σᵏ) places ahead of a waiting request (k: the queue's instances), not on
    the time to its instance's next departure.

    Source: Allen–Cunneen's factor (as in FleetOpt Eq. 6) placed by fleetopt (docs/math.md): with
    many slots busy the time to the next departure is close to exponential of rate μ(c)/n whatever
    the law of a residence (the minimum of many residual residences, each of density 1/E[S] at 0),
    so light queues wait n/μ(c) for any v and heavy traffic (σᵏ → 1) keeps v/μ. Against the
    request-level simulator's least-loaded dispatch with nearly deterministic residences (C_I² ≤
    0.08) the mean wait given a wait is within +1% to +7% at 19 slots per instance and up to 29%
    long at 4, where v on the whole wait is 9–33% short (tests/test_occupancy.py). Alternative:
    :func:`two_moment_on_whole_wait`."""
    return 1.0 + (variability - 1.0) * sigma_power


def two_moment_on_whole_wait(variability: float, sigma_power: Any) -> Any:
    """v: the two-moment factor on the whole wait given a wait (Kimura's form, as for M/G/c; the
    simplest alternative to :func:`two_moment_on_build_up`)."""
    return variability + 0.0 * sigma_power


def slot_wait_given_wait_s(
    drain_rate_per_s: Any,
    arrival_rate_per_s: float,
    instances: float,
    variability: float,
    queue: Callable[[Any, float, float], tuple[Any, Any]] = local_slot_queue,
    two_moment_factor: Callable[[float, Any], Any] = two_moment_on_build_up,
) -> Any:
    """Mean wait of a request that waits for a slot, seconds: the two-moment factor over the drain
    rate of the queue it joins,

        (1 + (v − 1)·σⁿ) / μ_JSQ,   v = (C_a² + C_I²)/2,

    by default (``queue`` :func:`local_slot_queue`: behind a least-loaded router with a queue at
    every instance, μ_JSQ = (μ(c)/n)·(1 − σⁿ), so 1/μ_JSQ = E[⌊Q/n⌋ + 1]·n/μ(c); ``two_moment_factor``
    :func:`two_moment_on_build_up`), σ = λ/μ(c), μ(c) = ``drain_rate_per_s`` + λ. Floats or arrays;
    ∞ where the drain is ≤ 0 (unstable)."""
    xp = backend_of(drain_rate_per_s)
    drain = drain_rate_per_s if xp is FLOATS else np.asarray(drain_rate_per_s, dtype=np.float64)
    stable = (drain > 0) & xp.isfinite(drain)
    safe = xp.where(stable, drain, 1.0)  # (an unstable point's value is replaced by ∞ below)
    rate, sigma_power = queue(safe, arrival_rate_per_s, instances)  # (rate > 0 at a safe drain)
    return xp.where(stable, two_moment_factor(variability, sigma_power) / rate, math.inf)


def widened_chain(r: Any, x: Any, variance_factor: float) -> tuple[Any, Any]:
    """(r', x') of the negative binomial with the mean of NB(r, x) and ``variance_factor`` = φ times
    its variance: mean m = r·x/(1 − x) and variance m/(1 − x), so 1 − x' = (1 − x)/φ and
    r' = m·(1 − x')/x'."""
    mean = r * x / (1.0 - x)
    wide_x = 1.0 - (1.0 - x) / variance_factor
    return mean * (1.0 - wide_x) / wide_x, wide_x


def prefill_stall_variance_factor(
    rate_per_instance_per_s: float, prompt_work_s: float, prompt_square_work_s2: float
) -> float:
    """φ = 1 + 2a + b, a = λ_i·τ·E[L_in] (the prompt share u), b = λ_i²·τ²·E[L_in²]: how much the
    prefill stalls widen the occupancy's variance over the chain's (1 when u is not in (0, 1) or
    τ²·E[L_in²] is not finite: no prompt statistics).

    The chain sees prompts only as a mean stretch of every iteration. In the engine a request's
    prefill, X = τ·L_in seconds of its instance's time, holds up every sequence decoding there at
    once, so each arrival delays the departures of the k ≈ λ_i·E[S] sequences in flight with it by
    X. As shot noise (Campbell's theorem) the arrival's own presence and the delays it causes add
    2θ·λ_i·E[X] + θ·λ_i²·E[X²] to the variance per unit of mean, θ = ∫F̄_S(y)²dy / E[S] ≤ 1 the
    overlap of the residual residences (1 for equal residences, ½ for exponential ones). We take
    the bound θ = 1, which matches the ``physical`` engine's excess variance (beyond what the chain
    misses without prompts) within 6% on pools with u ≤ 0.3 (docs/math.md, docs/validation.md); a
    pool's own θ leaves 12–31% of the excess out. λ_i per second; ``prompt_work_s`` = τ·E[L_in],
    seconds; ``prompt_square_work_s2`` = τ²·E[L_in²], seconds².

    Source: Campbell's theorem for shot noise with fleetopt's bound θ = 1 (docs/math.md), checked
    against the ``physical`` simulation's occupancy variance (tests/test_stalls.py). Alternative:
    :func:`no_stall_widening`."""
    share = rate_per_instance_per_s * prompt_work_s
    if not (0.0 < share < 1.0 and math.isfinite(prompt_square_work_s2)):
        return 1.0
    return 1.0 + 2.0 * share + rate_per_instance_per_s * rate_per_instance_per_s * prompt_square_work_s2


def no_stall_widening(
    rate_per_instance_per_s: float, prompt_work_s: float, prompt_square_work_s2: float
) -> float:
    """1: the chain's occupancy as it is, prompts only a mean stretch of every iteration (the
    simplest alternative to :func:`prefill_stall_variance_factor`)."""
    return 1.0


def negative_binomial_log_tail_bound(r: Any, x: Any, c: Any) -> Any:
    """Chernoff's bound on log P(K ≥ c) for K ~ NB(r, x) (pmf ∝ x^k·Γ(r + k)/k!), r > 0, 0 < x < 1,
    c > 0: r·log((1 − x)(r + c)/r) + c·log((r + c)·x/c), at the optimal e^θ = c/((r + c)·x); 0 (no
    bound) when c is not above the mean r·x/(1 − x). Floats or arrays."""
    xp = backend_of(c)
    bound = r * xp.log((1.0 - x) * (r + c) / r) + c * xp.log((r + c) * x / c)
    return xp.where(c * (1.0 - x) > r * x, bound, 0.0)


def occupancy_quantile(level: Any, r: Any, x: Any) -> Any:
    """The ``level``-quantile of NB(r, x) by the Cornish–Fisher expansion with its skewness:
    μ + σ·(z + (z² − 1)·γ₁/6), μ = r·x/(1 − x), σ = √(r·x)/(1 − x), γ₁ = (1 + x)/√(r·x), z = Φ⁻¹(level)
    (floats or arrays; at least 0). Used only for the occupancy an arrival finds, where a few
    sequences either way change the iteration time little; exact inversion (``nbdtrik``) costs
    40× more.
    """
    xp = backend_of(level)
    z = xp.ndtri(xp.clip(level, 1e-12, 1.0 - 1e-12))
    rx = r * x
    value = rx / (1.0 - x) + xp.sqrt(rx) / (1.0 - x) * (z + (z * z - 1.0) * (1.0 + x) / xp.sqrt(rx) / 6.0)
    return xp.maximum(0.0, value)
