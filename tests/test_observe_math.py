"""The arithmetic of ``fleetopt observe`` against hand counts and brute force (no server)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fleetopt.core.calibrate import PARAMETERS, Benchmark, design_rows
from fleetopt.core.histograms import both_within, counter_increase, make_histogram, quantile, share_at_most
from fleetopt.core.live_calibrate import check_production
from fleetopt.core.observed import independent_counts, place_buckets

EDGES = (0.1, 0.25, 0.5, 1.0, math.inf)


def _histogram(values: np.ndarray, edges=EDGES):
    return make_histogram(list(edges), [int((values <= e).sum()) for e in edges], float(values.sum()), "t")


@given(st.lists(st.floats(0.001, 5.0), min_size=1, max_size=300), st.floats(0.01, 0.99))
def test_the_true_quantile_lies_in_the_reported_bucket(values, q) -> None:
    sample = np.array(values)
    result = quantile(_histogram(sample), q)
    true = np.quantile(sample, q, method="inverted_cdf")
    assert result.lower < true <= result.upper or (result.lower == 0 and true <= result.upper)


@given(st.lists(st.floats(0.001, 5.0), min_size=1, max_size=300), st.floats(0.01, 3.0))
def test_the_share_within_a_limit_is_bounded_and_exact_on_edges(values, limit) -> None:
    sample = np.array(values)
    histogram = _histogram(sample)
    share = share_at_most(histogram, limit)
    assert share.lower <= (sample <= limit).mean() <= share.upper
    exact = share_at_most(histogram, 0.5)
    assert exact.exact and exact.estimate == (sample <= 0.5).mean()


def test_prometheus_interpolation_by_hand() -> None:
    # 10 at ≤0.1, 80 in (0.1, 0.25], 9 in (0.25, 0.5], 1 above 1: rank 99 → 0.25 + 0.25·(99−90)/9
    histogram = make_histogram(list(EDGES), [10, 90, 99, 99, 100], None, "t")
    assert quantile(histogram, 0.99).estimate == pytest.approx(0.5)
    assert quantile(histogram, 0.5).estimate == pytest.approx(0.1 + 0.15 * 40 / 80)
    top = quantile(histogram, 0.999)
    assert top.estimate == 1.0 and top.upper == math.inf  # the +Inf bucket: the highest finite edge


@given(st.floats(0, 1), st.floats(0, 1))
def test_frechet_bounds_hold_for_the_extreme_joints(a, b) -> None:
    from fleetopt.core.histograms import Bounded

    both = both_within(Bounded(a, a, a), Bounded(b, b, b))
    assert both.lower == pytest.approx(max(0.0, a + b - 1)) and both.upper == pytest.approx(min(a, b))


def test_counter_increase_counts_a_reset_from_zero() -> None:
    assert counter_increase(np.array([5, 7, 9, 2, 4])) == (4 + 2 + 2, 1)  # 5→9 (+4), reset: +2, then +2


@given(
    st.lists(st.integers(0, 40), min_size=1, max_size=8), st.lists(st.integers(0, 40), min_size=1, max_size=8)
)
def test_independent_counts_keep_both_marginals(rows, columns) -> None:
    total = sum(rows)
    if sum(columns) == 0 or total == 0:
        return
    columns = np.array(columns, dtype=np.int64)
    scaled = np.floor(columns / columns.sum() * total).astype(np.int64)
    scaled[np.argmax(scaled)] += total - scaled.sum()
    cells = independent_counts(np.array(rows), scaled)
    assert (cells >= 0).all()
    assert cells.sum(axis=1).tolist() == rows and cells.sum(axis=0).tolist() == scaled.tolist()
    expected = np.outer(rows, scaled) / total
    assert np.abs(cells - expected).max() < 2


def test_placement_matches_the_exact_mean_within_the_buckets() -> None:
    values = np.array([3, 4, 40, 45, 48, 300, 700])
    edges = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, math.inf)
    placed = place_buckets(_histogram(values, edges), 2000, "prompt")
    assert placed.mean_matched
    assert abs((placed.tokens * placed.counts).sum() / placed.counts.sum() - values.mean()) <= 0.5
    for k, edge in enumerate(edges[:-1]):  # each bucket's requests stay inside it
        if placed.counts[k]:
            assert placed.tokens[k] <= edge and (k == 0 or placed.tokens[k] > edges[k - 1])


def test_a_production_refit_recovers_the_profile_only_when_the_load_varied() -> None:
    theta = np.array([0.012, 0.00015, 4e-5, 0.0, 0.03])
    concurrency = np.array([8.0, 8.2, 20.0, 31.0, 45.0])
    isl, osl = np.array([700.0, 900, 650, 800, 1000]), np.array([180.0, 200, 150, 220, 190])
    tpot_rows, ttft_rows = design_rows(concurrency, isl, osl, 8192)
    windows = Benchmark(concurrency, isl, osl, ttft_rows @ theta, tpot_rows @ theta)
    result = check_production(theta * 1.3, windows, 8192)
    assert np.all(np.abs(result.tpot_pct_errors) > 1)  # the wrong profile is off
    assert result.refit is not None
    for name in ("iteration_base_s", "iteration_per_slot_s", "prefill_per_token_s", "ttft_overhead_s"):
        assert result.refit[name] == pytest.approx(theta[PARAMETERS.index(name)], rel=1e-6)
    steady = Benchmark(concurrency[:2], isl[:2], osl[:2], windows.ttft_s[:2], windows.tpot_s[:2])
    single = check_production(theta, steady, 8192)
    assert single.refit is None and "2 are needed" in single.not_identified
