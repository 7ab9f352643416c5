"""size_pool's fast paths against brute force: one slot count (plain floats) and the shortcut over all."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetopt.core.mgc import _most_allowed_slots
from fleetopt.core.poolstats import PoolStatistics
from fleetopt.core.queueing import wait_quantile
from fleetopt.core.service import PoolHardware, get_service_model, slot_service_times
from fleetopt.core.sizing import evaluate_pool, size_pool
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
    assert fits.feasible, fits.problems
    assert fits.p99_ttft_s == sized.p99_ttft_s
    if sized.instances > 1:
        assert not evaluate_pool(**common, instances=sized.instances - 1, slots_per_instance=slots).feasible


# The same calibration with W = 0: every slot count has the same load per slot, so the least
# utilization bound is not at the most slots.
FLAT_PER_SLOT = replace(PAPER_A100, iteration_base_s=0.0)


@settings(max_examples=20, deadline=None)
@given(
    logs,
    st.floats(0.05, 3.0),
    st.floats(0.01, 1e5),
    st.sampled_from([PAPER_A100, FLAT_PER_SLOT]),
    st.sampled_from(["lockstep", "fleet-sim"]),
)
def test_any_slot_count_sizing_is_the_brute_force_optimum(pairs, slo_s, rate, hardware, model):
    """size_pool sizes the most slots first and looks at fewer only one instance below; the answer
    must be the optimum over all 64 slot counts (16K context) found the long way: for each slot count whose
    prefill and first decode leave a wait budget, the fewest instances with utilization ≤ 0.85 and
    the P99 wait (queueing.wait_quantile, checked against mpmath in test_queueing_mpmath.py) within
    the budget, by bisection over n; then the fewest instances, ties going to the most slots."""
    moments = _moments(pairs)
    sized = size_pool(
        arrival_rate_per_s=rate, moments=moments, hardware=hardware, context_tokens=16384,
        service_model=model, ttft_slo_s=slo_s,
    )  # fmt: skip
    candidates = np.arange(1, hardware.max_slots(16384) + 1)
    times = slot_service_times(moments, hardware, candidates, get_service_model(model))
    budget = slo_s - times.ttft_overhead_s
    allowed = np.flatnonzero(budget >= 0)
    if allowed.size == 0:
        assert not sized.feasible
        return
    slots = candidates[allowed].astype(float)
    mean_s, scv = times.mean_service_s[allowed], times.service_scv[allowed]

    def fits(n: np.ndarray) -> np.ndarray:  # every allowed slot count at once
        waits = wait_quantile(moments.quantile, n * slots, rate, 1.0 / mean_s, scv)
        return (rate * mean_s / (n * slots) <= 0.85) & (waits <= budget[allowed])

    hi = np.ones(slots.size)
    while not (passed := fits(hi)).all():
        hi = np.where(passed, hi, 2 * hi)
    lo = np.where(hi > 1, hi // 2, 0)  # fails there (or 0)
    while (searching := hi - lo > 1).any():
        mid = np.where(searching, (lo + hi) // 2, hi)
        passed = fits(mid)
        lo, hi = np.where(passed, lo, mid), np.where(passed, mid, hi)
    fewest = int(hi.min())
    best = (fewest, int(slots[np.flatnonzero(hi == fewest)[-1]]))
    assert (sized.instances, sized.slots_per_instance) == best
    again = evaluate_pool(
        arrival_rate_per_s=rate, moments=moments, hardware=hardware, context_tokens=16384,
        service_model=model, instances=sized.instances, slots_per_instance=sized.slots_per_instance,
        ttft_slo_s=slo_s,
    )  # fmt: skip
    assert again.feasible and again.p99_ttft_s == sized.p99_ttft_s


@settings(max_examples=60, deadline=None)
@given(
    logs,
    st.sampled_from(["lockstep", "fleet-sim"]),
    st.floats(0.01, 3.0),
    st.one_of(st.none(), st.floats(0.005, 0.3)),
    st.sampled_from([512, 4096, 16384]),
)
def test_the_slot_counts_that_fit_the_slo_are_exactly_one_to_the_largest(
    pairs, model, slo_s, tpot_s, context
):
    """_most_allowed_slots (affine guess, then bisection) against checking every slot count."""
    moments = _moments(pairs)
    kv_limit = PAPER_A100.max_slots(context)
    model = get_service_model(model)
    times = slot_service_times(moments, PAPER_A100, np.arange(1, kv_limit + 1), model)
    fits = (slo_s - times.ttft_overhead_s >= 0) & (True if tpot_s is None else times.iteration_s <= tpot_s)
    most = _most_allowed_slots(moments, PAPER_A100, kv_limit, model, slo_s, tpot_s)
    assert most == int(fits.sum())
    assert fits[:most].all()  # a prefix: 1 … most


@settings(max_examples=40, deadline=None)
@given(logs, st.floats(0.05, 3.0), st.floats(0.01, 2000.0), st.floats(0.005, 0.2))
def test_sizing_under_a_tpot_cap_matches_brute_force(pairs, slo_s, rate, tpot_s) -> None:
    """With --tpot-slo, the answer is the fewest instances over slot counts whose iteration time
    meets the cap (ties: most slots), found here by scanning n for every allowed s."""
    moments = _moments(pairs)
    common = dict(
        arrival_rate_per_s=rate, moments=moments, hardware=PAPER_A100, context_tokens=16384,
        service_model="lockstep", ttft_slo_s=slo_s,
    )  # fmt: skip
    sized = size_pool(**common, tpot_slo_s=tpot_s)
    kv_limit = PAPER_A100.max_slots(16384)
    best = None
    for slots in range(1, kv_limit + 1):
        if size_pool(**common, fixed_slots=slots).iteration_s > tpot_s:
            continue
        fixed = size_pool(**common, fixed_slots=slots)
        if fixed.feasible and (best is None or fixed.instances <= best[0]):
            best = (fixed.instances, slots)
    if best is None:
        assert not sized.feasible
        return
    assert (sized.instances, sized.slots_per_instance) == best
    if sized.slots_per_instance < kv_limit and sized.slots_binding == "tpot":
        # one slot more breaks the cap: lockstep's t = W + H·s (FleetOpt Eq. 3), whatever else it breaks
        more = sized.slots_per_instance + 1
        assert PAPER_A100.iteration_base_s + PAPER_A100.iteration_per_slot_s * more > tpot_s


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 5000), st.integers(1, 5000), st.one_of(st.none(), st.integers(1, 6000)))
def test_smallest_passing_from_finds_the_threshold_whatever_the_hint(threshold, start, hint) -> None:
    """For a test that passes from n* on, the search from ``start`` returns max(start, n*), and a
    hint (right, wrong or absent) changes only how many evaluations it takes."""
    from fleetopt.core.search import smallest_passing_from

    seen: list[int] = []

    def passes(n: int) -> tuple[bool, None]:
        seen.append(n)
        return n >= threshold, None

    assert smallest_passing_from(passes, start, hint) == max(start, threshold)
    assert all(n >= 1 for n in seen)
    if hint is not None and hint == max(start, threshold) and hint > start:
        assert len(seen) == 2  # the hint and one fewer


@settings(max_examples=400, deadline=None)
@given(
    st.integers(1, 10**6),
    st.integers(1, 10**6),
    st.one_of(st.none(), st.integers(1, 2 * 10**6)),
    st.sampled_from(["linear", "log", "noisy", "misleading", "flat", "nan", "kinked"]),
    st.floats(1e-6, 1e3),
    st.randoms(use_true_random=False),
)
def test_margins_place_the_search_but_never_change_its_answer(
    threshold, start, hint, kind, slope, rng
) -> None:
    """The margins the test reports (exact, curved, noisy, pointing the wrong way, flat, NaN or
    with a step across the threshold) only move where the search looks: it returns
    max(start, n*), within a few times log₂ of the distance from its first evaluation to the
    answer, and a right hint is still two evaluations."""
    from fleetopt.core.search import smallest_passing_from

    seen: list[int] = []

    def margin(n: int) -> float:
        offset = n - threshold + 0.5
        return {
            "linear": slope * offset,
            "log": math.log(n / (threshold - 0.5)) if threshold > 1 else 1.0,
            "noisy": slope * (offset + rng.uniform(-50.0, 50.0)),
            "misleading": -slope * offset,
            "flat": 1.0,
            "nan": math.nan,
            # the engine's TTFT tail: slowly curved above the threshold, a step below it
            "kinked": 1e-3 * math.log1p(offset) if offset > 0 else -3.0 - 1e-6 * offset,
        }[kind]

    def passes(n: int) -> tuple[bool, float]:
        seen.append(n)
        return n >= threshold, margin(n)

    answer = max(start, threshold)
    assert smallest_passing_from(passes, start, hint) == answer
    assert len(seen) == len(set(seen))  # nothing evaluated twice
    first = hint if hint is not None and hint > start else start
    bound = 4 * math.log2(abs(answer - first) + 2) + 4
    if kind == "noisy":
        # margins whose noise (±50) dwarfs the distance can send a secant from next to the answer
        # to the start: then it costs a bisection of that range too (hypothesis found 14 evaluations
        # for threshold 546, hint 549, start 1, against 13.3 for the distance alone)
        bound += math.log2(max(first - start, 0) + 2)
    assert len(seen) <= bound
    if hint is not None and hint == answer and hint > start:
        assert len(seen) == 2
