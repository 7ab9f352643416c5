"""Exact pool statistics against brute force over the raw atoms (hypothesis and real CDFs)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetopt.core.poolstats import PoolStatistics
from fleetopt.core.workload import Workload, workload_from_cdf, workload_from_requests


def _brute_pool(
    workload: Workload, chunk: int, b: int, gamma: float, p_c: float, which: str, q: float = 0.99
):
    """Per-request arrays of the pool by direct enumeration: (weights, P, I, L, L_in)."""
    w = workload.weights / workload.weights.sum()
    total, inp, out = workload.total_tokens, workload.input_tokens, workload.output_tokens
    prefill = -(-inp // chunk)
    band = (total > b) & (total <= math.floor(gamma * b))
    compressible = band & (out < b)
    compressed_prefill = -(-(b - np.minimum(out, b)) // chunk)
    if which == "short":
        weights = np.concatenate((w * (total <= b), w * compressible * p_c))
        prefills = np.concatenate((prefill, compressed_prefill))
        outputs = np.concatenate((out, out))
        lengths = np.concatenate((total, np.full_like(total, b)))
        inputs = np.concatenate((inp, b - np.minimum(out, b)))
    else:
        stay = (total > math.floor(gamma * b)) + band * ~compressible + compressible * (1 - p_c)
        weights, prefills, outputs, lengths, inputs = w * stay, prefill, out, total, inp
    return weights, prefills, prefills + outputs, lengths, inputs


def _check(stats: PoolStatistics, workload: Workload, chunk: int, b: int, gamma: float, p_c: float) -> None:
    for which in ("short", "long"):
        weights, prefills, iterations, lengths, inputs = _brute_pool(workload, chunk, b, gamma, p_c, which)
        moments = (stats.short_pool if which == "short" else stats.long_pool)(
            b, gamma, p_c, prompt_levels=True
        )
        mass = weights.sum()
        assert moments.traffic_fraction == pytest.approx(mass, rel=1e-9, abs=1e-12)
        if mass <= 1e-12:
            continue

        def mean(values: np.ndarray, weights: np.ndarray = weights, mass: float = mass) -> float:
            return float((weights * values).sum() / mass)

        assert moments.mean_iterations == pytest.approx(mean(iterations), rel=1e-9)
        assert moments.mean_sq_iterations == pytest.approx(mean(iterations.astype(float) ** 2), rel=1e-9)
        assert moments.mean_iter_x_len == pytest.approx(mean(iterations * lengths.astype(float)), rel=1e-9)
        assert moments.mean_prefill_x_len == pytest.approx(mean(prefills * lengths.astype(float)), rel=1e-9)
        order = np.argsort(prefills, kind="stable")
        cumulative = np.cumsum(weights[order]) / mass
        expected_quantile = prefills[order][np.searchsorted(cumulative, 0.99 * (1 - 1e-12))]
        assert moments.prefill_iterations_quantile == expected_quantile
        _check_prompt_levels(moments.prompt_levels, weights, prefills, inputs, chunk)
        _check_decode_above(moments, weights, iterations - prefills, lengths)


def _check_decode_above(moments, weights: np.ndarray, outputs: np.ndarray, lengths: np.ndarray) -> None:
    """The KV-read floor's sums (E[L_out; L > t], E[L_out·L; L > t]) against direct sums, at thresholds
    below, inside and above the pool's lengths."""
    mass = weights.sum()
    for threshold in (-1.0, float(np.median(lengths)), float(lengths.max()) - 0.5, float(lengths.max())):
        above = lengths > threshold
        expected = (
            float((weights * outputs * above).sum() / mass),
            float((weights * outputs * lengths * above).sum() / mass),
        )
        assert moments.decode_above(threshold) == pytest.approx(expected, rel=1e-9, abs=1e-9)


def _check_prompt_levels(
    levels, weights: np.ndarray, prefills: np.ndarray, inputs: np.ndarray, chunk: int
) -> None:
    """The engine model's prompts by prefill level (share, moments of the last chunk) against a
    direct weighted sum per level. They are differences of float64 prefix sums over the whole atom
    table, so a level holding a small share of a large table carries ~N·ε of the table's total:
    relative 1e-7 (a wrong sum is off by far more)."""
    mass = weights.sum()
    present = [k for k in np.unique(prefills) if weights[prefills == k].sum() > mass * 1e-15]
    assert list(levels.levels) == [int(k) for k in present]
    last = (inputs - np.maximum(prefills - 1, 0) * chunk).astype(float)
    for j, k in enumerate(present):
        w = weights * (prefills == k)
        share = w.sum()
        assert levels.weights[j] == pytest.approx(share / mass, rel=1e-7)
        for power, mean in (
            (1, levels.last_chunk_1[j]),
            (2, levels.last_chunk_2[j]),
            (3, levels.last_chunk_3[j]),
        ):
            assert mean == pytest.approx(float((w * last**power).sum() / share), rel=1e-7, abs=1e-9)


request_logs = st.lists(
    st.tuples(st.integers(0, 3000), st.integers(0, 600)).filter(lambda p: p[0] + p[1] >= 1),
    min_size=1,
    max_size=60,
)


@settings(max_examples=60, deadline=None)
@given(
    request_logs,
    st.sampled_from([1, 16, 512]),
    st.integers(1, 2500),
    st.sampled_from([1.0, 1.1, 1.5, 2.0, 3.0]),
    st.sampled_from([0.0, 0.5, 0.75, 1.0]),
)
def test_pool_moments_equal_brute_force_on_random_logs(pairs, chunk, b, gamma, p_c) -> None:
    inputs, outputs = np.array(pairs).T
    workload = workload_from_requests(inputs, outputs, name="random")
    stats = PoolStatistics(workload, chunk, prompt_levels=True)
    _check(stats, workload, chunk, b, gamma, p_c)


@settings(max_examples=60, deadline=None)
@given(request_logs, st.integers(-1, 4000), st.integers(-1, 4000))
def test_range_moments_and_cdf_equal_brute_force(pairs, lo, hi) -> None:
    inputs, outputs = np.array(pairs).T
    workload = workload_from_requests(inputs, outputs, name="random")
    stats = PoolStatistics(workload, 512, prompt_levels=True)
    total = inputs + outputs
    assert stats.cdf(hi) == pytest.approx(np.mean(total <= hi), abs=1e-12)
    moments = stats.range_moments(lo, hi, prompt_levels=True)
    chosen = (total > lo) & (total <= hi)
    assert moments.traffic_fraction == pytest.approx(chosen.mean(), abs=1e-12)
    if chosen.any():
        iterations = -(-inputs[chosen] // 512) + outputs[chosen]
        assert moments.mean_iterations == pytest.approx(iterations.mean(), rel=1e-12)
        assert moments.max_total_tokens == total[chosen].max()
        _check_prompt_levels(moments.prompt_levels, chosen.astype(float), -(-inputs // 512), inputs, 512)
        _check_decode_above(moments, chosen.astype(float), outputs, total)
    else:
        assert moments.is_empty


def test_short_and_long_pools_partition_the_traffic_on_the_azure_cdf(shared_dir) -> None:
    import json

    cdf = json.loads((shared_dir / "reference/fleet-sim-cdfs/azure_cdf.json").read_text())
    workload = workload_from_cdf([t for t, _ in cdf], [f for _, f in cdf], name="azure")
    stats = PoolStatistics(workload, 512, prompt_levels=True)
    for gamma in (1.0, 1.5, 2.0):
        for p_c in (0.0, 0.75, 1.0):
            short = stats.short_pool(4096, gamma, p_c)
            long = stats.long_pool(4096, gamma, p_c)
            assert short.traffic_fraction + long.traffic_fraction == pytest.approx(1.0, abs=1e-12)
    _check(stats, workload, 512, 4096, 1.5, 0.75)
    # FleetOpt Table 2 / FACTS §5: α = F(4,096) = 0.898 for the papers' Azure CDF.
    assert stats.cdf(4096) == pytest.approx(0.898, abs=5e-4)


@settings(max_examples=30, deadline=None)
@given(request_logs, st.integers(1, 1500))
def test_one_statistics_object_answers_widening_and_narrowing_bands(pairs, b) -> None:
    """The band above B is built up to max(γB, 2B) and rebuilt wider on demand: every query, in any
    order, still equals brute force."""
    inputs, outputs = np.array(pairs).T
    workload = workload_from_requests(inputs, outputs, name="random")
    stats = PoolStatistics(workload, 16, prompt_levels=True)
    for gamma in (1.2, 2.0, 3.0, 7.5, 1.5, 2.5):
        _check(stats, workload, 16, b, gamma, 0.5)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 400), st.floats(0.0, 1.0), st.integers(1, 64), st.integers(0, 2**32 - 1))
def test_atoms_of_weight_zero_are_skipped_without_changing_a_sum(atoms, zero_share, chunk, seed) -> None:
    """The prefix tables and prefill histograms that skip atoms of weight 0 (a C&R band's
    incompressible requests, or its compressible ones) hold the very numbers, bit for bit, of the sums
    over every atom."""
    from fleetopt.core import poolstats

    rng = np.random.default_rng(seed)
    totals = np.sort(rng.integers(1, 300, atoms))
    outputs = np.minimum(rng.integers(0, 60, atoms), totals - 1)
    prefill = -(-(totals - outputs) // chunk)
    weights = rng.random(atoms) * np.where(rng.random(atoms) < zero_share, 0.0, 1.0)
    runs = poolstats._run_starts(totals)
    order = np.argsort(prefill, kind="stable")
    keys = (prefill * 1000 + totals)[order]
    run_ends = np.flatnonzero(np.concatenate((keys[1:] != keys[:-1], [True]))) + 1
    last = rng.integers(1, chunk + 1, atoms).astype(np.float64)[order]
    skipping = (
        poolstats._run_prefix_table(prefill, outputs, totals, weights, runs),
        *poolstats._run_cumulative(weights, order, run_ends, last),
    )
    every_atom = poolstats._nonzero_atoms
    try:
        poolstats._nonzero_atoms = lambda weights, ends: (None, ends)
        full = (
            poolstats._run_prefix_table(prefill, outputs, totals, weights, runs),
            *poolstats._run_cumulative(weights, order, run_ends, last),
        )
    finally:
        poolstats._nonzero_atoms = every_atom
    for skipped, summed in zip(skipping, full, strict=True):
        assert skipped.tobytes() == summed.tobytes()


def test_a_histogram_in_key_order_sums_in_that_order() -> None:
    """Atoms already in (prefill level, total) order are not sorted again: the cumulative weight at
    the end of each run is the running sum in the atoms' own order."""
    from fleetopt.core.poolstats import _PrefillHistogram

    rng = np.random.default_rng(5)
    totals = np.sort(rng.integers(1, 500, 2_000))
    weights = rng.random(2_000)
    histogram = _PrefillHistogram(np.ones(2_000, dtype=np.int64), totals, weights)
    ends = np.flatnonzero(np.concatenate((totals[1:] != totals[:-1], [True])))
    assert (
        histogram.cumulative_weight.tobytes() == np.concatenate(([0.0], np.cumsum(weights)[ends])).tobytes()
    )


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 300), st.integers(1, 400), st.booleans(), st.integers(0, 2**32 - 1))
def test_run_prefix_table_is_the_per_atom_table_at_run_ends(atoms, chunk, one_chunk, seed) -> None:
    """The per-run prefix sums (with their shortcuts: zero weights skipped, the P columns taken from
    the W and L columns when every prompt fits one chunk) are the per-atom table's sums at the end of
    each run, bit for bit."""
    from fleetopt.core import poolstats

    rng = np.random.default_rng(seed)
    totals = np.sort(rng.integers(2, 2 * chunk + 50, atoms))
    inputs = np.minimum(rng.integers(1, 2 * chunk + 1, atoms), totals)
    if one_chunk:
        inputs = np.minimum(inputs, chunk)
    outputs = totals - inputs
    prefill = -(-inputs // chunk)
    weights = rng.random(atoms) * np.where(rng.random(atoms) < 0.4, 0.0, 1.0)
    runs = poolstats._run_starts(totals)
    per_atom = poolstats._atom_prefix_table(prefill, outputs, totals, weights)
    ends = np.append(runs[1:], atoms)  # prefix index just past each run
    expected = np.concatenate((per_atom[:, :1], per_atom[:, ends]), axis=1)
    assert (
        poolstats._run_prefix_table(prefill, outputs, totals, weights, runs).tobytes() == expected.tobytes()
    )
