"""The occupancy chain of the ``engine`` model against a brute-force birth–death chain in mpmath,
and the engine sizing's promises (every plan meets its SLO and caps under its own model, and is
minimal)."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetopt.core.engine.model import ENGINE
from fleetopt.core.engine.occupancy import (
    local_drain_rate_per_s,
    occupancy_state,
    slot_wait_given_wait_s,
)
from fleetopt.core.poolstats import PoolStatistics
from fleetopt.core.routing import Routing
from fleetopt.core.service import PoolHardware, PoolTargets
from fleetopt.core.simulate import SimulatedPool, simulate_fleet
from fleetopt.core.sizing import evaluate_pool, size_pool
from fleetopt.core.workload import workload_from_requests


def _brute_force_chain(rate, instances, slots, mean_iterations, base_s, per_sequence_s, tail=4000):
    """π(k) of the birth–death chain with μ(k) = min(k, c) / (E[I]·(W + c₁·min(k, c)/n)), summed
    state by state at 50 digits (the tail is truncated where it is far below 1e-40)."""
    mpmath.mp.dps = 50
    c = instances * slots
    weights = [mpmath.mpf(1)]
    for k in range(1, c + tail):
        busy = min(k, c)
        mu = mpmath.mpf(busy) / (mean_iterations * (base_s + per_sequence_s * mpmath.mpf(busy) / instances))
        weights.append(weights[-1] * rate / mu)
    total = mpmath.fsum(weights)
    p_wait = mpmath.fsum(weights[c:]) / total
    mean_busy = mpmath.fsum(min(k, c) * w for k, w in enumerate(weights)) / total
    return float(p_wait), float(mean_busy)


@pytest.mark.parametrize(
    ("rate", "instances", "slots", "mean_iterations", "base_s", "per_sequence_s"),
    [
        (5.0, 2, 8, 50.0, 0.008, 0.002),  # σ = 0.375
        (12.0, 3, 10, 40.0, 0.01, 0.004),  # σ = 0.8: waits common
        (0.8, 1, 4, 30.0, 0.02, 0.03),  # one instance, slow slots, σ = 0.84
        (70.0, 10, 16, 100.0, 0.008, 0.00065),  # 160 servers, σ = 0.805
    ],
)
def test_chain_matches_brute_force_at_50_digits(
    rate, instances, slots, mean_iterations, base_s, per_sequence_s
):
    expected_wait, expected_busy = _brute_force_chain(
        rate, instances, slots, mean_iterations, base_s, per_sequence_s
    )
    # the float path (one slot count) and the array path (a sweep over slot counts)
    state = occupancy_state(rate, instances, np.array([1.0, slots]), mean_iterations, base_s, per_sequence_s)
    assert bool(state.stable[1])
    assert float(state.p_wait[1]) == pytest.approx(expected_wait, rel=1e-9, abs=1e-300)
    assert float(state.mean_busy[1]) == pytest.approx(expected_busy, rel=1e-9)
    one = occupancy_state(rate, instances, slots, mean_iterations, base_s, per_sequence_s)
    assert one.stable and one.p_wait == pytest.approx(expected_wait, rel=1e-9, abs=1e-300)
    assert one.mean_busy == pytest.approx(expected_busy, rel=1e-9)


def test_unstable_pool_always_waits() -> None:
    """σ = λ·E[I]·t(s)/c ≥ 1: the queue grows without bound; P(wait) = 1 and the wait is infinite."""
    for slots in (4.0, np.array([4.0, 5.0])):  # σ = 100·50·0.05/4 = 62.5
        state = occupancy_state(100.0, 1, slots, 50.0, 0.01, 0.01)
        assert not np.any(state.stable) and np.all(state.p_wait == 1.0)
        assert np.all(np.isinf(slot_wait_given_wait_s(state.drain_rate_per_s, 100.0, 1.0, 1.0)))


@settings(max_examples=60, deadline=None)
@given(
    rate=st.floats(0.5, 300.0),
    instances=st.integers(1, 40),
    slots=st.integers(1, 64),
    mean_iterations=st.floats(5.0, 500.0),
    base_s=st.floats(0.001, 0.05),
    per_sequence_s=st.floats(1e-5, 0.01),
)
def test_wait_probability_is_a_probability_and_falls_with_instances(
    rate, instances, slots, mean_iterations, base_s, per_sequence_s
) -> None:
    args = (mean_iterations, base_s, per_sequence_s)
    here = occupancy_state(rate, instances, slots, *args)
    more = occupancy_state(rate, instances + 1, slots, *args)
    p, p_more = float(here.p_wait), float(more.p_wait)
    assert 0.0 <= p <= 1.0 and 0.0 <= p_more <= 1.0
    assert p_more <= p + 1e-12
    if bool(here.stable):
        assert 0.0 <= float(here.mean_busy) <= instances * slots * (1 + 1e-12)


def _workload():
    rng = np.random.default_rng(7)
    inputs = rng.integers(10, 3000, 2000)
    outputs = rng.integers(1, 600, 2000)
    return workload_from_requests(inputs, outputs, name="synthetic")


def _all_requests():
    """The moments of a pool taking every request of :func:`_workload` (512-token chunks, P99)."""
    return PoolStatistics(_workload(), 512, prompt_levels=True).range_moments(
        -1, math.inf, 0.99, prompt_levels=True
    )


def _hardware(**changes) -> PoolHardware:
    values = dict(
        serving_name="test", model_name="m", gpu_name="g", gpus_per_instance=8, gpu_hour_usd=2.0,
        iteration_base_s=0.008, iteration_per_slot_s=0.00065, prefill_chunk_tokens=512,
        calibration_context_tokens=8192, kv_capacity_tokens=400_000, kv_block_tokens=16,
        prefill_per_token_s=5e-5,
    )  # fmt: skip
    values.update(changes)
    return PoolHardware(**values)


@settings(max_examples=25, deadline=None)
@given(
    rate=st.floats(1.0, 2000.0),
    slo_s=st.floats(0.3, 4.0),
    cap=st.floats(0.5, 0.95),
    context=st.sampled_from([4096, 8192, 16384]),
    hint=st.integers(1, 300),
)
def test_engine_sizing_meets_its_targets_and_is_minimal(rate, slo_s, cap, context, hint) -> None:
    """Every engine pool meets SLO and caps under its own model, and with one instance fewer no
    slot count would (fewest instances first); a hint of the answer (the planner passes the last
    similar pool's) changes nothing."""
    hardware = _hardware()
    moments = _all_requests()
    arguments = dict(
        arrival_rate_per_s=rate, moments=moments, hardware=hardware, context_tokens=context,
        service_model="engine", ttft_slo_s=slo_s, max_utilization=cap,
    )  # fmt: skip
    pool = size_pool(**arguments)
    assert repr(size_pool(**arguments, instances_hint=hint)) == repr(pool)
    if pool.feasible:
        for near in (pool.instances - 1, pool.instances, pool.instances + 1):
            assert repr(size_pool(**arguments, instances_hint=max(1, near))) == repr(pool)
    if not pool.feasible:
        assert pool.problems
        return
    assert pool.p99_ttft_s <= slo_s and pool.utilization <= cap and pool.compute_utilization <= cap
    again = evaluate_pool(
        arrival_rate_per_s=rate, moments=moments, hardware=hardware, context_tokens=context,
        service_model="engine", instances=pool.instances, slots_per_instance=pool.slots_per_instance,
        ttft_slo_s=slo_s, max_utilization=cap,
    )  # fmt: skip
    assert again.feasible and again.p99_ttft_s == pytest.approx(pool.p99_ttft_s, rel=1e-12)
    queue = ENGINE.pool_queue(rate, moments, hardware, context, PoolTargets(slo_s, cap))
    all_slots = np.arange(1.0, pool.kv_slot_limit + 1.0)
    if pool.instances > 1:
        assert not queue.point(float(pool.instances - 1), all_slots).ok.any()
    # the scalar and the array evaluations agree point by point
    ok = queue.point(float(pool.instances), all_slots).ok
    scalar = [queue.passes(pool.instances, int(s))[0] for s in all_slots[:: max(1, all_slots.size // 40)]]
    assert list(ok[:: max(1, all_slots.size // 40)]) == scalar
    assert pool.slots_per_instance == int(all_slots[np.flatnonzero(ok)[-1]])


def test_a_pools_quantiles_are_computed_when_read_and_are_its_laws() -> None:
    """An engine pool's P99 TTFT and P99 prefill are deferred (a sweep reads few of them): read, they
    are the quantiles of its TTFT law (with the slot wait and T0, and without); copies, pickles and
    ``dataclasses.replace`` give the same numbers."""
    import copy
    import pickle
    from dataclasses import replace

    from fleetopt.core.sizing import Deferred

    hardware = _hardware()
    moments = _all_requests()
    arguments = dict(
        arrival_rate_per_s=400.0, moments=moments, hardware=hardware, context_tokens=8192,
        service_model="engine", ttft_slo_s=1.0,
    )  # fmt: skip
    pool = size_pool(**arguments)
    assert pool.feasible and pool.instances > 1
    assert isinstance(pool.__dict__["_deferred_p99_ttft_s"], Deferred)
    queue = ENGINE.pool_queue(400.0, moments, hardware, 8192, PoolTargets(1.0, 0.85))
    law = queue.law_at(pool.instances, pool.slots_per_instance)
    pickled = pickle.loads(pickle.dumps(size_pool(**arguments)))
    moved = replace(size_pool(**arguments))
    copied = copy.deepcopy(size_pool(**arguments))
    ttft, prefill = (
        law.quantile_s(0.99),
        law.without_wait_and_overhead(hardware.ttft_overhead_s).quantile_s(0.99),
    )
    assert pool.p99_ttft_s == ttft and pool.p99_prefill_s == prefill
    assert (
        isinstance(pool.p99_ttft_s, float) and 0 < pool.p99_prefill_s <= pool.p99_ttft_s * (1 + 1e-12) <= 1.0
    )
    for other in (pickled, moved, copied):
        assert (other.p99_ttft_s, other.p99_prefill_s) == (ttft, prefill) and other == pool


def test_prompt_compute_floor_makes_a_pool_infeasible_with_that_reason() -> None:
    """τ from the floor 2·N/F: 70.6e9 parameters on 8 × 312 TFLOP/s → 56.6 µs per prompt token; a
    pool of 3,000-token prompts cannot reach a 100 ms TTFT however many instances it has."""
    hardware = _hardware(prefill_per_token_s=0.0, parameters_active=70.6e9, peak_flops_per_s=8 * 312e12)
    moments = _all_requests()
    pool = size_pool(
        arrival_rate_per_s=10.0, moments=moments, hardware=hardware, context_tokens=8192,
        service_model="engine", ttft_slo_s=0.1,
    )  # fmt: skip
    assert not pool.feasible
    (problem,) = pool.problems
    assert problem.kind.value == "compute_floor" and problem.value > 0.1


def test_an_idle_pools_ttft_does_not_fall_with_more_instances() -> None:
    """A nearly idle pool of long prompts behind a least-loaded router: a request lands on an idle
    instance and a later one goes to another idle instance, so from n = 3 on the P99 TTFT is that
    of a request alone (the intake factor φ). Without φ the model gave such a pool company at λ/n
    whatever the router does: +5% at n = 3 here, and the FRESH azure-2023 TP4 long pool of
    benchmarks/validate_engine.py was sized at 7 instances against 2 in simulation."""
    rng = np.random.default_rng(3)
    prompts, outputs = rng.integers(8000, 30000, 2000), rng.integers(50, 600, 2000)
    workload = workload_from_requests(prompts, outputs, name="long")
    hardware = _hardware(prefill_per_token_s=3e-5, prefill_chunk_tokens=8192, kv_capacity_tokens=2_000_000)
    moments = PoolStatistics(workload, 8192, prompt_levels=True).range_moments(
        -1, math.inf, 0.99, prompt_levels=True
    )

    def p99(rate: float, instances: int) -> float:
        return evaluate_pool(
            arrival_rate_per_s=rate, moments=moments, hardware=hardware, context_tokens=32768,
            service_model="engine", instances=instances, slots_per_instance=8, ttft_slo_s=5.0,
        ).p99_ttft_s  # fmt: skip

    alone = p99(1e-6, 2)
    by_instances = [p99(0.05, n) for n in (1, 2, 3, 5, 8)]
    assert by_instances == sorted(by_instances, reverse=True)
    assert by_instances[0] > 1.2 * alone  # one instance takes every arrival (φ = 1)
    for value in by_instances[2:]:
        assert value == pytest.approx(alone, rel=1e-3)


@pytest.mark.slow
@pytest.mark.parametrize(("instances", "slots"), [(4, 4), (8, 4), (2, 8)])
def test_local_drain_rate_matches_a_least_loaded_simulation(instances, slots) -> None:
    """The wait given a wait behind a least-loaded router with a queue at every instance (the
    request-level simulator's ``least-loaded`` dispatch, which the formula was not fitted to):
    mean n / (μ(c)·(1 − σⁿ)) against the pooled queue's 1 / (μ(c) − λ). Service ≈ exponential
    (geometric output lengths, lockstep iterations; v = 1), utilization ≈ 0.85."""
    rng = np.random.default_rng(1)
    outputs = rng.geometric(1 / 200, 100_000)
    pooled_sim, local_sim, full_rate, rate = _conditional_waits(outputs, instances, slots, 0.85)
    pooled_formula = 1.0 / (full_rate - rate)
    local_formula = 1.0 / local_drain_rate_per_s(full_rate - rate, rate, instances)
    assert pooled_sim == pytest.approx(pooled_formula, rel=0.12)  # the measurement is sound
    assert local_sim == pytest.approx(local_formula, rel=0.12)
    assert local_formula >= pooled_formula
    # v = 1: the two-moment factor on the queue's build-up changes nothing
    assert slot_wait_given_wait_s(full_rate - rate, rate, instances, 1.0) == pytest.approx(local_formula)
    if instances >= 4:  # where it matters, the pooled queue is far off the least-loaded one
        assert local_sim > 1.2 * pooled_formula


def _conditional_waits(outputs, instances, slots, utilization):
    """(pooled, least-loaded) mean wait given a wait in the request-level simulator (lockstep,
    W = 10 ms per iteration, 100-token prompts), μ(c) and λ."""
    workload = workload_from_requests(np.full(outputs.size, 100), outputs, name="outputs")
    pool = SimulatedPool("pool", instances, slots, 8192, 0.01, 0.0, 512, 8192)
    servers = instances * slots
    rate = utilization * servers / (float(outputs.mean()) * 0.01)

    def conditional_wait(dispatch: str):
        result = simulate_fleet(
            workload, [pool], Routing.homogeneous(), arrival_rate_per_s=rate, service_model="lockstep",
            dispatch=dispatch, requests=150_000, seeds=(1, 2, 3),
        ).pools[0]  # fmt: skip
        return result.wait_mean_s.mean / result.wait_probability.mean, result.utilization.mean

    pooled_sim, measured = conditional_wait("pooled")
    local_sim, _ = conditional_wait("least-loaded")
    full_rate = servers / (measured * servers / rate)  # μ(c) = c / E[S], E[S] from the simulation
    return pooled_sim, local_sim, full_rate, rate


@pytest.mark.parametrize(("instances", "slots", "utilization"), [(3, 19, 0.75), (3, 19, 0.9)])
def test_wait_given_a_wait_keeps_the_two_moment_factor_off_the_first_departure(
    instances, slots, utilization
) -> None:
    """Nearly deterministic residences (outputs uniform on 100–300 tokens, C_I² = 0.08), 19 slots
    per instance: the simulated mean wait of a waiting request is (1 + (v − 1)·σⁿ)/μ_JSQ within
    10% (measured +1% and +2%), where v/μ_JSQ, the factor on the whole wait, is 17–32% short: the
    time to the instance's next departure does not shrink with C_I²."""
    rng = np.random.default_rng(1)
    outputs = rng.integers(100, 301, 100_000)
    variability = 0.5 * (1.0 + outputs.var() / outputs.mean() ** 2)
    _, local_sim, full_rate, rate = _conditional_waits(outputs, instances, slots, utilization)
    formula = slot_wait_given_wait_s(full_rate - rate, rate, instances, variability)
    assert local_sim == pytest.approx(formula, rel=0.10)
    factor_on_all = variability / local_drain_rate_per_s(full_rate - rate, rate, instances)
    assert factor_on_all < 0.85 * local_sim


def test_wait_given_a_wait_limits() -> None:
    """(1 + (v − 1)·σⁿ)/μ_JSQ: light queues wait n/μ(c) whatever v, heavy traffic v/μ_JSQ, v = 1 the
    local drain's own mean; ∞ when unstable; the float path and the array path agree."""
    full = 100.0
    assert slot_wait_given_wait_s(full - 1e-3, 1e-3, 8.0, 0.3) == pytest.approx(8.0 / full, rel=1e-9)
    assert slot_wait_given_wait_s(full - 1e-3, 1e-3, 8.0, 3.0) == pytest.approx(8.0 / full, rel=1e-9)
    heavy = local_drain_rate_per_s(full - 99.99, 99.99, 8.0)  # σⁿ = 0.9992
    assert slot_wait_given_wait_s(full - 99.99, 99.99, 8.0, 0.3) == pytest.approx(0.3 / heavy, rel=5e-3)
    unit = 1.0 / local_drain_rate_per_s(2.0, 10.0, 4.0)
    assert slot_wait_given_wait_s(2.0, 10.0, 4.0, 1.0) == pytest.approx(unit, rel=1e-12)
    assert slot_wait_given_wait_s(-1.0, 10.0, 4.0, 1.0) == math.inf
    cases = [(2.0, 10.0, 1.0, 0.75), (0.5, 50.0, 4.0, 1.5), (99.9, 0.1, 16.0, 0.2), (5.0, 0.0, 4.0, 3.0)]
    for drain, rate, n, v in cases:
        scalar = slot_wait_given_wait_s(drain, rate, n, v)
        array = float(slot_wait_given_wait_s(np.array([drain]), rate, n, v)[0])
        assert scalar == pytest.approx(array, rel=1e-14)


def test_local_drain_rate_limits() -> None:
    """One instance is the pooled queue; heavy traffic agrees with it; light queues wait for one
    of the instance's own departures (rate μ(c)/n)."""
    assert local_drain_rate_per_s(2.0, 10.0, 1.0) == pytest.approx(2.0)
    full = 100.0
    assert local_drain_rate_per_s(full - 99.99, 99.99, 8.0) == pytest.approx(full - 99.99, rel=1e-3)
    assert local_drain_rate_per_s(full - 1e-3, 1e-3, 8.0) == pytest.approx(full / 8.0, rel=1e-9)
    assert local_drain_rate_per_s(-1.0, 10.0, 8.0) == -1.0  # unstable: as given
    drains = local_drain_rate_per_s(np.array([10.0, 50.0]), 50.0, 4.0)
    assert drains.shape == (2,) and np.all(drains <= np.array([10.0, 50.0]))
    for drain, rate, n in [(2.0, 10.0, 3.0), (5.0, 50.0, 4.0), (99.9, 0.1, 16.0), (5.0, 0.0, 4.0)]:
        scalar = local_drain_rate_per_s(drain, rate, n)  # the float path sizing uses
        array = float(local_drain_rate_per_s(np.array([drain]), rate, n)[0])
        assert scalar == pytest.approx(array, rel=1e-14)
