"""What a least-loaded router does to one instance's intake: the share f of it that follows the
instance's own time, and the company φ a routed request's prefill has.

The TTFT law (:mod:`fleetopt.core.engine.ttft`) takes the intake of one instance as a share f that
follows the instance's own iteration lengths and a share 1 − f admitted at its iteration
boundaries; f = 1 is one instance, or random dispatch. Behind a least-loaded router f is

    f = f₁ + (1 − f₁)·e^{−m}·(1 − e^{−k₀})

(:func:`least_loaded_time_share`): a first-order share f₁ (:func:`least_loaded_first_order_share`)
and the share the router's blindness adds (:func:`router_blindness_share`). The intake of the
instance a request is routed to is φ times λ/n (:func:`least_loaded_intake_factor`). These terms
were chosen by comparison with the iteration-level simulation (docs/validation.md, which checks
them on workloads and profiles they were not chosen on, and gives what each is worth); each is a
field of :class:`fleetopt.core.engine.assumptions.EngineAssumptions`, with its simplest
alternative beside it here.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

from fleetopt.core.hardware import IterationCosts
from fleetopt.core.poolstats import PoolMoments


class RouterState(NamedTuple):
    """What the router terms need of a pool behind a least-loaded router (:func:`router_arguments`).

    Attributes:
        prompt_share: u = λ/n · τ·E[L_in], the share of an instance's time its prompts take.
        instances: n.
        pool_rate_per_s: λ, the pool's rate (∞: unknown).
        base_iteration_s: W, the iteration without decoding sequences, seconds.
        mean_iterations: E[I], the mean iterations per request.
        token_chunk_s: τ·ĉ, the compute of the chunk a prompt token is prefilled in (ĉ =
            E[Σ_m c_m²]/E[L_in], :attr:`fleetopt.core.engine.ttft.PromptLevels.token_biased_chunk_tokens`),
            seconds.
    """

    prompt_share: float
    instances: float
    pool_rate_per_s: float = math.inf
    base_iteration_s: float = 0.0
    mean_iterations: float = math.inf
    token_chunk_s: float = 0.0


def router_arguments(
    moments: PoolMoments,
    costs: IterationCosts,
    rate_per_instance_per_s: float,
    instances: float,
    prompt_work_s: float,
) -> RouterState:
    """The :class:`RouterState` of a pool behind a least-loaded router: u = λ/n · τ·E[L_in]
    (``prompt_work_s``), λ the pool's rate, W, E[I] and τ·ĉ (0 where the pool carries no prompt
    levels)."""
    levels = moments.prompt_levels
    chunk_tokens = levels.token_biased_chunk_tokens if levels is not None else 0.0
    return RouterState._make((
        rate_per_instance_per_s * prompt_work_s,
        instances,
        rate_per_instance_per_s * instances,
        costs.base_s,
        moments.mean_iterations,
        costs.per_prefill_token_s * chunk_tokens,
    ))  # fmt: skip


def router_view(router: RouterState) -> tuple[float, float] | None:
    """(m, k₀): pool arrivals per length-biased iteration, λ·(W/(1 − u) + u·τ·ĉ), and the fewest
    sequences in flight per instance by Little's law, (λ/n)·E[I]·W/(1 − u) (the shortest mean
    iteration W/(1 − u)); None without the pool's rate."""
    prompt_share, instances, pool_rate_per_s, base_iteration_s, mean_iterations, token_chunk_s = router
    if not (prompt_share < 1.0 and math.isfinite(pool_rate_per_s) and math.isfinite(mean_iterations)):
        return None
    iteration_s = base_iteration_s / (1.0 - prompt_share)
    biased_iteration_s = iteration_s + prompt_share * token_chunk_s
    return (
        pool_rate_per_s * biased_iteration_s,
        pool_rate_per_s / instances * mean_iterations * iteration_s,
    )


def least_loaded_first_order_share(prompt_share: float, instances: float) -> float:
    """f₁ = 1 − (1 − 1/n)^b, b = max(1, u/(1 − u)): the first-order share of an instance's intake
    that follows its own time behind a least-loaded router over n instances (n > 1; 1 otherwise).

    To first order a least-loaded router keeps every instance at the pool's occupancy over n, so
    only the pool's arrival fluctuations, shared n ways, follow one instance's time: f = 1/n (and
    f = 1 for one instance, exact). When prompts take most of an instance's time the router can
    no longer even out the bursts a long prompt iteration sets off: b = u/(1 − u) of them, the mean
    number of further prompt iterations one sets off in the branching structure of
    :mod:`fleetopt.core.engine.ttft`. Each lands on a given instance with chance 1/n, and the share
    is the chance that at least one does, 1 − (1 − 1/n)^b: b/n while b ≪ n, tending to 1 smoothly
    where a cut at min(1, b/n) overstated it (u ≥ 0.75 in pools of 7 to 14 instances, f₁ 0.45–0.62
    against 0.38–0.45 fitted to the simulated P99).

    Source: fleetopt's derivation (docs/math.md, "the least-loaded intake share"); the burst count
    b chosen by comparison with the ``physical`` simulation (docs/validation.md; the change from
    min(1, b/n) checked on the fresh-11 set). Alternative: :func:`even_first_order_share`."""
    branching = max(1.0, prompt_share / (1.0 - prompt_share)) if prompt_share < 1.0 else math.inf
    return -math.expm1(branching * math.log1p(-1.0 / instances)) if instances > 1.0 else 1.0


def even_first_order_share(prompt_share: float, instances: float) -> float:
    """f₁ = 1/n: the pool's arrival fluctuations shared n ways, with no bursts from long prompt
    iterations (the simplest alternative to :func:`least_loaded_first_order_share`; 1 for one
    instance)."""
    return 1.0 / instances if instances > 1.0 else 1.0


def router_blindness_share(first_order: float, seen: float, in_flight: float) -> float:
    """(1 − f₁)·e^{−m}·(1 − e^{−k₀}): the share of an instance's intake that follows its own time
    because the router cannot tell which instance is in a long prompt iteration (m = ``seen`` pool
    arrivals per length-biased iteration, k₀ = ``in_flight`` sequences per instance, :func:`router_view`).

    The router can only even out an instance's intake with the arrivals it sees: with m ≪ 1 pool
    arrivals per iteration an arrival finds the instances at random phases of their iterations,
    and when each holds several sequences (k₀ ≫ 1) their counts do not tell which one is in a long
    prompt iteration: the intake follows each one's time as under random dispatch. e^{−m}·(1 −
    e^{−k₀}) moves f towards 1 then; an idle pool (k₀ ≪ 1) keeps f₁, since the router sends an
    arrival to an idle instance, not the one busy with a prompt. The intake that follows an
    instance's time falls into its iterations in proportion to their length, so m counts the
    pool's arrivals over the length-biased iteration, E[t²]/E[t] = t̄ + Var(t)/t̄ with t̄ = W/(1 − u)
    and, to first order, Var(t)/t̄ = u·τ·ĉ.

    Source: fleetopt's interpolation (docs/math.md), chosen by comparison with the ``physical``
    simulation (docs/validation.md); not a derivation. Alternative: :func:`no_router_blindness`."""
    return (1.0 - first_order) * math.exp(-seen) * -math.expm1(-in_flight)


def no_router_blindness(first_order: float, seen: float, in_flight: float) -> float:
    """0: the router evens out every instance's intake whatever it sees (the simplest alternative
    to :func:`router_blindness_share`)."""
    return 0.0


def least_loaded_time_share(
    router: RouterState,
    *,
    first_order: Callable[[float, float], float] = least_loaded_first_order_share,
    blindness: Callable[[float, float, float], float] = router_blindness_share,
) -> float:
    """f: the share of an instance's intake that follows its own iteration lengths behind a
    least-loaded router over n instances:

        f = f₁ + (1 − f₁)·e^{−m}·(1 − e^{−k₀}),   f₁ = 1 − (1 − 1/n)^b,   b = max(1, u/(1 − u)),
        m = λ·(W / (1 − u) + u·τ·ĉ),   k₀ = (λ/n)·E[I]·W / (1 − u),

    (``router``: u, n, λ, W, E[I], τ·ĉ): ``first_order`` gives f₁
    (:func:`least_loaded_first_order_share`), ``blindness`` the share the router's blindness adds
    (:func:`router_blindness_share`, where the pool's rate is known); at most 1, and 1 below one
    instance."""
    prompt_share, instances = router[0], router[1]
    if not instances >= 1.0:
        return 1.0
    share = first_order(prompt_share, instances)
    view = router_view(router)
    if view is not None:
        share += blindness(share, *view)
    return min(1.0, share)


def least_loaded_intake_factor(router: RouterState) -> float:
    """φ: the intake of the instance a request is routed to, relative to λ/n, behind a least-loaded
    router over n instances:

        φ = min(1, n·(1 − e^{−k₀})^{n−1}),   k₀ = (λ/n)·E[I]·W / (1 − u)

    (``router``: u, n, λ, W, E[I], τ·ĉ). The router sends a request to an instance holding the
    fewest sequences, and a later arrival joins that instance (now holding one more) only when every
    other instance holds at least one: with the others' counts Poisson with mean k₀, that is
    (1 − e^{−k₀})^{n−1} of the arrivals instead of 1/n. A busy pool (k₀ ≫ 1) keeps φ = 1; a nearly
    idle one (k₀ ≪ 1) sends a request's prefill almost no company. One instance: 1.

    Source: fleetopt's derivation (docs/math.md, "the company of a routed request"), adopted after
    the ``physical`` simulation sized a nearly idle long pool at 2 instances where the model without
    it said 7 (tests/test_occupancy.py). Alternative: :func:`no_company_factor`."""
    view = router_view(router)
    n = router.instances
    if not n > 1.0 or view is None:
        return 1.0
    return min(1.0, n * (-math.expm1(-view[1])) ** (n - 1.0))


def no_company_factor(router: RouterState) -> float:
    """φ = 1: a routed request's prefill has the company of λ/n arrivals per second whatever the
    router does (the simplest alternative to :func:`least_loaded_intake_factor`)."""
    return 1.0
