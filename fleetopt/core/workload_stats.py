"""Exact summary statistics of a :class:`~fleetopt.core.workload.Workload`.

Everything is a finite weighted sum or a weighted order statistic over the workload's atoms
(counts for a log, probability mass for a CDF): nothing is sampled.

Definitions (docs/workloads.md):

* Quantile Q(p) — the inverted CDF (Hyndman & Fan type 1, numpy ``method="inverted_cdf"``):
  the smallest length x with F(x) ≥ p. It is defined for any weights, so logs and CDFs use
  the same rule, and it is always a length that occurs. On the Azure 2023 trace it gives
  the FACTS §5 figures p50/p90/p99 = 1,417 / 4,106 / 7,445. ``method="linear"`` (numpy's
  default, type 7, logs only) is available too; it reproduces FACTS §5's per-file rows.
* Mean arrival rate — (n − 1)/span, the reciprocal of the mean inter-arrival time.
* Inter-arrival SCV — population variance / mean² of the n − 1 gaps; CV = √SCV.
* Peak per-minute rate — the most arrivals in any 60 s window [t_i, t_i + 60 s) starting at
  an arrival (an exact sliding window, no binning).
* Archetype at B_short (FleetOpt §2.4): α = F(B); I if α ≥ 0.90 (the paper's own
  criterion), III if α < 0.5 (the median lies above B), II otherwise.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import asdict, dataclass

import numpy as np

from fleetopt.core.workload import MICROSECONDS_PER_S, Workload, weighted_sum, window_microseconds
from fleetopt.errors import ValidationError

#: F is reported at these total lengths (tokens): the papers' usual pool boundaries.
CDF_REPORT_TOKENS = (1_536, 2_048, 4_096, 8_192, 16_384, 65_536)

#: Quantile levels reported for input, output and total tokens.
REPORT_QUANTILES = (0.5, 0.9, 0.99)

#: C&R band widths γ at which the borderline fraction β = F(γB) − F(B) is reported.
BORDERLINE_GAMMAS = (1.5, 2.0)

#: Archetype thresholds on α = F(B_short) (FleetOpt §2.4; see the module docstring).
ARCHETYPE_I_MIN_ALPHA = 0.90
ARCHETYPE_III_MAX_ALPHA = 0.50

#: Window of the peak-rate statistic, seconds.
PEAK_WINDOW_S = 60.0

QUANTILE_METHODS = ("inverted-cdf", "linear")


def weighted_quantile(
    values: np.ndarray, weights: np.ndarray, probability: float, *, method: str = "inverted-cdf"
) -> float:
    """Quantile of the discrete distribution putting weight ``weights[k]`` on ``values[k]``.

    ``inverted-cdf``: min{x : W(x) ≥ p·W}, W the cumulative weight (numpy ``inverted_cdf``).
    ``linear``: weights must be whole counts N; with h = (N − 1)·p and x_(k) the k-th smallest
    of the N expanded values (0-based), Q = x_(⌊h⌋) + (h − ⌊h⌋)·(x_(⌊h⌋+1) − x_(⌊h⌋)) — numpy's
    default, computed without expanding the counts.
    """
    return weighted_quantiles(values, weights, (probability,), method=method)[0]


def weighted_quantiles(
    values: np.ndarray, weights: np.ndarray, probabilities: tuple[float, ...], *, method: str = "inverted-cdf"
) -> list[float]:
    """:func:`weighted_quantile` at several levels, sorting the values once."""
    for probability in probabilities:
        if not 0.0 <= probability <= 1.0:
            raise ValidationError(f"quantile level {probability!r} must be within [0, 1]")
    if method not in QUANTILE_METHODS:
        raise ValidationError(f"unknown quantile method {method!r} (allowed: {', '.join(QUANTILE_METHODS)})")
    values = np.asarray(values)
    weights = np.asarray(weights, dtype=np.float64)
    if values.size < 2 or bool((values[1:] >= values[:-1]).all()):  # sorted already (totals)
        sorted_values, sorted_weights = values, weights
    else:
        order = np.argsort(values, kind="stable")
        sorted_values, sorted_weights = values[order], weights[order]
    cumulative = np.cumsum(sorted_weights)
    total = cumulative[-1]
    if total <= 0:
        raise ValidationError("a quantile needs positive total weight")
    if method == "linear" and (weights != np.round(weights)).any():
        raise ValidationError("linear quantiles need whole-number weights (a request log)")
    quantiles = []
    for probability in probabilities:
        if method == "inverted-cdf":
            index = int(np.searchsorted(cumulative, probability * total, side="left"))
            index = min(index, cumulative.size - 1)
            while not sorted_weights[index] > 0:  # a zero-weight atom never is a quantile
                index += 1
            quantiles.append(float(sorted_values[index]))
            continue
        position = (total - 1.0) * probability
        lower = math.floor(position)
        upper = min(lower + 1, int(total) - 1)
        low_value = sorted_values[int(np.searchsorted(cumulative, lower, side="right"))]
        high_value = sorted_values[int(np.searchsorted(cumulative, upper, side="right"))]
        quantiles.append(float(low_value + (position - lower) * (high_value - low_value)))
    return quantiles


def _distribution_summary(values: np.ndarray, weights: np.ndarray, method: str) -> dict[str, float | int]:
    """Mean, p50/p90/p99 and max of one token column (weights > 0 only for the max); one sort."""
    total_weight = float(weights.sum())
    summary = {"mean": weighted_sum(values, weights) / total_weight}
    quantiles = weighted_quantiles(values, weights, REPORT_QUANTILES, method=method)
    for probability, quantile in zip(REPORT_QUANTILES, quantiles, strict=True):
        label = f"p{round(probability * 100):d}"
        summary[label] = int(quantile) if method == "inverted-cdf" else quantile  # a length that occurs
    summary["max"] = int(values[weights > 0].max())
    return summary


@dataclass(frozen=True)
class ArrivalStatistics:
    """Arrival-process statistics of a request log (definitions in the module docstring).

    A workload read from a summary has no inter-arrival gaps and no sliding-window peak (it keeps
    per-window counts, not each arrival): those fields are ``None`` there (see
    :func:`workload_arrival_statistics`).
    """

    request_count: int
    span_s: float
    mean_rate_per_s: float | None
    mean_interarrival_s: float | None
    interarrival_scv: float | None
    interarrival_cv: float | None
    peak_requests_per_min: int | None
    peak_rate_per_s: float | None
    peak_to_mean_ratio: float | None


def arrival_statistics(times_s: np.ndarray) -> ArrivalStatistics:
    """Statistics of arrival times in seconds (any order, any origin).

    rate = (n − 1)/span; SCV = Var[gaps]/E[gaps]² (population variance); peak = most arrivals
    in a 60 s window starting at an arrival.
    """
    times = np.asarray(times_s, dtype=np.float64)
    if times.size > 1 and not bool((times[1:] >= times[:-1]).all()):  # a Workload's are sorted already
        times = np.sort(times)
    count = int(times.size)
    if count == 0:
        raise ValidationError("arrival statistics need at least one arrival time")
    span_s = float(times[-1] - times[0])
    peak = sliding_window_peak(times, PEAK_WINDOW_S)
    peak_rate = peak / PEAK_WINDOW_S
    if count < 2 or span_s <= 0:
        return ArrivalStatistics(count, span_s, None, None, None, None, peak, peak_rate, None)
    gaps = np.diff(times)
    mean_gap = float(gaps.mean())
    if mean_gap**2 == 0.0:  # a span too small to square (sub-normal seconds)
        return ArrivalStatistics(count, span_s, None, None, None, None, peak, peak_rate, None)
    scv = float(gaps.var() / mean_gap**2)
    rate = (count - 1) / span_s
    return ArrivalStatistics(
        request_count=count,
        span_s=span_s,
        mean_rate_per_s=rate,
        mean_interarrival_s=mean_gap,
        interarrival_scv=scv,
        interarrival_cv=math.sqrt(scv),
        peak_requests_per_min=peak,
        peak_rate_per_s=peak_rate,
        peak_to_mean_ratio=peak_rate / rate,
    )


#: Bins per window in :func:`sliding_window_peak`'s bounds.
_PEAK_BINS = 60


def sliding_window_peak(times: np.ndarray, window_s: float) -> int:
    """max over arrivals i of #{j : t_i ≤ t_j < t_i + w}, for sorted times: the most arrivals in a
    window of ``window_s`` starting at an arrival. Exact.

    Only the arrivals that could beat a bound are searched: with bins of w/60 (b the bin of t_i),
    a window starting in bin b holds at most the arrivals of bins b … b + 61, and the window from
    the first arrival of bin b at least those of bins b … b + 58 (one bin of slack either side for
    rounding); the windows starting in a bin whose upper bound exceeds the best lower bound are
    counted exactly (binary search), the others cannot hold more. On a log of 10⁷ arrivals that is
    a small share of them when arrivals are bursty, as real logs are (a search of every arrival
    took 0.5 s). Sparse arrivals (more bins than four per arrival) are all searched; for evenly
    spread ones (more than a quarter of them candidates) the peak is found between the bounds by
    bisection on the count k, each step one pass over the arrivals asking whether any window holds
    k (:func:`_some_window_holds`)."""
    count = int(times.size)
    if count < 2:
        return count
    bin_s = window_s / _PEAK_BINS
    if not (times[-1] - times[0]) / bin_s < 4.0 * count:  # sparse arrivals (or implausible times)
        return _most_in_windows_from(times, None, window_s)
    per_bin = np.zeros(int((times[-1] - times[0]) / bin_s) + 1, dtype=np.int64)
    for begin in range(0, count, _BIN_BLOCK):  # block by block: no array as long as the log
        bins = _bins_of(times, begin, bin_s)  # ascending, as the times are
        per_bin[bins[0] : bins[-1] + 1] += np.bincount(bins - bins[0])
    cumulative = np.concatenate(([0], np.cumsum(per_bin)))
    bin_count = cumulative.size - 1
    starts = np.arange(bin_count)
    upper = cumulative[np.minimum(starts + _PEAK_BINS + 2, bin_count)] - cumulative[:-1]
    lower = int((cumulative[np.minimum(starts + _PEAK_BINS - 1, bin_count)] - cumulative[:-1]).max())
    open_bins = upper > lower
    if int(per_bin[open_bins].sum()) > count // 4:  # evenly spread arrivals: the bounds rule out few
        low, high = lower, min(count, int(upper.max()))
        while low < high:  # some window holds `low` arrivals, none more than `high`
            middle = (low + high + 1) // 2
            if _some_window_holds(times, middle, window_s):
                low = middle
            else:
                high = middle - 1
        return low
    candidates = np.concatenate(
        [
            begin + np.flatnonzero(open_bins[_bins_of(times, begin, bin_s)])
            for begin in range(0, count, _BIN_BLOCK)
        ]
    )
    if candidates.size == 0:
        return lower
    return max(lower, _most_in_windows_from(times, candidates, window_s))


#: Arrivals binned at once by :func:`sliding_window_peak`.
_BIN_BLOCK = 1 << 20


def _bins_of(times: np.ndarray, begin: int, bin_s: float) -> np.ndarray:
    """⌊(t − t₀)/bin⌋ of the ``_BIN_BLOCK`` times from ``begin`` (truncation is the floor: all ≥ 0)."""
    offsets = times[begin : begin + _BIN_BLOCK] - times[0]
    offsets /= bin_s
    return offsets.astype(np.int64)


def _some_window_holds(times: np.ndarray, arrivals: int, window_s: float, block: int = 1 << 20) -> bool:
    """Whether some window [t_i, t_i + w) holds at least ``arrivals`` ≥ 1 of the sorted times: for
    some i, t_{i+k−1} < t_i + w (k = ``arrivals``), the same comparison as a search from t_i. Looked
    at ``block`` windows at a time, stopping at the first."""
    starts = times.size - arrivals + 1
    for begin in range(0, max(starts, 0), block):
        end = min(starts, begin + block)
        if bool((times[begin + arrivals - 1 : end + arrivals - 1] < times[begin:end] + window_s).any()):
            return True
    return False


#: Needles searched at once by :func:`searchsorted_ascending` (a slice of a sorted array they fall
#: in stays in cache).
SEARCH_BLOCK = 8192


def searchsorted_ascending(
    haystack: np.ndarray, needles: np.ndarray, side: str = "left", block: int = SEARCH_BLOCK
) -> np.ndarray:
    """``np.searchsorted(haystack, needles, side)`` for ascending ``needles``, ``block`` of them at a
    time: every answer for a block lies between those of its first and last needle, so the block is
    searched within that slice of ``haystack`` — the same answers, 3–4× faster than searching the
    whole of 10⁷ sorted arrivals for each needle."""
    found = np.empty(needles.size, dtype=np.intp)
    for begin in range(0, needles.size, block):
        part = needles[begin : begin + block]
        low = int(np.searchsorted(haystack, part[0], side=side))
        high = int(np.searchsorted(haystack, part[-1], side=side))
        found[begin : begin + part.size] = low + np.searchsorted(haystack[low:high], part, side=side)
    return found


def _most_in_windows_from(
    times: np.ndarray, starts: np.ndarray | None, window_s: float, block: int = SEARCH_BLOCK
) -> int:
    """The most arrivals in [t_i, t_i + w) over the arrivals i in ``starts`` (ascending; None: every
    one): the ends #{j : t_j < t_i + w} by :func:`searchsorted_ascending`, ``block`` starts at a time
    (no array as long as the log is made)."""
    count = times.size if starts is None else starts.size
    best = 0
    for begin in range(0, count, block):
        if starts is None:
            end = min(count, begin + block)
            first, limits = np.arange(begin, end), times[begin:end] + window_s
        else:
            first = starts[begin : begin + block]
            limits = times[first] + window_s
        ends = searchsorted_ascending(times, limits, "left", block)
        best = max(best, int((ends - first).max()))
    return best


@dataclass(frozen=True)
class RateProfile:
    """Arrivals counted in consecutive windows of ``window_s`` on the log's clock: the windows
    [k·w, (k+1)·w) that lie wholly between the first and the last arrival (partial windows at
    either end are dropped). Without a clock the first arrival is its zero, so the windows start at
    the first arrival.

    Rates are requests per second per window; ``index_of_dispersion`` = Var[count]/E[count] over
    the windows (1 for Poisson arrivals, larger for bursty ones; Cox & Lewis 1966, §4.5).
    """

    window_s: float
    windows: int
    mean_rate_per_s: float
    peak_rate_per_s: float
    rate_p50_per_s: float
    rate_p90_per_s: float
    rate_p99_per_s: float
    peak_to_mean_ratio: float
    index_of_dispersion: float


def clock_counts_from_ticks(ticks_us: np.ndarray, window_us: int) -> tuple[np.ndarray, np.ndarray]:
    """(window starts, arrivals) of every clock window [k·w, (k+1)·w) µs that has arrivals."""
    windows, counts = np.unique(
        np.floor_divide(np.asarray(ticks_us, dtype=np.int64), window_us), return_counts=True
    )
    return windows * window_us, counts.astype(np.int64)


#: Below this span (µs, 35.7 years) rint((t − t₀)·10⁻⁶·10⁶) = t − t₀ exactly in float64: the two
#: roundings and 10⁻⁶'s own error make a relative error ≤ 3·2⁻⁵³, under ½ µs at 2⁵⁰ µs.
_EXACT_SPAN_US = 1 << 50


def arrival_ticks_us(workload: Workload) -> np.ndarray | None:
    """A log's arrival times on its clock, whole µs (the first arrival is 0 without a clock):
    first + rint((t − t₀)·10⁶) of its times in seconds; read-only. The reader's own µs when the
    workload keeps them (the same integers, see :data:`_EXACT_SPAN_US`), else converted and
    remembered for the last log asked (a plan asks for its windows and for its dispersion curve:
    10⁷ times are 80 MB and ~0.4 s to convert)."""
    times = workload.arrival_times_s
    if times is None:
        return None
    first = workload.arrival_span.first_us if workload.arrival_span is not None else 0
    kept = workload.arrival_us
    if (
        kept is not None
        and kept.size == times.size
        and kept.size
        and int(kept[0]) == first
        and int(kept[-1]) - first < _EXACT_SPAN_US
        and float(times[-1]) == (int(kept[-1]) - first) * 1e-6  # the times are made of these µs
    ):
        return kept
    known = _last_ticks[0]
    if known is not None and known[0]() is times and known[1] == first:
        return known[2]
    ticks = first + np.rint((times - times[0]) * MICROSECONDS_PER_S).astype(np.int64)
    ticks.flags.writeable = False
    _last_ticks[0] = (weakref.ref(times), first, ticks)
    return ticks


#: (a weak reference to the last log's times, its first µs, its ticks) — see arrival_ticks_us
_last_ticks: list = [None]


def arrival_window_counts(workload: Workload, window_s: float) -> np.ndarray | None:
    """Arrivals in each full clock window of ``window_s`` (the :class:`RateProfile` rule), from a
    log's times or a summary's windows alike; ``None`` without arrivals or a full window.

    A summary's windows re-bin exactly into any multiple of their own length.
    """
    windows = clock_windows(workload, window_s)
    return None if windows is None else windows[0]


def clock_windows(workload: Workload, window_s: float) -> tuple[np.ndarray, int] | None:
    """(arrivals per full clock window of ``window_s``, the first such window's start in µs on the
    log's clock — UTC µs since the epoch when ``workload.arrival_span.utc``), or None. The windows
    are [k·w, (k+1)·w) with k·w ≥ the first arrival and (k+1)·w ≤ the last, zeros included; a log
    and its summary (of any window dividing ``window_s``) give the same."""
    window_us = window_microseconds(window_s)
    summary_windows = workload.arrival_windows
    if workload.arrival_times_s is not None:
        ticks = arrival_ticks_us(workload)
        return _full_window_counts(ticks, None, int(ticks[0]), int(ticks[-1]), window_us)
    if summary_windows is None or workload.arrival_span is None:
        return None
    if window_us % summary_windows.window_us:
        raise ValidationError(
            f"rate window: {window_s:g} s is not a whole multiple of the summary's window "
            f"({summary_windows.window_us / MICROSECONDS_PER_S:g} s); summarize the log with a finer --window"
        )
    span = workload.arrival_span
    return _full_window_counts(
        summary_windows.starts_us, summary_windows.counts, span.first_us, span.last_us, window_us
    )


def _full_window_counts(
    moments_us: np.ndarray, counts: np.ndarray | None, first_us: int, last_us: int, window_us: int
) -> tuple[np.ndarray, int] | None:
    """Arrivals per window [k·w, (k+1)·w) for the windows with k·w ≥ first and (k+1)·w ≤ last
    (zeros included), from arrival moments (``counts`` None) or from finer windows' starts and
    counts, with the first window's start; None when no window is full."""
    low, high = -(-first_us // window_us), last_us // window_us
    if high - low < 1:
        return None
    from fleetopt.core.arrivals import check_window_count

    check_window_count(high - low, window_us / MICROSECONDS_PER_S)
    per_window = counts_between_edges(moments_us, counts, np.arange(low, high + 1) * window_us)
    if per_window is None:  # moments out of order: bin them one by one
        index = np.floor_divide(moments_us, window_us) - low
        keep = (index >= 0) & (index < high - low)
        weights = None if counts is None else counts[keep].astype(np.float64)
        per_window = np.bincount(index[keep], weights=weights, minlength=high - low)
    return per_window.astype(np.float64), low * window_us


def counts_between_edges(
    moments_us: np.ndarray, counts: np.ndarray | None, edges_us: np.ndarray
) -> np.ndarray | None:
    """Arrivals in each [edges[k], edges[k+1]) µs (edges ascending) from ascending arrival moments
    (int64 counts) or from ascending window starts with their ``counts`` (float64 sums of them,
    exact: whole numbers), by binary search of the edges — the same numbers as binning every moment,
    without a division per arrival. None when the moments are not in order."""
    moments = np.asarray(moments_us)
    if moments.size > 1 and not bool((moments[1:] >= moments[:-1]).all()):
        return None
    positions = searchsorted_ascending(moments, edges_us, "left")
    if counts is None:
        return np.diff(positions)
    cumulative = np.concatenate(([0.0], np.cumsum(np.asarray(counts, dtype=np.float64))))
    return np.diff(cumulative[positions])


def rate_profile_from_counts(counts: np.ndarray, window_s: float) -> RateProfile | None:
    """The statistics of per-window arrival counts (consecutive windows of ``window_s``)."""
    counts = np.asarray(counts, dtype=np.float64)
    if counts.size < 1:
        return None
    rates = counts / window_s
    mean = float(counts.mean())
    p50, p90, p99 = (float(v) for v in np.percentile(rates, (50, 90, 99), method="inverted_cdf"))
    return RateProfile(
        window_s=float(window_s),
        windows=int(counts.size),
        mean_rate_per_s=mean / window_s,
        peak_rate_per_s=float(rates.max()),
        rate_p50_per_s=p50,
        rate_p90_per_s=p90,
        rate_p99_per_s=p99,
        peak_to_mean_ratio=float(counts.max()) / mean if mean > 0 else math.nan,
        index_of_dispersion=float(counts.var() / mean) if mean > 0 else math.nan,
    )


def rate_profile(times_s: np.ndarray, window_s: float) -> RateProfile | None:
    """The windowed rate profile of arrival times (seconds, any origin: the first arrival is the
    clock's zero), or None when they span less than one window."""
    window_us = window_microseconds(window_s)
    times = np.sort(np.asarray(times_s, dtype=np.float64))
    if times.size < 2:
        return None
    ticks = np.rint((times - times[0]) * MICROSECONDS_PER_S).astype(np.int64)
    windows = _full_window_counts(ticks, None, 0, int(ticks[-1]), window_us)
    return None if windows is None else rate_profile_from_counts(windows[0], window_s)


def workload_rate_profile(workload: Workload, window_s: float) -> RateProfile | None:
    """The rate profile of a log or a summary on the log's clock (``None`` without a full window)."""
    counts = arrival_window_counts(workload, window_s)
    return None if counts is None else rate_profile_from_counts(counts, window_s)


def observed_rate_per_s(workload: Workload) -> float | None:
    """The mean arrival rate (n − 1)/span of a log or its summary, or None without two distinct
    arrival times. The same number either way: a log's span is (last − first) µs · 10⁻⁶."""
    if workload.arrival_times_s is not None:
        times = workload.arrival_times_s
        count, span_s = int(times.size), float(times[-1] - times[0]) if times.size else 0.0
    elif workload.arrival_span is not None and workload.request_count is not None:
        count, span_s = workload.request_count, workload.arrival_span.span_s
    else:
        return None
    if count < 2 or not span_s > 0:
        return None
    return (count - 1) / span_s


def workload_arrival_statistics(workload: Workload) -> ArrivalStatistics | None:
    """:func:`arrival_statistics` of a log's times; for a summary, the statistics its aggregates
    give exactly (count, span, mean rate and gap), the gap variance and sliding peak as ``None``."""
    if workload.arrival_times_s is not None:
        return arrival_statistics(workload.arrival_times_s) if workload.arrival_times_s.size else None
    if workload.arrival_span is None or workload.request_count is None:
        return None
    count, span_s = workload.request_count, workload.arrival_span.span_s
    rate = observed_rate_per_s(workload)
    return ArrivalStatistics(
        request_count=count,
        span_s=span_s,
        mean_rate_per_s=rate,
        mean_interarrival_s=span_s / (count - 1) if rate is not None else None,
        interarrival_scv=None,
        interarrival_cv=None,
        peak_requests_per_min=None,
        peak_rate_per_s=None,
        peak_to_mean_ratio=None,
    )


def classify_archetype(alpha: float) -> str:
    """FleetOpt §2.4 archetype from α = F(B_short): "I", "II" or "III" (rule in the module docstring)."""
    if alpha >= ARCHETYPE_I_MIN_ALPHA:
        return "I"
    if alpha < ARCHETYPE_III_MAX_ALPHA:
        return "III"
    return "II"


def archetype_statistics(workload: Workload, b_short_tokens: int) -> dict:
    """α = F(B), β(γ) = F(γB) − F(B), the borderline share β/(1 − α) and the archetype.

    γB is taken as ⌊γ·B⌋ tokens (lengths are integers), the reference's band (B, γB].
    """
    if b_short_tokens < 1:
        raise ValidationError(f"B_short: {b_short_tokens} must be a whole number of tokens ≥ 1")
    alpha = workload.cdf_at(b_short_tokens)
    above = 1.0 - alpha
    borderline = {}
    for gamma in BORDERLINE_GAMMAS:
        beta = workload.cdf_at(math.floor(gamma * b_short_tokens)) - alpha
        borderline[f"{gamma:g}"] = {
            "beta": beta,
            "share_of_above_threshold": beta / above if above > 0 else None,
        }
    return {
        "b_short_tokens": int(b_short_tokens),
        "alpha": alpha,
        "above_threshold_fraction": above,
        "borderline": borderline,
        "archetype": classify_archetype(alpha),
        "rule": (
            f"I if F(B) >= {ARCHETYPE_I_MIN_ALPHA:g}; III if F(B) < {ARCHETYPE_III_MAX_ALPHA:g}; otherwise II"
        ),
    }


def summarize_workload(
    workload: Workload,
    *,
    b_short_tokens: int | None = None,
    quantile_method: str = "inverted-cdf",
    rate_window_s: float = 60.0,
) -> dict:
    """Every summary statistic of ``workload`` as a plain (JSON-ready) dictionary.

    Keys: name, kind, source, split_model, request_count, atom_count, total_weight,
    quantile_method, tokens{input,output,total}{mean,p50,p90,p99,max}, cdf_at_tokens,
    arrivals (or None), rate_profile (windows of ``rate_window_s``, or None), archetype (or None
    when ``b_short_tokens`` is None).
    """
    weights = workload.weights
    tokens = {
        column: _distribution_summary(getattr(workload, f"{column}_tokens"), weights, quantile_method)
        for column in ("input", "output", "total")
    }
    statistics = workload_arrival_statistics(workload)
    arrivals = None if statistics is None else asdict(statistics)
    windows = workload_rate_profile(workload, rate_window_s) if statistics is not None else None
    profile = None if windows is None else asdict(windows)
    return {
        "name": workload.name,
        "kind": workload.kind,
        "source": workload.source,
        "split_model": workload.split_model,
        "split_assumed": workload.split_assumed,
        "request_count": workload.request_count,
        "atom_count": int(workload.total_tokens.size),
        "total_weight": workload.total_weight,
        "quantile_method": quantile_method,
        "tokens": tokens,
        "cdf_at_tokens": {str(t): workload.cdf_at(t) for t in CDF_REPORT_TOKENS},
        "arrivals": arrivals,
        "rate_profile": profile,
        "archetype": None if b_short_tokens is None else archetype_statistics(workload, b_short_tokens),
    }


def ks_distance(a: Workload, b: Workload) -> float:
    """Kolmogorov–Smirnov distance sup_x |F_a(x) − F_b(x)| of the total-token distributions.

    Both CDFs are right-continuous step functions, so the supremum is attained at an atom of
    either workload; evaluating both there makes the result exact.
    """
    points = np.union1d(a.total_tokens, b.total_tokens)

    def cdf(workload: Workload) -> np.ndarray:
        cumulative = np.concatenate(([0.0], np.cumsum(workload.weights)))
        return cumulative[np.searchsorted(workload.total_tokens, points, side="right")] / cumulative[-1]

    return float(np.abs(cdf(a) - cdf(b)).max())
