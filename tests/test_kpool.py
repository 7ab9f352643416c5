"""K-pool routing: the Routing object, the service-model seam, and the exact K-pool sweep.

Independent truths: hand-routed requests, pool shares summed atom by atom, brute force over
every boundary pair and γ, and the planner's own guarantee (every pool meets its SLO and cap).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fleetopt.core.planner import Planner, PlanOptions
from fleetopt.core.routing import Routing, pool_names
from fleetopt.core.service import (
    SERVICE_MODEL_REGISTRY,
    SERVICE_MODELS,
    PoolHardware,
    ServiceModel,
    get_service_model,
)
from fleetopt.core.sizing import evaluate_pool
from fleetopt.core.workload import workload_from_requests
from fleetopt.errors import ValidationError

# A small instance (KV limit ≤ 24 slots at 4K) so that sizing is cheap.
SMALL = PoolHardware(
    serving_name="small", model_name="m", gpu_name="g", gpus_per_instance=2, gpu_hour_usd=1.0,
    iteration_base_s=0.01, iteration_per_slot_s=0.002, prefill_chunk_tokens=256,
    calibration_context_tokens=4096, kv_capacity_tokens=24 * 4096, kv_block_tokens=16,
)  # fmt: skip
# The long pool on a dearer GPU, so that the pools differ in price as well as in context.
SMALL_LONG = PoolHardware(
    serving_name="small-long", model_name="m", gpu_name="g2", gpus_per_instance=4, gpu_hour_usd=1.5,
    iteration_base_s=0.008, iteration_per_slot_s=0.0015, prefill_chunk_tokens=512,
    calibration_context_tokens=4096, kv_capacity_tokens=40 * 4096, kv_block_tokens=16,
)  # fmt: skip


# -- Routing --------------------------------------------------------------------------------
def test_route_sends_each_request_to_the_pool_its_total_selects_and_compresses_the_band() -> None:
    routing = Routing((100, 300, 1000), gamma=2.0, compressibility=0.5, max_cut_fraction=1.0)  # papers' rule
    totals = np.array([50, 100, 101, 150, 150, 150, 250, 300, 301, 1000, 1001])
    outputs = np.array([10, 10, 10, 20, 20, 120, 10, 10, 10, 10, 10])
    inputs = totals - outputs
    coin = np.array([0.9, 0.9, 0.1, 0.4, 0.6, 0.1, 0.9, 0.1, 0.1, 0.1, 0.1])
    index, new_inputs, new_totals = routing.route(totals, inputs, outputs, coin)
    # 101: in the band (≤ 200), coin 0.1 < 0.5 → compressed to total 100 in pool 0.
    # 150/20, coin 0.4 → compressed; coin 0.6 → not, pool 1; 150 with L_out = 120 ≥ 100 → never.
    # 250 > γB₁ = 200: pool 1 at its own length, whatever the coin.
    assert index.tolist() == [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 3]
    assert new_totals.tolist() == [50, 100, 100, 100, 150, 150, 250, 300, 301, 1000, 1001]
    assert new_inputs.tolist() == [40, 90, 90, 80, 130, 30, 240, 290, 291, 990, 991]


def test_the_cap_compresses_only_requests_whose_cut_is_within_it() -> None:
    routing = Routing((100, 300), gamma=2.0, compressibility=1.0, max_cut_fraction=0.2)
    totals, outputs = np.array([110, 120, 126, 130]), np.array([10, 0, 0, 40])
    # cuts 10/100 = 10%, 20/120 = 16.7%, 26/126 = 20.6% (over), 30/90 = 33% (over)
    index, new_inputs, _ = routing.route(totals, totals - outputs, outputs, np.zeros(4))
    assert index.tolist() == [0, 0, 1, 1]
    assert new_inputs.tolist() == [90, 100, 126, 90]
    with pytest.raises(ValidationError, match="max cut"):
        Routing((100,), 1.5, 1.0, 0.0)


def test_routing_refuses_unordered_boundaries_and_a_band_past_the_second_pool() -> None:
    with pytest.raises(ValidationError, match=r"pool boundaries: \[300, 100\] must be increasing"):
        Routing((300, 100))
    with pytest.raises(ValidationError, match=r"must end within the second pool \(≤ B₂ = 150\)"):
        Routing((100, 150), gamma=2.0)
    with pytest.raises(ValidationError, match="gamma: 0.5 must be ≥ 1"):
        Routing((100,), gamma=0.5)


def test_pool_names_keep_short_and_long_for_two_pools() -> None:
    assert pool_names(1) == ("homogeneous",)
    assert pool_names(2) == ("short", "long")
    assert pool_names(4) == ("pool-1", "pool-2", "pool-3", "pool-4")
    assert Routing((512, 4096)).context_tokens(65_536) == (512, 4096, 65_536)


# -- the service-model seam -------------------------------------------------------------------
def test_registry_names_every_model_and_refuses_others_by_name() -> None:
    assert SERVICE_MODELS == ("engine", "lockstep", "fleet-sim")
    for name, model in SERVICE_MODEL_REGISTRY.items():
        assert isinstance(model, ServiceModel) and model.name == name
        assert get_service_model(name) is model and get_service_model(model) is model
    with pytest.raises(ValidationError) as error:
        get_service_model("physical")
    assert str(error.value) == "service model: 'physical' is not one of engine, lockstep, fleet-sim"
    with pytest.raises(ValidationError, match="service model: 'nope'"):
        PlanOptions(sizing_rate_per_s=1.0, ttft_slo_s=1.0, service_model="nope").validate()


def _hand_shares(pairs, routing: Routing, chunk: int):
    """Each pool's request share and E[I] (I = ⌈L_in/chunk⌉ + L_out), summed request by request."""
    weight = np.zeros(routing.pool_count)
    iterations = np.zeros(routing.pool_count)
    b = routing.b_short_tokens
    for l_in, l_out in pairs:
        total = l_in + l_out
        own = int(np.searchsorted(routing.boundaries_tokens, total, side="left"))
        parts = [(own, 1.0, l_in)]
        # the C&R band, compressible: L_out < B and the cut L − B at most the cap's share of L_in
        if b < total <= routing.gamma * b and l_out < b and total - b <= routing.max_cut_fraction * l_in:
            p_c = routing.compressibility
            parts = [(0, p_c, b - l_out), (own, 1.0 - p_c, l_in)]
        for pool, share, prompt in parts:
            weight[pool] += share
            iterations[pool] += share * (math.ceil(prompt / chunk) + l_out)
    n = len(pairs)
    return weight / n, np.divide(iterations, weight, out=np.full_like(weight, np.nan), where=weight > 0)


pairs_strategy = st.lists(st.tuples(st.integers(1, 5000), st.integers(1, 300)), min_size=4, max_size=40)


@settings(max_examples=30, deadline=None)
@given(
    pairs_strategy,
    st.sampled_from([1.0, 1.5, 2.0]),
    st.sampled_from([0.0, 0.4, 1.0]),
    st.sampled_from([0.1, 0.2, 0.5, 1.0]),
)
def test_lockstep_pool_shares_of_three_pools_match_a_request_by_request_sum(pairs, gamma, p_c, cut) -> None:
    inputs, outputs = np.array(pairs).T
    workload = workload_from_requests(inputs, outputs, name="random")
    options = PlanOptions(
        sizing_rate_per_s=10.0,
        ttft_slo_s=1.0,
        long_context_tokens=8192,
        compressibility=p_c,
        max_cut_fraction=cut,
    )
    planner = Planner(workload, (SMALL,), options)
    routing = Routing((1000, 2000, 4000), gamma, p_c, cut)
    fractions, mean_iterations = _hand_shares(pairs, routing, SMALL.prefill_chunk_tokens)
    shares = [planner.pool_share(routing, k) for k in range(4)]
    assert [s.traffic_fraction for s in shares] == pytest.approx(fractions.tolist(), abs=1e-12)
    for share, expected in zip(shares, mean_iterations, strict=True):
        if share.traffic_fraction > 0:
            assert share.moments.mean_iterations == pytest.approx(expected, rel=1e-12)
    rates = [rate for rate, _ in planner.pool_traffic(routing)]
    assert sum(rates) == pytest.approx(10.0, rel=1e-12)


# -- the exact K-pool sweep ---------------------------------------------------------------------
def _brute_force_three_pools(planner: Planner, candidates, gammas):
    """The cheapest feasible 3-pool fleet over every boundary pair and γ, by enumeration."""
    best = None
    for i, b1 in enumerate(candidates):
        for b2 in candidates[i + 1 :]:
            for gamma in gammas:
                if math.floor(gamma * b1) > b2:
                    continue
                fleet = planner.fleet(Routing((b1, b2), gamma, planner.options.compressibility))
                if fleet.feasible and (
                    best is None or fleet.cost_per_hour_usd < best.cost_per_hour_usd - 1e-9
                ):
                    best = fleet
    return best


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pairs_strategy,
    st.floats(0.2, 2.0),
    st.floats(0.5, 200.0),
    st.sampled_from(["lockstep", "fleet-sim"]),
    st.sampled_from([0.0, 0.7, 1.0]),
)
def test_three_pool_sweep_equals_brute_force_over_every_boundary_pair(pairs, slo_s, rate, model, p_c) -> None:
    inputs, outputs = np.array(pairs).T
    workload = workload_from_requests(inputs, outputs, name="random")
    candidates = (512, 1024, 2048, 3072, 4096)
    gammas = (1.0, 1.5, 2.0)
    options = PlanOptions(
        sizing_rate_per_s=rate, ttft_slo_s=slo_s, long_context_tokens=8192, b_short_candidates=candidates,
        gammas=gammas, compressibility=p_c, service_model=model, max_pools=3,
    )  # fmt: skip
    planner = Planner(workload, (SMALL, SMALL_LONG), options)
    plan = planner.plan()
    found = plan.best_by_pool_count[2]
    expected = _brute_force_three_pools(Planner(workload, (SMALL, SMALL_LONG), options), candidates, gammas)
    if expected is None:
        assert found is None
    else:
        assert found is not None and found.pool_count == 3
        assert found.cost_per_hour_usd == pytest.approx(expected.cost_per_hour_usd, rel=1e-12)
    # at most K pools: never dearer than the best two-pool fleet, nor than the homogeneous one
    two = [c for c in (plan.best_by_pool_count[0], plan.best_by_pool_count[1]) if c is not None]
    if two:
        assert plan.best is not None
        assert plan.best.cost_per_hour_usd <= min(c.cost_per_hour_usd for c in two) + 1e-9


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pairs_strategy,
    st.floats(0.2, 2.0),
    st.floats(0.5, 200.0),
    st.sampled_from([0.0, 1.0]),
    st.sampled_from(["engine", "lockstep"]),
)
def test_every_pool_of_a_k_pool_plan_meets_its_slo_and_cap(pairs, slo_s, rate, p_c, model) -> None:
    inputs, outputs = np.array(pairs).T
    workload = workload_from_requests(inputs, outputs, name="random")
    options = PlanOptions(
        sizing_rate_per_s=rate, ttft_slo_s=slo_s, long_context_tokens=8192,
        b_short_candidates=(512, 1024, 2048, 4096), gammas=(1.0, 2.0), compressibility=p_c, max_pools=4,
        service_model=model,
    )  # fmt: skip
    planner = Planner(workload, (SMALL, SMALL_LONG), options)
    plan = planner.plan()
    for fleet in plan.best_by_pool_count:
        if fleet is None:
            continue
        traffic = planner.pool_traffic(fleet.routing)
        contexts = fleet.routing.context_tokens(8192)
        for pool, hardware, (rate_k, moments), context in zip(
            fleet.pools, fleet.hardware, traffic, contexts, strict=True
        ):
            assert pool.context_tokens == context
            if pool.instances == 0:
                assert rate_k == 0
                continue
            again = evaluate_pool(
                arrival_rate_per_s=rate_k, moments=moments, hardware=hardware, context_tokens=context,
                service_model=model, instances=pool.instances,
                slots_per_instance=pool.slots_per_instance, ttft_slo_s=slo_s, max_utilization=0.85,
            )  # fmt: skip
            assert again.feasible, again.problems
            assert again.p99_ttft_s <= slo_s + 1e-12 and again.utilization <= 0.85 + 1e-12


# A third profile for a middle pool: a cheaper GPU with a 128-token chunk (its own statistics).
SMALL_MID = PoolHardware(
    serving_name="small-mid", model_name="m", gpu_name="g3", gpus_per_instance=1, gpu_hour_usd=0.9,
    iteration_base_s=0.012, iteration_per_slot_s=0.0025, prefill_chunk_tokens=128,
    calibration_context_tokens=4096, kv_capacity_tokens=16 * 4096, kv_block_tokens=16,
)  # fmt: skip


def test_hardware_position_runs_the_last_pool_on_the_last_profile_and_the_others_by_position() -> None:
    from fleetopt.core.planner import hardware_position

    # (profiles, pool count) → the profile of each pool, by hand from the rule
    table = {
        (1, 1): [0], (1, 3): [0, 0, 0],
        (2, 1): [1], (2, 2): [0, 1], (2, 4): [0, 0, 0, 1],
        (4, 1): [3], (4, 2): [0, 3], (4, 3): [0, 1, 3], (4, 4): [0, 1, 2, 3], (3, 5): [0, 1, 1, 1, 2],
    }  # fmt: skip
    for (profiles, count), expected in table.items():
        assert [hardware_position(profiles, count, k) for k in range(count)] == expected


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pairs_strategy, st.floats(0.2, 2.0), st.floats(0.5, 200.0), st.sampled_from([0.0, 1.0]))
def test_four_pool_sweep_on_per_pool_hardware_equals_brute_force(pairs, slo_s, rate, p_c) -> None:
    """One profile per pool of a 4-pool fleet (a middle pool on its own GPU and chunk size): the
    dynamic programme's cheapest fleet is the cheapest over every boundary triple and γ, and each
    pool runs on its own profile."""
    inputs, outputs = np.array(pairs).T
    workload = workload_from_requests(inputs, outputs, name="random")
    candidates = (512, 1024, 2048, 3072, 4096)
    gammas = (1.0, 2.0)
    options = PlanOptions(
        sizing_rate_per_s=rate, ttft_slo_s=slo_s, long_context_tokens=8192, b_short_candidates=candidates,
        gammas=gammas, compressibility=p_c, service_model="lockstep", max_pools=4,
    )  # fmt: skip
    hardware = (SMALL, SMALL_MID, SMALL, SMALL_LONG)
    found = Planner(workload, hardware, options).plan().best_by_pool_count[3]
    fresh = Planner(workload, hardware, options)
    best = None
    for bounds in itertools.combinations(candidates, 3):
        for gamma in gammas:
            if math.floor(gamma * bounds[0]) > bounds[1]:
                continue
            fleet = fresh.fleet(Routing(bounds, gamma, p_c))
            assert fleet.hardware == hardware
            if fleet.feasible and (best is None or fleet.cost_per_hour_usd < best.cost_per_hour_usd - 1e-9):
                best = fleet
    if best is None:
        assert found is None
    else:
        assert found is not None and found.hardware == hardware
        assert found.cost_per_hour_usd == pytest.approx(best.cost_per_hour_usd, rel=1e-12)
    assert fresh.fleet(Routing((1024, 2048), 1.0, p_c)).hardware == (SMALL, SMALL_MID, SMALL_LONG)
    assert fresh.homogeneous().hardware == (SMALL_LONG,)


def test_three_pools_beat_two_on_a_long_tailed_conversation_cdf() -> None:
    """A long-context trace from 1K to 128K tokens: most requests short, a tail to 128K.

    With two pools the long pool holds a 128K-token context for every request above B; a middle
    pool with a shorter context serves most of them with several times the slots (measured:
    472 GPUs against 504 for the best two-pool fleet, docs/planner.md)."""
    rng = np.random.default_rng(7)
    totals = np.minimum(131_072, np.round(1024 * np.exp(rng.exponential(1.3, 4000)))).astype(int)
    outputs = np.minimum(totals - 1, 256)
    workload = workload_from_requests(totals - outputs, outputs, name="long-tail")
    from fleetopt.io.data import bundled_dir
    from fleetopt.io.profiles import pool_hardware

    hardware = pool_hardware("llama-3-70b-a100-80gb-tp8", [bundled_dir("profiles")])
    # 3 s: a 128K-token prefill alone takes 2.2 s at one slot under lockstep
    options = PlanOptions(
        sizing_rate_per_s=200.0,
        ttft_slo_s=3.0,
        long_context_tokens=131_072,
        max_pools=3,
        service_model="lockstep",
    )
    plan = Planner(workload, (hardware,), options).plan()
    two, three = plan.best_by_pool_count[1], plan.best_by_pool_count[2]
    assert two is not None and three is not None
    assert three.total_gpus < two.total_gpus
    assert plan.best is not None and plan.best.pool_count == 3
