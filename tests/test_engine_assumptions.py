"""The engine model's corrections as named, switchable assumptions: each alternative is what its
docstring says (by hand), the registered model uses the defaults, and switching one term changes a
pool where that term acts — a value passed to the model, no patching."""

from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from fleetopt.core.engine.assumptions import ALTERNATIVES, DEFAULT_ASSUMPTIONS, TERM_LABELS, EngineAssumptions
from fleetopt.core.engine.model import ENGINE, EngineModel
from fleetopt.core.engine.occupancy import (
    local_drain_rate_per_s,
    occupancy_state,
    pooled_slot_queue,
    slot_wait_given_wait_s,
    two_moment_on_whole_wait,
)
from fleetopt.core.engine.router import (
    RouterState,
    even_first_order_share,
    least_loaded_first_order_share,
    least_loaded_time_share,
    no_router_blindness,
)
from fleetopt.core.poolstats import PoolStatistics
from fleetopt.core.service import PoolTargets, get_service_model
from fleetopt.core.sizing import evaluate_pool, size_pool
from fleetopt.core.workload import workload_from_requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_occupancy import _hardware  # noqa: E402


def test_one_field_per_term_each_with_its_alternative_and_label() -> None:
    """Every field has a different simplest alternative and a table label; the registered engine
    model (and a model built without arguments) uses the defaults; ``without`` switches one field."""
    names = [f.name for f in dataclasses.fields(EngineAssumptions)]
    assert names == list(ALTERNATIVES) == list(TERM_LABELS)
    for name in names:
        assert ALTERNATIVES[name] is not getattr(DEFAULT_ASSUMPTIONS, name)
        switched = DEFAULT_ASSUMPTIONS.without(name)
        assert switched.changed_terms() == (name,)
        assert getattr(switched, name) is ALTERNATIVES[name]
    assert get_service_model("engine") is ENGINE and ENGINE.assumptions.changed_terms() == ()
    assert EngineModel().assumptions == DEFAULT_ASSUMPTIONS
    assert hash(DEFAULT_ASSUMPTIONS.without("company_factor")) != hash(DEFAULT_ASSUMPTIONS)


def test_the_alternatives_by_hand() -> None:
    """f₁ → 1/n: 0.25 over 4 instances whatever u (f₁ itself: 1 − (3/4)⁴ = 0.68359375 at u = 0.8,
    b = 4); no blindness term: f = f₁ even where the router sees few arrivals; the pooled queue with
    v = 1 waits 1/(μ(c) − λ) (M/M/c's wait given a wait), with v = 3 and σ = 0.8 (1 + 2·0.8)/(μ(c) − λ);
    v on the whole wait: v/μ_JSQ."""
    assert even_first_order_share(0.8, 4.0) == 0.25 and even_first_order_share(0.8, 1.0) == 1.0
    assert least_loaded_first_order_share(0.8, 4.0) == pytest.approx(1.0 - 0.75**4, rel=1e-14)
    # few arrivals per iteration (m = 10⁻⁶ ≪ 1) and many in flight: the blindness term takes f to ~1
    sparse = RouterState(0.8, 4.0, 1e-6 * 0.2 / 0.01, 0.01, 1e6 * 4.0 / 1e-6)
    assert least_loaded_time_share(sparse) == pytest.approx(1.0, abs=1e-5)
    assert least_loaded_time_share(sparse, blindness=no_router_blindness) == least_loaded_first_order_share(
        0.8, 4.0
    )
    drain, rate = 2.0, 8.0  # μ(c) = 10, σ = 0.8
    assert slot_wait_given_wait_s(drain, rate, 4.0, 1.0, pooled_slot_queue) == pytest.approx(0.5, rel=1e-15)
    assert slot_wait_given_wait_s(drain, rate, 4.0, 3.0, pooled_slot_queue) == pytest.approx(1.3, rel=1e-15)
    local = local_drain_rate_per_s(drain, rate, 4.0)
    assert local == pytest.approx(10.0 / 4.0 * (1.0 - 0.8**4), rel=1e-14)
    assert slot_wait_given_wait_s(drain, rate, 4.0, 3.0, two_moment_factor=two_moment_on_whole_wait) == (
        pytest.approx(3.0 / local, rel=1e-15)
    )
    arrays = slot_wait_given_wait_s(np.array([drain, -1.0]), rate, 4.0, 3.0, pooled_slot_queue)
    assert arrays[0] == pytest.approx(1.3, rel=1e-15) and math.isinf(arrays[1])
    for term in ("company_factor", "stall_widening"):
        assert ALTERNATIVES[term](*([0.5] * (1 if term == "company_factor" else 3))) == 1.0


def _moments(prompts: np.ndarray, outputs: np.ndarray, chunk: int):
    workload = workload_from_requests(prompts, outputs, name="synthetic")
    return PoolStatistics(workload, chunk, prompt_levels=True).range_moments(
        -1, math.inf, 0.99, prompt_levels=True
    )


def test_without_the_company_factor_an_idle_pool_of_long_prompts_keeps_falling_with_instances() -> None:
    """The nearly idle pool of tests/test_occupancy.py (long prompts at 0.05 req/s): with φ its P99
    TTFT is that of a request alone from three instances on; with φ switched off (a value passed to
    the model) a request's prefill keeps the company of λ/n arrivals, so the P99 stays above alone
    and falls with every instance."""
    rng = np.random.default_rng(3)
    moments = _moments(rng.integers(8000, 30000, 2000), rng.integers(50, 600, 2000), 8192)
    hardware = _hardware(prefill_per_token_s=3e-5, prefill_chunk_tokens=8192, kv_capacity_tokens=2_000_000)
    without = EngineModel(DEFAULT_ASSUMPTIONS.without("company_factor"))

    def p99(model, rate: float, instances: int) -> float:
        return evaluate_pool(
            arrival_rate_per_s=rate, moments=moments, hardware=hardware, context_tokens=32768,
            service_model=model, instances=instances, slots_per_instance=8, ttft_slo_s=5.0,
        ).p99_ttft_s  # fmt: skip

    alone = p99(ENGINE, 1e-6, 2)
    with_phi = [p99(ENGINE, 0.05, n) for n in (3, 5, 8)]
    without_phi = [p99(without, 0.05, n) for n in (3, 5, 8)]
    assert with_phi == pytest.approx([alone] * 3, rel=1e-3)
    assert without_phi == sorted(without_phi, reverse=True) and without_phi[-1] > with_phi[-1]
    assert without_phi[0] > 1.01 * alone


def test_without_the_stall_widening_the_wait_is_the_chains_own() -> None:
    """A pool of short and four-chunk prompts at u = 0.3 (tests/test_stalls.py's): its P(wait) is the
    widened chain's by default and the chain's own with the widening switched off, and a pool sized
    without the widening needs no more instances."""
    rng = np.random.default_rng(3)
    inputs = np.where(rng.random(20_000) < 0.2, 8192, 256)
    moments = _moments(inputs, rng.geometric(1 / 200, 20_000), 2048)
    hardware = _hardware(
        iteration_base_s=0.01,
        iteration_per_slot_s=0.0002,
        prefill_chunk_tokens=2048,
        prefill_per_token_s=3e-5,
        kv_capacity_tokens=10**9,
    )
    rate = 0.3 * 4 / (3e-5 * inputs.mean())
    models = (("default", ENGINE), ("off", EngineModel(DEFAULT_ASSUMPTIONS.without("stall_widening"))))
    queues = {
        name: model.pool_queue(rate, moments, hardware, 65536, PoolTargets(10.0, 1.0))
        for name, model in models
    }
    widened, own = (queues[name].at(4, 30).p_wait for name in ("default", "off"))
    q = queues["off"]
    u = rate / 4 * q.prompt_work_s
    chain = occupancy_state(
        rate, 4.0, 30.0, moments.mean_iterations, q.costs.base_s / (1 - u), q.decode_per_sequence_s / (1 - u)
    )
    assert own == chain.p_wait < widened
    sized = {
        name: size_pool(
            arrival_rate_per_s=rate, moments=moments, hardware=hardware, context_tokens=65536,
            service_model=model, ttft_slo_s=1.0, fixed_slots=30,
        ).instances
        for name, model in models
    }  # fmt: skip
    assert sized["off"] <= sized["default"]
