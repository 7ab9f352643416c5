"""fleetopt.core.drift: KS bounds from a quantile fingerprint, the planned fleet under new traffic."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetopt.core.drift import (
    FitProblem,
    PlannedFleet,
    evaluate_fleet,
    ks_against_quantiles,
    relative_change,
)
from fleetopt.core.planner import Planner, PlanOptions
from fleetopt.core.pools import DeployablePool
from fleetopt.core.routing import Routing
from fleetopt.core.service import PoolHardware
from fleetopt.core.workload import workload_from_requests
from fleetopt.core.workload_stats import ks_distance
from fleetopt.errors import ValidationError
from fleetopt.io.documents.words import fit_problem_sentence
from fleetopt.io.plans import FINGERPRINT_LEVELS, workload_fingerprint

HARDWARE = PoolHardware(
    serving_name="test",
    model_name="m",
    gpu_name="g",
    gpus_per_instance=2,
    gpu_hour_usd=3.0,
    iteration_base_s=0.008,
    iteration_per_slot_s=0.00065,
    prefill_chunk_tokens=512,
    calibration_context_tokens=8192,
    kv_capacity_tokens=262_144,
    kv_block_tokens=16,
)


def _log(totals: list[int], name: str = "w"):
    totals_array = np.asarray(totals, dtype=np.int64)
    outputs = np.maximum(1, totals_array // 5)
    return workload_from_requests(totals_array - outputs, outputs, name=name)


def _fingerprint_ks(today, planned):
    fingerprint = workload_fingerprint(planned, None, None)
    return ks_against_quantiles(
        today,
        tuple(fingerprint.total_tokens_quantile_levels),
        tuple(fingerprint.total_tokens_quantiles),
    )


lengths = st.lists(st.integers(min_value=2, max_value=5000), min_size=1, max_size=300)


@settings(max_examples=80, deadline=None)
@given(today=lengths, planned=lengths)
def test_ks_bounds_bracket_the_exact_distance_within_the_grid_spacing(today, planned) -> None:
    """The exact KS (ks_distance over both workloads' atoms) is in [lower, upper]; upper − lower ≤ 0.001."""
    a, b = _log(today, "a"), _log(planned, "b")
    exact = ks_distance(a, b)
    estimate = _fingerprint_ks(a, b)
    assert estimate.lower - 1e-9 <= exact <= estimate.upper + 1e-9
    assert estimate.upper - estimate.lower <= 0.001 + 1e-9
    assert estimate.resolution == pytest.approx(0.001)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(totals=lengths)
def test_ks_lower_bound_is_zero_for_the_same_distribution(totals) -> None:
    estimate = _fingerprint_ks(_log(totals), _log(totals))
    assert estimate.lower == 0.0
    assert estimate.upper <= 0.01 + 1e-12


def test_ks_of_disjoint_point_masses_is_exactly_one() -> None:
    """All of today's traffic at 100 tokens, all planned traffic at 200: F − G = 1 on [100, 200)."""
    estimate = _fingerprint_ks(_log([100] * 10), _log([200] * 10))
    assert (estimate.lower, estimate.upper) == (1.0, 1.0)


def test_ks_of_a_half_shift_by_hand() -> None:
    """Planned: half at 100, half at 300; today: all at 100. sup|F − G| = 1 − 0.5 = 0.5 on [100, 300).

    Quantiles at ℓ ≤ 0.5 are 100, above 300; at x = 100 the grid (step 0.001) says G ∈ [0.500, 0.501),
    so the lower bound is 1 − 0.501 = 0.499 and the upper bound 1 − 0.500 = 0.500.
    """
    estimate = _fingerprint_ks(_log([100] * 5), _log([100, 300] * 5))
    assert estimate.lower == pytest.approx(0.499)
    assert estimate.upper == pytest.approx(0.50)
    assert ks_distance(_log([100] * 5), _log([100, 300] * 5)) == pytest.approx(0.5)


def test_ks_exact_flag_and_bad_fingerprints() -> None:
    workload = _log([10, 20, 30])
    ranks = tuple(range(len(FINGERPRINT_LEVELS)))
    exact = ks_against_quantiles(workload, FINGERPRINT_LEVELS, ranks, exact=True)
    assert (exact.lower, exact.upper, exact.exact) == (0.0, 0.0, True)
    with pytest.raises(ValidationError, match="2 levels but 1 quantiles"):
        ks_against_quantiles(workload, (0.0, 1.0), (5,))
    with pytest.raises(ValidationError, match="must not decrease"):
        ks_against_quantiles(workload, (0.0, 1.0), (5, 4))
    with pytest.raises(ValidationError, match="increase strictly"):
        ks_against_quantiles(workload, (0.5, 0.5), (4, 5))


def test_relative_change() -> None:
    assert relative_change(110.0, 100.0) == pytest.approx(0.10)
    assert relative_change(1.0, 0.0) is None
    assert relative_change(None, 1.0) is None


# ----------------------------------------------------------------------------------- the fleet under load

WORKLOAD = _log([300, 800, 1500, 2500, 3000, 6000, 9000, 12000] * 50 + [700] * 200)
OPTIONS = PlanOptions(
    sizing_rate_per_s=40.0,
    ttft_slo_s=2.0,
    long_context_tokens=16384,
    b_short_candidates=(2048, 4096),
    gammas=(1.0, 1.5),
    service_model="lockstep",  # the hand checks below are FleetOpt Eq. 3–4's
)


@pytest.fixture(scope="module")
def planned():
    planner = Planner(WORKLOAD, (HARDWARE,), OPTIONS)
    best = planner.plan().best
    assert best is not None and best.short is not None
    fleet = PlannedFleet(
        routing=best.routing,
        pools=(
            DeployablePool(
                "short", best.b_short_tokens, best.short.slots_per_instance, best.short.instances, HARDWARE
            ),
            DeployablePool("long", 16384, best.long.slots_per_instance, best.long.instances, HARDWARE),
        ),
        total_gpus=best.total_gpus,
        cost_per_hour_usd=best.cost_per_hour_usd,
    )
    return planner, best, fleet


def test_the_planned_fleet_at_the_planned_rate_reproduces_the_plan(planned) -> None:
    planner, best, fleet = planned
    fit = evaluate_fleet(planner, fleet, OPTIONS.sizing_rate_per_s)
    assert fit.fits
    for pool, sized in zip(fit.pools, (best.short, best.long), strict=True):
        assert pool.sizing.utilization == pytest.approx(sized.utilization, rel=1e-12)
        assert pool.sizing.p99_ttft_s == pytest.approx(sized.p99_ttft_s, rel=1e-12)
        assert pool.utilization_headroom == pytest.approx(OPTIONS.max_utilization - sized.utilization)
        assert pool.ttft_headroom_s == pytest.approx(OPTIONS.ttft_slo_s - sized.p99_ttft_s)


def test_utilization_by_hand_lockstep(planned) -> None:
    """ρ = λ·E[S]/(n·s), E[S] = (W + H·s)·E[I], I = ⌈L_in/chunk⌉ + L_out (FleetOpt Eq. 3–4), at γ = 1."""
    planner, _, fleet = planned
    b = fleet.b_short_tokens
    flat = PlannedFleet(Routing.two_pool(b, 1.0, 1.0), fleet.pools, fleet.total_gpus, fleet.cost_per_hour_usd)
    rate = 55.0
    fit = evaluate_fleet(planner, flat, rate)
    weights = WORKLOAD.weights / WORKLOAD.total_weight
    iterations = np.ceil(WORKLOAD.input_tokens / 512) + WORKLOAD.output_tokens
    for pool, mask in zip(fit.pools, (WORKLOAD.total_tokens <= b, WORKLOAD.total_tokens > b), strict=True):
        share = weights[mask].sum()
        mean_iterations = np.dot(weights[mask], iterations[mask]) / share
        s, n = pool.sizing.slots_per_instance, pool.sizing.instances
        expected = rate * share * (0.008 + 0.00065 * s) * mean_iterations / (n * s)
        assert pool.sizing.utilization == pytest.approx(expected, rel=1e-12)


def test_overload_is_reported_not_raised(planned) -> None:
    """At a rate that saturates the long pool: ρ ≥ 1, P99 TTFT = ∞, the reason says it cannot keep up."""
    planner, _, fleet = planned
    base = evaluate_fleet(planner, fleet, OPTIONS.sizing_rate_per_s)
    long_rho = base.pools[1].sizing.utilization
    factor = 1.5 / long_rho
    fit = evaluate_fleet(planner, fleet, OPTIONS.sizing_rate_per_s * factor)
    long = fit.pools[1]
    assert long.sizing.utilization == pytest.approx(1.5)  # ρ is linear in λ
    assert math.isinf(long.sizing.p99_ttft_s) and long.ttft_headroom_s == -math.inf
    assert long.problems == (FitProblem.UNSTABLE,)
    assert fit_problem_sentence(FitProblem.UNSTABLE, long.sizing, planner.options) == (
        "utilization 1.500 > 1: the pool cannot keep up (its queue and P99 TTFT grow without bound)"
    )
    assert not fit.fits


def test_homogeneous_fleet_is_evaluated_as_one_pool(planned) -> None:
    planner, _, _ = planned
    homogeneous = planner.homogeneous()
    fleet = PlannedFleet(
        Routing.homogeneous(),
        (
            DeployablePool(
                "homogeneous",
                16384,
                homogeneous.long.slots_per_instance,
                homogeneous.long.instances,
                HARDWARE,
            ),
        ),
        homogeneous.total_gpus,
        homogeneous.cost_per_hour_usd,
    )
    fit = evaluate_fleet(planner, fleet, OPTIONS.sizing_rate_per_s)
    assert [p.name for p in fit.pools] == ["homogeneous"]
    assert fit.pools[0].sizing.utilization == pytest.approx(homogeneous.long.utilization, rel=1e-12)
    assert fit.alpha is None
