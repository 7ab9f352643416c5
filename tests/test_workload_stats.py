"""Exact workload statistics against brute force over raw rows, FACTS §5 and hypothesis."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetopt.core.workload import parse_split_model, workload_from_cdf, workload_from_requests
from fleetopt.core.workload_stats import (
    arrival_statistics,
    classify_archetype,
    ks_distance,
    summarize_workload,
    weighted_quantile,
)
from fleetopt.errors import ValidationError
from fleetopt.io.workloads import load_workload

SHARED = Path(__file__).resolve().parents[2] / "shared"
AZURE_DIR = SHARED / "traces" / "azure-2023"


def _raw_azure(part: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Brute-force read of one Azure file with the standard library (independent of the reader)."""
    import datetime

    path = AZURE_DIR / f"AzureLLMInferenceTrace_{part}.csv"
    if not path.is_file():
        pytest.skip("../shared traces not present")
    times, inputs, outputs = [], [], []
    for line in path.read_text().splitlines()[1:]:
        stamp, context, generated = line.split(",")
        moment = datetime.datetime.strptime(stamp[:26], "%Y-%m-%d %H:%M:%S.%f")
        times.append(moment.timestamp())
        inputs.append(int(context))
        outputs.append(int(generated))
    return np.array(times), np.array(inputs), np.array(outputs)


# ------------------------------------------------------------------ FACTS §5: Azure 2023


@pytest.mark.parametrize("source", ["shared", "bundled"])
def test_azure_2023_both_files_match_facts_5(source: str) -> None:
    """FACTS §5 / FleetOpt §7.1: 28,185 requests, mean 1,587.95, p90 4,106, p99 7,445, F(4,096) = 0.8982."""
    if source == "shared":
        _raw_azure("conv")  # skips when ../shared is absent
        conv = load_workload(str(AZURE_DIR / "AzureLLMInferenceTrace_conv.csv"))
        code = load_workload(str(AZURE_DIR / "AzureLLMInferenceTrace_code.csv"))
        assert conv.request_count + code.request_count == 28_185
        combined = workload_from_requests(
            np.concatenate([np.repeat(w.input_tokens, w.weights.astype(int)) for w in (conv, code)]),
            np.concatenate([np.repeat(w.output_tokens, w.weights.astype(int)) for w in (conv, code)]),
            name="both",
        )
    else:
        combined = load_workload("azure-2023")
    summary = summarize_workload(combined, b_short_tokens=4096)
    assert summary["request_count"] == 28_185
    assert round(summary["tokens"]["total"]["mean"], 2) == 1587.95
    assert summary["tokens"]["total"]["p50"] == 1417
    assert summary["tokens"]["total"]["p90"] == 4106
    assert summary["tokens"]["total"]["p99"] == 7445
    assert summary["tokens"]["total"]["max"] == 14_089
    assert round(summary["cdf_at_tokens"]["4096"], 4) == 0.8982
    assert round(summary["tokens"]["input"]["mean"]) == 1434
    assert round(summary["tokens"]["output"]["mean"], 1) == 153.8


def test_bundled_azure_2023_arrivals_match_facts_5() -> None:
    """FACTS §5 'both' row: 8.02 req/s, inter-arrival CV 1.33 (rate = (n − 1)/span)."""
    arrivals = summarize_workload(load_workload("azure-2023"))["arrivals"]
    assert round(arrivals["mean_rate_per_s"], 2) == 8.02
    assert round(arrivals["interarrival_cv"], 2) == 1.33


@pytest.mark.parametrize(
    "part, rows, span_s, rate, cv, mean_in, mean_out, quantiles_linear",
    [
        ("code", 8_819, 3_436, 2.57, 13.2, 2_048, 27.9, (1_493, 5_208, 7_462)),
        ("conv", 19_366, 3_502, 5.53, 1.09, 1_155, 211.1, (1_412, 2_820, 4_259)),
    ],
)
@pytest.mark.parametrize("source", ["shared", "bundled"])
def test_azure_2023_per_file_rows_match_facts_5(
    source, part, rows, span_s, rate, cv, mean_in, mean_out, quantiles_linear
) -> None:
    """FACTS §5 per-file rows. Its p50/p90/p99 are numpy's default (linear) quantiles."""
    if source == "shared":
        _raw_azure(part)
        workload = load_workload(str(AZURE_DIR / f"AzureLLMInferenceTrace_{part}.csv"))
    else:
        workload = load_workload(f"azure-2023-{part}")
    summary = summarize_workload(workload)
    assert summary["request_count"] == rows
    assert round(summary["arrivals"]["span_s"]) == span_s
    assert round(summary["arrivals"]["mean_rate_per_s"], 2) == rate
    assert round(summary["arrivals"]["interarrival_cv"], len(str(cv).split(".")[1])) == cv
    assert round(summary["tokens"]["input"]["mean"]) == mean_in
    assert round(summary["tokens"]["output"]["mean"], 1) == mean_out
    linear = summarize_workload(workload, quantile_method="linear")["tokens"]["total"]
    assert tuple(round(linear[k]) for k in ("p50", "p90", "p99")) == quantiles_linear


@pytest.mark.parametrize("part", ["conv", "code"])
def test_reader_equals_brute_force_over_raw_rows(part: str) -> None:
    """Every statistic of the fast reader equals numpy on the raw arrays read by the stdlib."""
    times, inputs, outputs = _raw_azure(part)
    workload = load_workload(str(AZURE_DIR / f"AzureLLMInferenceTrace_{part}.csv"))
    summary = summarize_workload(workload)
    for column, values in (("input", inputs), ("output", outputs), ("total", inputs + outputs)):
        row = summary["tokens"][column]
        assert row["mean"] == pytest.approx(values.mean(), rel=1e-12)
        assert row["max"] == values.max()
        for label, q in (("p50", 50), ("p90", 90), ("p99", 99)):
            assert row[label] == np.percentile(values, q, method="inverted_cdf")
    for tokens, value in summary["cdf_at_tokens"].items():
        assert value == np.mean(inputs + outputs <= int(tokens))
    gaps = np.diff(np.sort(times))
    assert summary["arrivals"]["span_s"] == pytest.approx(times.max() - times.min(), abs=1e-5)
    assert summary["arrivals"]["interarrival_cv"] == pytest.approx(gaps.std() / gaps.mean(), rel=1e-6)


# ------------------------------------------------------------------ quantiles, arrivals, KS


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(min_value=1, max_value=60), min_size=1, max_size=40),
    st.sampled_from([0.0, 0.01, 0.1, 0.25, 0.5, 0.9, 0.99, 1.0]),
)
def test_weighted_quantiles_equal_numpy_on_expanded_rows(values: list[int], probability: float) -> None:
    raw = np.array(values)
    distinct, counts = np.unique(raw, return_counts=True)
    for method, numpy_method in (("inverted-cdf", "inverted_cdf"), ("linear", "linear")):
        expected = np.quantile(raw, probability, method=numpy_method)
        got = weighted_quantile(distinct, counts.astype(float), probability, method=method)
        assert got == pytest.approx(expected, rel=1e-12, abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 50), st.integers(0, 50), st.integers(0, 1_000_000).map(lambda ms: ms / 1000)
        ),
        min_size=2,
        max_size=60,
    ).filter(lambda rows: all(a + b >= 1 for a, b, _ in rows))
)
def test_summary_of_random_small_logs_equals_brute_force(rows) -> None:
    inputs = np.array([r[0] for r in rows])
    outputs = np.array([r[1] for r in rows])
    times = np.array([r[2] for r in rows])
    summary = summarize_workload(
        workload_from_requests(inputs, outputs, name="random", arrival_times_s=times), b_short_tokens=30
    )
    totals = inputs + outputs
    assert summary["request_count"] == len(rows)
    for column, values in (("input", inputs), ("output", outputs), ("total", totals)):
        row = summary["tokens"][column]
        assert row["mean"] == pytest.approx(values.mean())
        assert row["max"] == values.max()
        assert row["p90"] == np.percentile(values, 90, method="inverted_cdf")
    assert summary["archetype"]["alpha"] == pytest.approx(np.mean(totals <= 30))
    assert summary["archetype"]["borderline"]["1.5"]["beta"] == pytest.approx(
        np.mean((totals > 30) & (totals <= 45))
    )
    sorted_times = np.sort(times)
    span = sorted_times[-1] - sorted_times[0]
    arrivals = summary["arrivals"]
    peak = max(np.sum((sorted_times >= t) & (sorted_times < t + 60)) for t in sorted_times)
    assert arrivals["peak_requests_per_min"] == peak
    if span > 0:
        gaps = np.diff(sorted_times)
        assert arrivals["mean_rate_per_s"] == pytest.approx((len(rows) - 1) / span)
        assert arrivals["interarrival_scv"] == pytest.approx(
            gaps.var() / gaps.mean() ** 2, rel=1e-9, abs=1e-12
        )


def test_arrival_statistics_hand_derived() -> None:
    """Arrivals at 0, 1, 3 s: gaps 1 and 2 → mean 1.5, var 0.25, SCV 1/9, rate 2/3 req/s."""
    stats = arrival_statistics(np.array([3.0, 0.0, 1.0]))
    assert stats.span_s == 3.0
    assert stats.mean_rate_per_s == pytest.approx(2 / 3)
    assert stats.interarrival_scv == pytest.approx(1 / 9)
    assert stats.interarrival_cv == pytest.approx(1 / 3)
    assert stats.peak_requests_per_min == 3


def test_arrival_statistics_of_one_arrival_has_no_rate() -> None:
    stats = arrival_statistics(np.array([5.0]))
    assert stats.mean_rate_per_s is None and stats.peak_requests_per_min == 1


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(1, 30), min_size=1, max_size=30),
    st.lists(st.integers(1, 30), min_size=1, max_size=30),
)
def test_ks_distance_equals_brute_force_over_all_lengths(a: list[int], b: list[int]) -> None:
    wa = workload_from_requests(np.array(a), np.zeros(len(a), dtype=int), name="a")
    wb = workload_from_requests(np.array(b), np.zeros(len(b), dtype=int), name="b")
    expected = max(abs(np.mean(np.array(a) <= x) - np.mean(np.array(b) <= x)) for x in range(0, 32))
    assert ks_distance(wa, wb) == pytest.approx(expected, abs=1e-15)
    assert ks_distance(wb, wa) == ks_distance(wa, wb)
    assert ks_distance(wa, wa) == 0.0


def test_ks_distance_log_versus_its_cdf() -> None:
    """Masses 1/2 at 10 and 20 vs the uniform CDF on 1..20: sup |F − G| = 9/20 at L = 9 (hand)."""
    log = workload_from_requests(np.array([10, 20]), np.array([0, 0]), name="log")
    cdf = workload_from_cdf(np.array([20]), np.array([1.0]), name="cdf")
    assert ks_distance(log, cdf) == pytest.approx(0.45)


# ------------------------------------------------------------------ archetypes (FleetOpt §2.4, Table 2)


@pytest.mark.parametrize(
    "alpha, archetype", [(0.95, "I"), (0.90, "I"), (0.8999, "II"), (0.5, "II"), (0.4999, "III"), (0.0, "III")]
)
def test_archetype_rule(alpha: float, archetype: str) -> None:
    assert classify_archetype(alpha) == archetype


@pytest.mark.parametrize(
    "name, b_short, alpha, beta, archetype",
    [
        ("azure", 4096, 0.898, 0.078, "II"),  # paper: I/II
        ("lmsys-multiturn", 1536, 0.909, 0.046, "I"),  # paper: I/II
        ("agent-heavy", 8192, 0.740, 0.112, "II"),
    ],
)
def test_bundled_cdfs_reproduce_fleetopt_table_2(name, b_short, alpha, beta, archetype) -> None:
    """FleetOpt Table 2: α = F(B) and β = F(1.5B) − F(B) of the three workloads."""
    summary = summarize_workload(load_workload(name), b_short_tokens=b_short)["archetype"]
    assert round(summary["alpha"], 3) == alpha
    assert round(summary["borderline"]["1.5"]["beta"], 3) == beta
    assert summary["archetype"] == archetype


def test_lmsys_and_lmsys_multiturn_are_the_same_distribution() -> None:
    """FACTS §1: the reference's two LMSYS files are byte-identical."""
    assert ks_distance(load_workload("lmsys"), load_workload("lmsys-multiturn")) == 0.0


# ------------------------------------------------------------------ CDF expansion and split models


def test_cdf_expansion_is_exact_piecewise_uniform() -> None:
    """F = 0.5 at 4, 1 at 8: each of 1..4 gets 1/8 and each of 5..8 gets 1/8; mean = 4.5 (hand)."""
    workload = workload_from_cdf(np.array([4, 8]), np.array([0.5, 1.0]), name="hand")
    assert workload.total_tokens.tolist() == list(range(1, 9))
    assert np.allclose(workload.weights, 1 / 8)
    summary = summarize_workload(workload)
    assert summary["tokens"]["total"]["mean"] == pytest.approx(4.5)
    assert summary["tokens"]["total"]["p50"] == 4


def test_cdf_mean_matches_bucket_midpoints() -> None:
    """A uniform bucket (a, b] of integers has mean (a + 1 + b)/2; the CDF's mean is the ΔF-weighted sum."""
    workload = load_workload("azure")
    table = workload.metadata
    edges = np.concatenate(([0], table["breakpoints_tokens"]))
    masses = np.diff(np.concatenate(([0.0], table["cumulative_fractions"])))
    expected = float(np.sum(masses * (edges[:-1] + 1 + edges[1:]) / 2))
    assert summarize_workload(workload)["tokens"]["total"]["mean"] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    "spec, total, expected",
    [
        ("fleet-sim", 1000, (800, 200)),
        ("fleet-sim", 1, (1, 1)),  # the reference's max(1, ·) on both sides
        ("input-fraction:0.9", 1000, (900, 100)),
        ("input-fraction:0.9", 7, (6, 1)),
        ("output-tokens:256", 1000, (744, 256)),
        ("output-tokens:256", 100, (1, 99)),
    ],
)
def test_split_models(spec: str, total: int, expected: tuple[int, int]) -> None:
    inputs, outputs = parse_split_model(spec).apply(np.array([total]))
    assert (int(inputs[0]), int(outputs[0])) == expected


@pytest.mark.parametrize(
    "spec, message",
    [
        (
            "input-fraction:1.5",
            "split model 'input-fraction:1.5': the input fraction must be a number in (0, 1)",
        ),
        ("output-tokens:x", "split model 'output-tokens:x': the output length must be a whole number ≥ 1"),
        ("half", "unknown split model 'half' (allowed: fleet-sim, input-fraction:F, output-tokens:N)"),
    ],
)
def test_bad_split_models(spec: str, message: str) -> None:
    with pytest.raises(ValidationError) as info:
        parse_split_model(spec)
    assert str(info.value) == message


def test_aggregation_counts_distinct_pairs() -> None:
    workload = workload_from_requests(np.array([3, 1, 3, 2, 3]), np.array([1, 3, 1, 2, 0]), name="pairs")
    assert workload.total_tokens.tolist() == [3, 4, 4, 4]
    assert workload.input_tokens.tolist() == [3, 1, 2, 3]
    assert workload.weights.tolist() == [1, 1, 1, 2]
    assert math.isclose(workload.total_weight, 5)


def test_aggregation_of_wide_keys_uses_the_sort_path() -> None:
    """Key space beyond the dense-count limit: same atoms as a Python Counter."""
    from collections import Counter

    rng = np.random.default_rng(7)
    inputs = rng.integers(0, 200_000, 5_000)
    outputs = rng.integers(1, 100_000, 5_000)
    workload = workload_from_requests(inputs, outputs, name="wide")
    expected = sorted(Counter(zip((inputs + outputs).tolist(), inputs.tolist(), strict=True)).items())
    assert list(zip(workload.total_tokens.tolist(), workload.input_tokens.tolist(), strict=True)) == [
        k for k, _ in expected
    ]
    assert workload.weights.tolist() == [float(c) for _, c in expected]


# -- the rate profile of a log (issue 14, item 1) ----------------------------------------------


@pytest.mark.parametrize("name", ["code", "conv"])
def test_rate_profile_of_the_azure_logs_against_numpy_over_the_raw_timestamps(shared_dir, name) -> None:
    """Counts per whole minute from the first arrival, computed here from the raw CSV's TIMESTAMP
    column with numpy alone, against the bundled log's profile."""
    import numpy as np

    from fleetopt.core.workload_stats import rate_profile
    from fleetopt.io.workloads import load_workload

    raw = shared_dir / "traces" / "azure-2023" / f"AzureLLMInferenceTrace_{name}.csv"
    stamps = np.loadtxt(raw, delimiter=",", skiprows=1, usecols=0, dtype="datetime64[us]")
    seconds = (stamps - stamps.min()).astype(np.int64) / 1e6
    full = int(seconds.max() // 60)
    counts = np.histogram(seconds, bins=np.arange(full + 1) * 60.0)[0].astype(float)
    profile = rate_profile(load_workload(f"azure-2023-{name}").arrival_times_s, 60.0)
    assert profile.windows == full
    assert profile.mean_rate_per_s == pytest.approx(counts.mean() / 60, rel=1e-12)
    assert profile.peak_rate_per_s == pytest.approx(counts.max() / 60, rel=1e-12)
    assert profile.index_of_dispersion == pytest.approx(counts.var() / counts.mean(), rel=1e-9)
    assert profile.rate_p90_per_s == pytest.approx(np.percentile(counts, 90, method="inverted_cdf") / 60)


def test_rate_profile_of_evenly_spaced_arrivals_has_no_dispersion() -> None:
    """One arrival every second for ten minutes: 60 per minute in every window, Var = 0."""
    import numpy as np

    from fleetopt.core.workload_stats import rate_profile

    profile = rate_profile(np.arange(601.0), 60.0)
    assert profile.windows == 10 and profile.mean_rate_per_s == 1.0 == profile.peak_rate_per_s
    assert profile.index_of_dispersion == 0.0
    assert rate_profile(np.array([0.0, 10.0]), 60.0) is None  # shorter than one window


@pytest.mark.parametrize("name", ["code", "conv"])
def test_rate_profile_on_utc_minutes_against_numpy_over_the_raw_timestamps(shared_dir, name) -> None:
    """workload show's profile counts whole UTC minutes between the first and last arrival (the
    clock windows a summary keeps): numpy over the raw CSV's TIMESTAMP column, the bundled log and
    the raw CSV read by fleetopt all agree."""
    import numpy as np

    from fleetopt.core.workload_stats import workload_rate_profile
    from fleetopt.io.workloads import load_workload

    raw = shared_dir / "traces" / "azure-2023" / f"AzureLLMInferenceTrace_{name}.csv"
    stamps = np.loadtxt(raw, delimiter=",", skiprows=1, usecols=0, dtype="datetime64[us]").astype(np.int64)
    minute = 60_000_000
    first, last = -(-stamps.min() // minute), stamps.max() // minute
    index = stamps // minute - first
    counts = np.bincount(index[(index >= 0) & (index < last - first)], minlength=last - first).astype(float)
    for workload in (load_workload(f"azure-2023-{name}"), load_workload(str(raw))):
        profile = workload_rate_profile(workload, 60.0)
        assert profile.windows == last - first
        assert profile.mean_rate_per_s == pytest.approx(counts.mean() / 60, rel=1e-12)
        assert profile.peak_rate_per_s == pytest.approx(counts.max() / 60, rel=1e-12)
        assert profile.index_of_dispersion == pytest.approx(counts.var() / counts.mean(), rel=1e-9)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.floats(0.0, 600.0), min_size=1, max_size=400),
    st.sampled_from([60.0, 1.0, 37.5]),
    st.booleans(),
    st.sampled_from([1.0, 0.1, 0.01]),
)
def test_sliding_window_peak_matches_a_search_from_every_arrival(
    times, window_s, whole_seconds, scale
) -> None:
    """The bounded search gives the most arrivals in [t_i, t_i + w) over every arrival i, as a binary
    search from every arrival does (ties, whole seconds and window multiples included; dense logs,
    where the bounds prune, and sparse ones, searched in full)."""
    from fleetopt.core.workload_stats import sliding_window_peak

    array = np.sort(np.round(times) if whole_seconds else np.asarray(times)) * scale
    every = int((np.searchsorted(array, array + window_s, side="left") - np.arange(array.size)).max())
    assert sliding_window_peak(array, window_s) == every


@settings(max_examples=40, deadline=None)
@given(st.integers(4097, 30_000), st.integers(1, 120_000), st.integers(0, 2**32 - 1))
def test_fingerprint_quantiles_by_counting_equal_those_by_sorting(size, top, seed) -> None:
    """A plan fingerprint's token quantiles of a big unsorted log (counted by value) are the
    inverted-CDF quantiles of the sorted sample (smallest v with F(v) ≥ level)."""
    from fleetopt.io.plans import FINGERPRINT_LEVELS, _weighted_quantiles

    rng = np.random.default_rng(seed)
    values = rng.integers(0, top, size)
    weights = rng.integers(1, 5, size).astype(np.float64)
    weights /= weights.sum()
    order = np.argsort(values, kind="stable")
    cumulative = np.cumsum(weights[order])
    cumulative /= cumulative[-1]
    positions = np.searchsorted(cumulative, np.asarray(FINGERPRINT_LEVELS) * (1 - 1e-12), side="left")
    expected = [int(values[order][min(p, size - 1)]) for p in positions]
    assert _weighted_quantiles(values, weights, FINGERPRINT_LEVELS) == expected


def _searched_from_every_arrival(times: np.ndarray, window_s: float) -> int:
    """The most arrivals in [t_i, t_i + w): one binary search of the whole array per arrival."""
    return int((np.searchsorted(times, times + window_s, side="left") - np.arange(times.size)).max())


@settings(max_examples=60, deadline=None)
@given(
    st.integers(2, 6_000),
    st.sampled_from(["grid", "uniform", "bursty", "ties"]),
    st.sampled_from([60.0, 1.0, 0.5]),
    st.integers(0, 2**32 - 1),
    st.integers(3, 700),
)
def test_sliding_window_peak_in_blocks_matches_a_search_from_every_arrival(
    count, kind, window_s, seed, block
) -> None:
    """Binned block by block, searched block by block and, for evenly spread arrivals, bisected on the
    count: the peak is still the most arrivals in [t_i, t_i + w) over every arrival (small blocks, so
    every log spans many of them; a jittered grid is the evenly spread case, exponential gaps with
    bursts the pruned one, rounded times give ties)."""
    from fleetopt.core import workload_stats

    rng = np.random.default_rng(seed)
    scale = window_s / 60.0
    if kind == "grid":
        times = (np.arange(count) + rng.random(count)) * 0.1 * scale
    elif kind == "uniform":
        times = np.sort(rng.random(count)) * count * 0.05 * scale
    elif kind == "bursty":
        gaps = rng.exponential(0.1, count) * np.where(rng.random(count) < 0.05, 30.0, 1.0)
        times = np.cumsum(gaps) * scale
    else:
        times = np.sort(np.round(rng.random(count) * count * 0.02)) * scale
    times = np.sort(times - times[0])
    saved = workload_stats._BIN_BLOCK, workload_stats.SEARCH_BLOCK
    try:
        workload_stats._BIN_BLOCK = workload_stats.SEARCH_BLOCK = block
        assert workload_stats.sliding_window_peak(times, window_s) == _searched_from_every_arrival(
            times, window_s
        )
        assert workload_stats._most_in_windows_from(times, None, window_s, block) == (
            _searched_from_every_arrival(times, window_s)
        )
    finally:
        workload_stats._BIN_BLOCK, workload_stats.SEARCH_BLOCK = saved


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.integers(-50, 400), min_size=1, max_size=300),
    st.lists(st.integers(-60, 420), min_size=1, max_size=300),
    st.sampled_from(["left", "right"]),
    st.integers(1, 40),
)
def test_searchsorted_in_blocks_is_numpy_searchsorted(haystack, needles, side, block) -> None:
    from fleetopt.core.workload_stats import searchsorted_ascending

    array, keys = np.sort(np.asarray(haystack)), np.sort(np.asarray(needles))
    expected = np.searchsorted(array, keys, side=side)
    assert np.array_equal(searchsorted_ascending(array, keys, side, block), expected)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(-3_000, 3_000), min_size=1, max_size=400),
    st.integers(1, 500),
    st.booleans(),
    st.booleans(),
)
def test_counts_between_edges_bin_every_moment(moments, width, weighted, shuffled) -> None:
    """Counts in [e_k, e_k+1) by a search of the edges are the counts of binning each moment (and
    the caller is told to bin them one by one when the moments are out of order)."""
    from fleetopt.core.workload_stats import counts_between_edges

    values = np.sort(np.asarray(moments, dtype=np.int64))
    weights = (np.arange(values.size) % 7 + 1).astype(np.int64) if weighted else None
    low, high = int(values.min()) // width - 1, int(values.max()) // width + 2
    edges = np.arange(low, high + 1) * width
    index = np.floor_divide(values, width) - low
    expected = np.bincount(
        index, weights=None if weights is None else weights.astype(float), minlength=high - low
    )
    if shuffled and values.size > 1 and values[0] != values[-1]:
        assert counts_between_edges(values[::-1], weights, edges) is None
        return
    found = counts_between_edges(values, weights, edges)
    assert found.dtype == expected.dtype
    assert np.array_equal(found, expected)


def test_a_log_keeps_its_readers_microseconds(tmp_path: Path) -> None:
    """The arrival µs a log's Workload keeps are the ones converting its times in seconds gives."""
    from fleetopt.core.workload_stats import arrival_ticks_us

    lines = ["TIMESTAMP,ContextTokens,GeneratedTokens"]
    rng = np.random.default_rng(3)
    moments = np.sort(rng.integers(0, 10**11, 500))
    origin = np.datetime64("2023-11-16T18:15:46.680590", "us")
    for moment in moments[rng.permutation(moments.size)]:
        lines.append(
            f"{str(origin + np.timedelta64(int(moment), 'us')).replace('T', ' ')},{rng.integers(1, 9000)},7"
        )
    path = tmp_path / "log.csv"
    path.write_text("\n".join(lines) + "\n")
    workload = load_workload(str(path))
    ticks = arrival_ticks_us(workload)
    assert ticks is workload.arrival_us
    converted = workload.arrival_span.first_us + np.rint(workload.arrival_times_s * 1e6).astype(np.int64)
    assert np.array_equal(ticks, converted)
    assert np.array_equal(ticks - ticks[0], moments - moments[0])
