"""size_pool's fast paths against brute force: one slot count (plain floats) and the shortcut over all."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetopt.core.poolstats import PoolStatistics
from fleetopt.core.service import PoolHardware, slot_service_times
from fleetopt.core.sizing import _search_slots, _utilization_bound, evaluate_pool, size_pool
from fleetopt.core.workload import workload_from_requests

# The papers' Llama-3-70B / A100-80GB TP8 calibration (FACTS §1): 256 slots at 4,096 tokens.
PAPER_A100 = PoolHardware(
    serving_name="paper", model_name="llama-3-70b", gpu_name="a100-80gb", gpus_per_instance=8,
    gpu_hour_usd=2.21, iteration_base_s=0.008, iteration_per_slot_s=0.00065, prefill_chunk_tokens=512,
    calibration_context_tokens=8192, kv_capacity_tokens=65_536 * 16, kv_block_tokens=16,
)  # fmt: skip

logs = st.lists(st.tuples(st.integers(1, 3000), st.integers(1, 1000)), min_size=3, max_size=40)


def _moments(pairs):
    inputs, outputs = np.array(pairs).T
    workload = workload_from_requests(inputs, outputs, name="random")
    return PoolStatistics(workload, PAPER_A100.prefill_chunk_tokens).range_moments(-1, math.inf)


@settings(max_examples=60, deadline=None)
@given(
    logs,
    st.sampled_from(["lockstep", "fleet-sim"]),
    st.integers(1, 256),
    st.floats(0.05, 3.0),
    st.floats(0.01, 1e5),
)
def test_one_slot_count_is_the_fewest_instances_that_fit(pairs, model, slots, slo_s, rate) -> None:
    """fixed_slots: n is feasible under evaluate_pool and n − 1 is not (or both say infeasible)."""
    moments = _moments(pairs)
    common = dict(
        arrival_rate_per_s=rate, moments=moments, hardware=PAPER_A100, context_tokens=4096,
        service_model=model, ttft_slo_s=slo_s,
    )  # fmt: skip
    sized = size_pool(**common, fixed_slots=slots)
    if not sized.feasible:
        huge = evaluate_pool(**common, instances=10**9, slots_per_instance=slots)
        assert not huge.feasible
        return
    assert sized.slots_per_instance == slots
    fits = evaluate_pool(**common, instances=sized.instances, slots_per_instance=slots)
    assert fits.feasible, fits.reason
    assert fits.p99_ttft_s == sized.p99_ttft_s
    if sized.instances > 1:
        assert not evaluate_pool(**common, instances=sized.instances - 1, slots_per_instance=slots).feasible


@settings(max_examples=40, deadline=None)
@given(logs, st.floats(0.05, 3.0), st.floats(0.01, 1e5))
def test_the_shortcut_gives_what_the_search_over_every_slot_count_gives(pairs, slo_s, rate) -> None:
    """Where the largest slot count at the least utilization bound meets the wait, size_pool stops
    there; the vectorized bisection over all 256 slot counts must agree (instances and slots)."""
    moments = _moments(pairs)
    sized = size_pool(
        arrival_rate_per_s=rate, moments=moments, hardware=PAPER_A100, context_tokens=4096,
        service_model="lockstep", ttft_slo_s=slo_s,
    )  # fmt: skip
    candidates = np.arange(1, 257)
    times = slot_service_times(moments, PAPER_A100, candidates, "lockstep")
    budget = slo_s - times.ttft_overhead_s
    allowed = np.flatnonzero(budget >= 0)
    if allowed.size == 0:
        assert not sized.feasible
        return
    slots = candidates[allowed].astype(float)
    mean_s, scv = times.mean_service_s[allowed], times.service_scv[allowed]
    n_util = _utilization_bound(rate, mean_s, slots, 0.85)
    instances, choice = _search_slots(rate, slots, mean_s, scv, budget[allowed], n_util, moments.quantile)
    assert (sized.instances, sized.slots_per_instance) == (instances, int(slots[choice]))
