"""Arrival processes (core/arrivals.py): window counts, the rate basis, the within-window dispersion,
each pool's C_a², and the arrivals a simulation replays at another mean rate."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom

from fleetopt.core.arrivals import (
    ArrivalSpec,
    WindowCounts,
    basis_factor,
    basis_rate_per_s,
    dispersion_at,
    dispersion_curve,
    parse_rate_basis,
    pool_arrival_scv,
    profile_arrivals,
    rate_profile_of,
    replay_at_rate,
    with_periodic_warmup,
    within_window_dispersion,
    within_window_dispersion_of_times,
)
from fleetopt.core.crosscheck import min_requests_for_quantile
from fleetopt.core.simulate import quantile_interval
from fleetopt.errors import ValidationError


def _nhpp(rng: np.random.Generator, rates_per_s: list[float], window_s: float) -> np.ndarray:
    """Poisson arrivals whose rate is constant within each window (the null model of the dispersion)."""
    counts = rng.poisson(np.asarray(rates_per_s) * window_s)
    starts = np.repeat(np.arange(len(rates_per_s)) * window_s, counts)
    # an arrival at 0, so that the windows measured from the first arrival are the rate's windows
    return np.sort(np.append(starts + rng.random(starts.size) * window_s, 0.0))


# ------------------------------------------------------------------------------------ window counts


def test_window_counts_match_numpy_histogram_and_drop_the_partial_window() -> None:
    rng = np.random.default_rng(7)
    times = np.sort(rng.random(5_000) * 1_000.0) + 12.5
    counts = WindowCounts.from_times(times, 60.0)
    full = int((times[-1] - times[0]) // 60.0)
    edges = times[0] + 60.0 * np.arange(full + 1)
    expected, _ = np.histogram(times, bins=edges)
    expected[-1] -= int((times == edges[-1]).sum())  # numpy closes the last bin on the right
    assert counts.windows == full == 16
    assert counts.counts.tolist() == expected.tolist()
    assert WindowCounts.from_times(np.array([0.0, 10.0]), 60.0) is None


def test_a_summarys_windows_give_the_logs_window_counts(shared_dir) -> None:
    """workload_window_counts on a log's times and on its summary (0.1 s windows) alike: the full
    UTC minutes of the clock, and the first one's UTC start."""
    from fleetopt.core.arrivals import workload_window_counts
    from fleetopt.core.summary import summary_from_workload, workload_from_summary
    from fleetopt.io.workloads import load_workload

    log = load_workload("azure-2023-code")
    summary = workload_from_summary(summary_from_workload(log, "code", window_us=100_000), "summary")
    from_log, from_summary = workload_window_counts(log, 60.0), workload_window_counts(summary, 60.0)
    assert from_log.counts.tolist() == from_summary.counts.tolist() and from_log.windows == 56
    assert from_log.origin_epoch_s == from_summary.origin_epoch_s
    assert from_log.origin_epoch_s % 60 == 0 and from_log.origin_epoch_s > log.arrival_span.first_us / 1e6


def test_too_many_windows_are_refused_with_a_way_out() -> None:
    with pytest.raises(ValidationError, match="use a longer --rate-window"):
        WindowCounts.from_times(np.array([0.0, 1e12]), 60.0)


# ------------------------------------------------------------------------------------ rate basis


def test_rate_basis_names_and_factor_never_below_one() -> None:
    assert [parse_rate_basis(t) for t in ("mean", "PEAK", "p99", "p99.9", "p50")] == [
        "mean", "peak", "p99", "p99.9", "p50",
    ]  # fmt: skip
    for bad in ("p100", "p0", "max", "p"):
        with pytest.raises(ValidationError, match="use mean, peak, or pNN"):
            parse_rate_basis(bad)
    # one busy window among quiet ones: the median is below the mean, the peak far above
    counts = WindowCounts(60.0, np.array([10, 10, 10, 10, 60]))
    assert basis_rate_per_s(counts, "peak") == 1.0 and basis_rate_per_s(counts, "mean") == 20 / 60
    assert basis_factor(counts, "peak") == pytest.approx(3.0)
    assert basis_factor(counts, "p50") == 1.0  # 10/60 < the mean: never sized below the mean
    assert basis_factor(counts, "p90") == pytest.approx(3.0)  # inverted CDF: the 5th of 5 windows
    profile = rate_profile_of(counts)
    assert profile.peak_to_mean_ratio == pytest.approx(3.0)
    assert profile.index_of_dispersion == pytest.approx(np.var([10, 10, 10, 10, 60]) / 20)


# ------------------------------------------------------------------------------------ dispersion


def test_within_window_dispersion_by_hand() -> None:
    # windows of J = 2 sub-windows: [2, 0] and [1, 1]: Σ(n − N/J)² = 1 + 1 + 0 + 0 = 2 over 4·(1 − 1/2)
    assert within_window_dispersion(WindowCounts(1.0, np.array([2, 0, 1, 1])), 2) == pytest.approx(1.0)
    # all four arrivals in one half: (4 − 2)² + (0 − 2)² = 8 over 4·½
    assert within_window_dispersion(WindowCounts(1.0, np.array([4, 0])), 2) == pytest.approx(4.0)
    # evenly spread: no dispersion at all
    assert within_window_dispersion(WindowCounts(1.0, np.array([3, 3, 3, 3])), 2) == 0.0


def test_dispersion_is_one_for_poisson_arrivals_whatever_the_window_profile() -> None:
    """Given the window counts the sub-window counts are multinomial, so E[D] = 1 exactly even when
    the rate swings 20× between windows; D has about 2/(W·(J − 1)) variance (χ²-like)."""
    rng = np.random.default_rng(11)
    rates = list(rng.choice([0.5, 2.0, 10.0], size=400))
    times = _nhpp(rng, rates, 60.0)
    for division in (2, 10, 60):
        value = within_window_dispersion_of_times(times, 60.0, division)
        sd = math.sqrt(2.0 / (399 * (division - 1)))
        assert abs(value - 1.0) < 5 * sd + 0.01, (division, value)
    # while the plain index of dispersion of the window counts sees the profile
    assert rate_profile_of(WindowCounts.from_times(times, 60.0)).index_of_dispersion > 50


def test_bursts_inside_windows_raise_the_dispersion() -> None:
    rng = np.random.default_rng(5)
    base = _nhpp(rng, [2.0] * 200, 60.0)
    bursts = np.concatenate([start + rng.random(40) * 2.0 for start in rng.random(50) * 12_000.0])
    value = within_window_dispersion_of_times(np.sort(np.concatenate((base, bursts))), 60.0, 30)
    # a burst of n inside one 2 s sub-window adds about n² to Σ(n_kj − N_k/J)²: D ≈ 1 + Σn²/N
    expected = 1.0 + 50 * 40**2 / (base.size + bursts.size)
    assert 1.0 + 0.5 * (expected - 1.0) < value < 1.0 + 1.5 * (expected - 1.0)


def test_dispersion_from_times_equals_dispersion_from_a_one_second_summary(shared_dir) -> None:
    """The curve's scales are whole seconds (30 s down to 1 s for 1-minute windows), so a summary at
    the default 1 s windows gives the log's curve exactly (both count the same arrivals in the same
    clock sub-windows); a 10 s summary gives the scales from 10 s up, the same values."""
    from fleetopt.core.summary import summary_from_workload, workload_from_summary
    from fleetopt.io.workloads import load_workload

    log = load_workload("azure-2023-code")
    second = workload_from_summary(summary_from_workload(log, "code", window_us=1_000_000), "second")
    coarse = workload_from_summary(summary_from_workload(log, "code", window_us=10_000_000), "coarse")
    from_log = dict(dispersion_curve(log, 60.0))
    assert sorted(from_log) == [1.0, 2.0, 3.0, 4.0, 6.0, 10.0, 15.0, 20.0, 30.0]
    assert dict(dispersion_curve(second, 60.0)) == pytest.approx(from_log, rel=1e-12)
    from_coarse = dict(dispersion_curve(coarse, 60.0))
    assert sorted(from_coarse) == [10.0, 20.0, 30.0]
    assert from_coarse == pytest.approx({t: from_log[t] for t in from_coarse}, rel=1e-12)
    assert from_log[30.0] > 50  # the coding file is bursty within minutes
    # the same times, unrounded, at a sub-second scale the curve leaves out: still measurable directly
    times = log.arrival_times_s
    assert within_window_dispersion_of_times(times, 60.0, 600) < from_log[1.0]


def test_pool_arrival_scv_thins_and_interpolates() -> None:
    curve = ((30.0, 41.0), (10.0, 21.0), (1.0, 3.0))
    assert dispersion_at(curve, 10.0) == 21.0
    assert dispersion_at(curve, 100.0) == 41.0 and dispersion_at(curve, 0.01) == 3.0  # held at the ends
    # between 10 s and 30 s, linear in log τ: at √300 s, halfway
    assert dispersion_at(curve, math.sqrt(300.0)) == pytest.approx(31.0)
    # C_a² = 1 + p·(D(2h) − 1): a quarter of the traffic, held 5 s (D(10 s) = 21)
    assert pool_arrival_scv(curve, 0.25, 5.0) == pytest.approx(1.0 + 0.25 * 20.0)
    assert pool_arrival_scv((), 1.0, 5.0) == 1.0
    assert pool_arrival_scv(((1.0, 0.2),), 1.0, 5.0) == 1.0  # never smoother than Poisson


# ------------------------------------------------------------------------------------ replay


def test_replay_at_the_log_rate_is_the_log_and_below_it_thins() -> None:
    rng = np.random.default_rng(1)
    times = np.sort(rng.random(10_000) * 3_600.0)
    assert np.array_equal(replay_at_rate(times, 1.0, 60.0, rng), times - times[0])
    thinned = replay_at_rate(times, 0.3, 60.0, np.random.default_rng(2))
    sd = math.sqrt(10_000 * 0.3 * 0.7)
    assert abs(thinned.size - 3_000) < 5 * sd
    assert set(thinned.tolist()) <= set((times - times[0]).tolist())


def test_replay_keeps_the_time_scale_and_the_minute_profile() -> None:
    """At 50× the log's rate the replay spans the log's own hour (not 72 s), and every minute holds
    about 50× the log's count of that minute."""
    rng = np.random.default_rng(4)
    rates = [2.0 + 6.0 * (k % 10 == 3) for k in range(60)]  # a busy minute every ten
    times = _nhpp(rng, rates, 60.0)
    replayed = replay_at_rate(times, 50.0, 60.0, np.random.default_rng(9))
    assert replayed.max() > 0.95 * times.max()
    log = WindowCounts.from_times(times, 60.0).counts.astype(float)
    again = WindowCounts.from_times(replayed, 60.0).counts.astype(float)[: log.size]
    assert again.sum() == pytest.approx(50.0 * log.sum(), rel=0.01)
    busy = [k for k in range(log.size) if k % 10 == 3]
    # a copy is shifted by less than half a window, so a busy minute keeps at least half its excess
    assert again[busy].mean() / again.mean() > 1.0 + 0.5 * (log[busy].mean() / log.mean() - 1.0)


def test_profile_arrivals_are_poisson_per_window() -> None:
    counts = WindowCounts(60.0, np.array([100, 0, 300, 50]))
    times = profile_arrivals(counts, 4.0, np.random.default_rng(0))
    per_window = np.bincount((times // 60.0).astype(int), minlength=4)
    assert per_window[1] == 0
    for expected, got in zip([400, 0, 1200, 200], per_window, strict=True):
        assert abs(got - expected) <= 5 * math.sqrt(max(expected, 1))


def test_periodic_warmup_puts_the_pattern_end_before_it() -> None:
    times = np.array([0.0, 1.0, 8.0, 9.0])
    out, warm = with_periodic_warmup(times, 10.0, 2.5)
    assert warm == 2 and out.tolist() == [0.5, 1.5, 2.5, 3.5, 10.5, 11.5]
    # a replay's period is its span plus one mean gap: 9 + 3 = 12 s; 4.5 s of warm-up hold 8 and 9
    spec = ArrivalSpec("replay", times_s=times, rate_factor=1.0, warmup_s=4.5, max_requests=3)
    generated, warmup = spec.generate(np.random.default_rng(0))
    assert spec.period_s == 12.0
    assert warmup == 2 and generated.tolist() == [0.5, 1.5, 4.5, 5.5, 12.5]


# ------------------------------------------------------------------------------------ P99 intervals


def test_min_requests_for_a_p99_interval() -> None:
    n = min_requests_for_quantile(0.99)
    assert n == 368
    assert 1 - 0.99**n >= 0.975 > 1 - 0.99 ** (n - 1)


def test_quantile_interval_is_the_binomial_order_statistic_interval() -> None:
    values = np.arange(1.0, 1001.0)  # x_(k) = k
    low, high = quantile_interval(values, 0.99)
    assert low == binom.ppf(0.025, 1000, 0.99) and high == binom.ppf(0.975, 1000, 0.99) + 1
    assert quantile_interval(np.arange(100.0), 0.99)[1] == math.inf  # 100 samples bound no P99
    # coverage on uniform samples, whose P99 is 0.99
    rng = np.random.default_rng(2)
    hits = sum(
        low <= 0.99 <= high for low, high in (quantile_interval(rng.random(500), 0.99) for _ in range(400))
    )
    assert 0.92 <= hits / 400 <= 0.995


@pytest.mark.parametrize("factor", [1.0, 0.4, 3.5])
def test_a_replay_knows_which_request_each_arrival_replays(factor: float) -> None:
    """``generate_indexed`` draws what ``generate`` draws, and each arrival's index names the log
    request it replays: its time is that request's, shifted by one of its copy's offsets (mod the
    period); at f = 1 it is the log itself, request by request (the warm-up replays the log's end)."""
    rng = np.random.default_rng(4)
    times = np.sort(rng.uniform(0.0, 600.0, 500))
    spec = ArrivalSpec("replay", times_s=times[::-1].copy(), rate_factor=factor, warmup_s=30.0)
    plain, warm = spec.generate(np.random.default_rng(11))
    indexed, warm_indexed, index = spec.generate_indexed(np.random.default_rng(11))
    assert np.array_equal(plain, indexed) and warm == warm_indexed and index.size == plain.size
    own = spec.times_s[index] - times[0]
    shift = np.mod(indexed - 30.0 - own, spec.period_s)  # (after 30 s of warm-up)
    offsets = np.unique(np.round(np.minimum(shift, spec.period_s - shift), 9))
    assert offsets.size <= max(1, math.ceil(factor))
    if factor == 1.0:
        assert np.array_equal(spec.times_s[index[warm:]], times)
