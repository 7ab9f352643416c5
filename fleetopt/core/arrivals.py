"""The arrival process of a log: windowed counts, the rate profile, the rate basis, burstiness, and
the arrivals a simulation replays at another mean rate.

Everything here starts from *window counts* — arrivals counted in the full windows [k·w, (k+1)·w)
of the log's clock (:class:`WindowCounts`, built by :func:`workload_window_counts` from
:func:`fleetopt.core.workload_stats.clock_windows`: a log's times, or a summary's windows, alike) —
so a workload summary that carries counts instead of timestamps plans like the log it came from.

Definitions (docs/planner.md, "The rate a plan sizes for"):

* Rate profile: the rates count/window of the full windows; mean, percentiles (inverted CDF),
  peak, peak/mean and the index of dispersion Var/E of the counts (Cox & Lewis 1966, §4.5;
  :class:`fleetopt.core.workload_stats.RateProfile`).
* Rate basis: ``mean``, ``peak`` or ``pNN`` (the NN-th percentile of the windowed rates); a plan
  sizes every pool at mean × max(1, basis / mean), so it never sizes below the mean. The basis is
  read from the profile with its Poisson counting noise taken out (:func:`denoised_counts`: each
  window's posterior mean intensity under the windows' own nonparametric prior, empirical Bayes):
  a log's busiest window is partly chance (the winner's curse of a maximum), and chance that does
  not grow with the traffic, so scaled to ``--rate`` it would be paid for as if it were the
  traffic's shape (docs/math.md, "Counting noise in the rate profile").
* Within-window dispersion at scale τ = window/J: the windows are cut into J sub-windows, and
  D(τ) = Σ_k Σ_j (n_kj − N_k/J)² / Σ_k N_k(1 − 1/J), with N_k the window's count and n_kj its
  sub-window counts. For Poisson arrivals whose rate is constant within each window, E[D] = 1
  exactly (given the window counts the sub-window counts are multinomial); D > 1 measures
  burstiness *below* the window scale, which sizing at the window's rate does not cover. It is
  Fisher's index-of-dispersion test statistic (Cochran 1954) applied window by window.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from fleetopt.core.workload import window_microseconds
from fleetopt.errors import ValidationError, excerpt

if TYPE_CHECKING:
    from fleetopt.core.workload import Workload
    from fleetopt.core.workload_stats import RateProfile

#: The rate bases a plan accepts: mean, peak, or pNN (a percentile of the windowed rates).
RATE_BASIS_FORMS = ("mean", "peak", "pNN")
_PERCENTILE_BASIS = re.compile(r"^p(\d{1,2}(?:\.\d+)?)$")

#: Sub-window divisions J of a window at which the within-window dispersion is measured
#: (scales τ = window / J, from half a window down to 1/600 of it; only the scales that are a
#: whole number of :data:`DISPERSION_RESOLUTION_US` are kept).
DISPERSION_DIVISIONS = (2, 3, 4, 6, 10, 15, 20, 30, 60, 120, 300, 600)

#: The finest scale of the dispersion curve (1 s): a whole number of seconds, so a log and a
#: summary of it at the default 1-second windows give the same curve (and the same C_a²). A pool
#: holding its slots for less than half a second reads D(1 s), which for bursty traffic is at least
#: the sub-second value (D grows with the scale): the safe side.
DISPERSION_RESOLUTION_US = 1_000_000

#: The most windows a profile holds (80 MB of counts: a year of 3-second windows).
MAX_WINDOWS = 10_000_000

_MICROSECONDS_PER_S = 1_000_000


@dataclass(frozen=True, eq=False)
class WindowCounts:
    """Arrivals counted in consecutive full windows of ``window_s`` seconds (whole numbers; a
    :func:`denoised_counts` profile holds expected counts, not whole).

    ``origin_epoch_s``: the Unix time of the first window's start when the log's clock is UTC,
    else None.
    """

    window_s: float
    counts: np.ndarray
    origin_epoch_s: float | None = None

    @classmethod
    def from_times(
        cls, times_s: np.ndarray, window_s: float, origin_epoch_s: float | None = None
    ) -> WindowCounts | None:
        """Counts of arrival times (seconds) in windows from the first arrival (the clock's zero when
        there is no clock), or None when they span less than one window."""
        _check_window(window_s)
        times = np.asarray(times_s, dtype=np.float64)
        if times.size < 2:
            return None
        start = float(times.min())
        full = (float(times.max()) - start) // window_s
        if full < 1:
            return None
        check_window_count(full, window_s)
        full = int(full)
        index = np.floor((times - start) / window_s).astype(np.int64)
        counts = np.bincount(index[index < full], minlength=full)
        return cls(float(window_s), counts.astype(np.int64), origin_epoch_s)

    @property
    def windows(self) -> int:
        return int(self.counts.size)

    @property
    def span_s(self) -> float:
        """The time the full windows cover, seconds."""
        return self.windows * self.window_s


def _check_window(window_s: float) -> None:
    if not (window_s > 0 and math.isfinite(window_s)):
        raise ValidationError(f"rate window: {excerpt(window_s)} s must be a positive, finite duration")


def check_window_count(windows: float, window_s: float) -> None:
    """Refuse a profile of more than :data:`MAX_WINDOWS` windows (the one bound on every array sized
    by a log's span: a single timestamp centuries from the rest would otherwise ask for gigabytes)."""
    if windows > MAX_WINDOWS:
        raise ValidationError(
            f"rate window: the arrivals span {windows * window_s:,.0f} s, {windows:,.0f} windows of "
            f"{window_s:g} s, more than the {MAX_WINDOWS:,} a rate profile holds: check the log's "
            "timestamps (one far from the others, or a unit off by 1000×), or use a longer --rate-window"
        )


def workload_window_counts(workload: Workload, window_s: float) -> WindowCounts | None:
    """A workload's arrivals per full clock window of ``window_s`` (a log's times or a summary's
    windows: :func:`fleetopt.core.workload_stats.clock_windows`), or None without arrivals or a full
    window; ``origin_epoch_s`` is the first window's UTC start when the clock is UTC."""
    _check_window(window_s)
    span = workload.arrival_span
    if workload.arrival_times_s is not None and workload.arrival_times_s.size > 1:
        times = workload.arrival_times_s
        check_window_count((float(times[-1]) - float(times[0])) / window_s, window_s)
    elif span is not None:
        check_window_count(span.span_s / window_s, window_s)
    if workload.arrival_times_s is None and (workload.arrival_windows is None or span is None):
        window_microseconds(window_s)  # the check a log's window gets
        return None  # a CDF: no clock
    from fleetopt.core.workload_stats import clock_windows

    windows = clock_windows(workload, window_s)
    if windows is None:
        return None
    counts, start_us = windows
    origin = start_us / _MICROSECONDS_PER_S if span is not None and span.utc else None
    return WindowCounts(float(window_s), np.rint(counts).astype(np.int64), origin)


def rate_profile_of(counts: WindowCounts) -> RateProfile:
    """The rate profile of window counts (:func:`fleetopt.core.workload_stats.rate_profile_from_counts`)."""
    from fleetopt.core.workload_stats import rate_profile_from_counts

    return rate_profile_from_counts(counts.counts, counts.window_s)


def parse_rate_basis(text: str) -> str:
    """``mean``, ``peak`` or ``pNN`` (0 < NN < 100, e.g. p99 or p99.9), normalized; ValidationError
    otherwise."""
    basis = text.strip().lower()
    if basis in ("mean", "peak"):
        return basis
    match = _PERCENTILE_BASIS.match(basis)
    if match and 0.0 < float(match.group(1)) < 100.0:
        return f"p{float(match.group(1)):g}"
    raise ValidationError(
        f"--rate-basis: {excerpt(text)} is not allowed; use mean, peak, or pNN (a percentile of the windowed "
        "rates, e.g. p99)"
    )


#: Support points of the prior of window intensities (:func:`denoised_counts`), spaced evenly in √λ
#: (the Poisson variance-stabilizing scale) between the smallest and largest count, and the EM
#: iterations that fit their weights (the posterior means settle long before the weights do: 60 points
#: and 300 iterations move no tested peak factor by more than 0.001 against 100 and 1,000).
NOISE_PRIOR_POINTS = 60
NOISE_EM_ITERATIONS = 300


def denoised_counts(counts: WindowCounts) -> WindowCounts:
    """The windows' expected counts with the Poisson counting noise taken out (float counts): the
    profile a plan scales to its rate (docs/math.md, "Counting noise in the rate profile").

    Each window's count is N_k ~ Poisson(Λ_k); its estimate is the posterior mean E[Λ_k | N_k]
    under the windows' own prior G of intensities, estimated from all the counts — empirical Bayes
    (Robbins 1956) with G the nonparametric maximum-likelihood mixing distribution (Kiefer &
    Wolfowitz 1956) on a fixed grid, fitted by EM (Laird 1978, JASA 73:805–811). A count far above
    what G says windows reach is mostly chance and pulled in; a plateau of busy windows keeps its
    level. The busiest window of the counts overstates the busiest intensity (the winner's curse of
    a maximum); empirical-Bayes posterior means remove that selection bias (Efron 2011, JASA
    106:1602–1614). Poisson traffic gives a profile within a few per cent of flat; a profile that
    swings far beyond its noise keeps its shape."""
    values = np.asarray(counts.counts, dtype=np.float64)
    if values.size < 2 or not float(values.max()) > float(values.min()):
        return WindowCounts(counts.window_s, values.copy(), counts.origin_epoch_s)
    distinct, index, multiplicity = np.unique(values, return_inverse=True, return_counts=True)
    low, high = np.sqrt(max(float(distinct[0]), 1e-9)), np.sqrt(float(distinct[-1]))
    grid = np.linspace(low, high, NOISE_PRIOR_POINTS) ** 2
    # Poisson likelihood up to a factor per count (which EM and the posterior do not see)
    log_likelihood = distinct[:, None] * np.log(grid)[None, :] - grid[None, :]
    likelihood = np.exp(log_likelihood - log_likelihood.max(axis=1, keepdims=True))
    share = multiplicity / multiplicity.sum()
    weights = np.full(grid.size, 1.0 / grid.size)
    for _ in range(NOISE_EM_ITERATIONS):
        updated = weights * ((likelihood / (likelihood @ weights)[:, None]) * share[:, None]).sum(axis=0)
        converged = float(np.abs(updated - weights).max()) < 1e-10
        weights = updated
        if converged:
            break
    posterior = likelihood * weights
    means = (posterior @ grid) / posterior.sum(axis=1)
    return WindowCounts(counts.window_s, means[index], counts.origin_epoch_s)


def basis_rate_per_s(counts: WindowCounts, basis: str) -> float:
    """The windowed rate the basis names: the mean, the peak, or a percentile (inverted CDF), req/s."""
    rates = counts.counts.astype(np.float64) / counts.window_s
    if basis == "mean":
        return float(rates.mean())
    if basis == "peak":
        return float(rates.max())
    level = float(parse_rate_basis(basis)[1:])
    return float(np.percentile(rates, level, method="inverted_cdf"))


def basis_factor(counts: WindowCounts, basis: str) -> float:
    """max(1, basis rate / mean rate): how much above the mean a plan on this basis sizes (never
    below it)."""
    mean = float(counts.counts.mean()) / counts.window_s
    if not mean > 0:
        return 1.0
    return max(1.0, basis_rate_per_s(counts, basis) / mean)


# --------------------------------------------------------------------------------------------
# Burstiness below the window scale
# --------------------------------------------------------------------------------------------


def within_window_dispersion(counts: WindowCounts, divisions: int) -> float | None:
    """D(window/J) from counts in sub-windows: ``counts`` holds J consecutive sub-window counts per
    window (its window is the sub-window), so windows are groups of ``divisions`` entries. None when
    no window has an arrival."""
    if divisions < 2:
        raise ValidationError(f"dispersion: {divisions} sub-windows per window; at least 2 are needed")
    full = counts.counts.size // divisions
    if full < 1:
        return None
    sub = counts.counts[: full * divisions].reshape(full, divisions).astype(np.float64)
    totals = sub.sum(axis=1)
    arrivals = float(totals.sum())
    if arrivals <= 0:
        return None
    squares = float(((sub - totals[:, None] / divisions) ** 2).sum())
    return squares / (arrivals * (1.0 - 1.0 / divisions))


def within_window_dispersion_of_times(times_s: np.ndarray, window_s: float, divisions: int) -> float | None:
    """D(window/J) straight from arrival times in seconds (windows from the first arrival):
    :func:`within_window_dispersion` of their sub-window counts."""
    times = np.sort(np.asarray(times_s, dtype=np.float64))
    if times.size < 2:
        return None
    ticks = np.rint((times - times[0]) * _MICROSECONDS_PER_S).astype(np.int64)
    window_us = round(window_s * _MICROSECONDS_PER_S)
    return _dispersions(ticks, None, 0, int(ticks[-1]), window_us, 1, (divisions,)).get(divisions)


#: The most sub-window counts the dispersion curve holds at once (128 MB of int64); finer scales of a
#: long log are left out (the curve is then held at its finest scale below it, which overstates
#: the burstiness of the shortest holding times: the safe side).
MAX_SUB_WINDOWS = 1 << 24


def _dispersions(
    moments_us: np.ndarray, weights: np.ndarray | None, first_us: int, last_us: int, window_us: int,
    resolution_us: int, divisions: tuple[int, ...],
) -> dict[int, float]:  # fmt: skip
    """D(window/J) for every J of ``divisions`` whose sub-window is a whole number of ``resolution_us``
    (1 µs for a log's times, a summary's window for its counts) and fits :data:`MAX_SUB_WINDOWS`,
    over the full clock windows [k·w, (k+1)·w) between the first and last arrival, from one pass:
    the counts at the finest common sub-window (window / lcm of the J) of the arrival moments
    (``weights``: a summary's window counts), every coarser J as differences of their running sum."""
    low, high = -(-first_us // window_us), last_us // window_us
    full = high - low
    if full < 1 or not divisions:
        return {}
    usable = sorted(
        d
        for d in divisions
        if d >= 2
        and window_us % d == 0
        and (window_us // d) % resolution_us == 0
        and full * d <= MAX_SUB_WINDOWS
    )
    while usable and (window_us % math.lcm(*usable) or full * math.lcm(*usable) > MAX_SUB_WINDOWS):
        usable.pop()
    if not usable:
        return {}
    from fleetopt.core.workload_stats import counts_between_edges

    finest = math.lcm(*usable)
    sub_window_us = window_us // finest
    edges = np.arange(low * finest, high * finest + 1) * sub_window_us
    fine_counts = counts_between_edges(moments_us, weights, edges)
    if fine_counts is None:  # moments out of order: bin them one by one
        fine = np.floor_divide(moments_us, sub_window_us) - low * finest
        keep = (fine >= 0) & (fine < full * finest)
        fine_counts = np.bincount(
            fine[keep], weights=None if weights is None else weights[keep].astype(np.float64),
            minlength=full * finest,
        )  # fmt: skip
    arrivals = float(fine_counts.sum())
    if arrivals <= 0:
        return {}
    # every coarser division's counts as differences of the running count (whole numbers: exact)
    running = np.concatenate((np.zeros(1, dtype=fine_counts.dtype), np.cumsum(fine_counts)))
    by_division = {
        division: np.diff(running[:: finest // division]).reshape(full, division)
        for division in sorted(set(usable) | {1})
    }
    # Σn² of whole-number counts is at most (Σn)²: below 2⁵³ every partial sum is a whole number
    # float64 holds exactly, so any summation order gives the same number (a plain sum of squares
    # is 4× faster here than the BLAS dot, which stays the rule beyond)
    exact = arrivals * arrivals < 2.0**53

    def sum_of_squares(counts: np.ndarray) -> float:
        values = counts.ravel().astype(np.float64)
        return float(np.square(values).sum()) if exact else float(np.dot(values, values))

    window_squares = sum_of_squares(by_division[1])
    out = {}
    for division in usable:
        squares = sum_of_squares(by_division[division]) - window_squares / division
        out[division] = squares / (arrivals * (1.0 - 1.0 / division))
    return out


def dispersion_curve(workload: Workload, window_s: float) -> tuple[tuple[float, float], ...]:
    """(τ, D(τ)) at τ = window/J for J in :data:`DISPERSION_DIVISIONS`, largest τ first, over the
    workload's full clock windows, at the scales that are whole seconds: from a log's times, or
    from a summary's windows at the scales they also resolve (τ a whole number of its windows).
    Empty without a full window."""
    from fleetopt.core.workload_stats import arrival_ticks_us

    window_us = window_microseconds(window_s)
    if workload.arrival_times_s is not None and workload.arrival_times_s.size > 1:
        ticks = arrival_ticks_us(workload)
        first, last = int(ticks[0]), int(ticks[-1])
        values = _dispersions(
            ticks, None, first, last, window_us, DISPERSION_RESOLUTION_US, DISPERSION_DIVISIONS
        )
    elif workload.arrival_windows is not None and workload.arrival_span is not None:
        windows, span = workload.arrival_windows, workload.arrival_span
        values = _dispersions(
            windows.starts_us, windows.counts, span.first_us, span.last_us, window_us,
            math.lcm(windows.window_us, DISPERSION_RESOLUTION_US), DISPERSION_DIVISIONS,
        )  # fmt: skip
    else:
        return ()
    return tuple((window_s / j, values[j]) for j in DISPERSION_DIVISIONS if j in values)


def dispersion_at(curve: tuple[tuple[float, float], ...], scale_s: float) -> float:
    """D at ``scale_s``: linear in log τ between the curve's points, held at its ends; 1 (Poisson)
    for an empty curve."""
    if not curve:
        return 1.0
    scales = np.log(np.array([point[0] for point in curve])[::-1])
    values = np.array([point[1] for point in curve])[::-1]
    return float(np.interp(math.log(max(scale_s, 1e-300)), scales, values))


def pool_arrival_scv(
    curve: tuple[tuple[float, float], ...], traffic_fraction: float, holding_s: float
) -> float:
    """C_a² of a pool's arrivals: 1 + p·(D(2h) − 1), at least 1.

    h is the pool's mean slot-holding time (the time scale over which its occupancy remembers
    arrivals) and p its share of the fleet's requests (routing by length thins the stream
    independently of time, and a p-thinning scales D − 1 by p). D(2h) is the index of dispersion
    of counts over 2h: the peakedness of a stream with respect to an exponential holding time h is
    z = 1 + (1/2λ)∫c(u)e^{−|u|/h}du (c the reduced covariance density; Eckberg 1983), and replacing
    the exponential kernel by the triangle (1 − |u|/2h)⁺ of the same area and height gives
    z = (1 + D(2h))/2 — exact both for fast correlations (renewal streams, z = (1 + c_a²)/2) and for
    slow ones — which is QNA's convention z = (1 + C_a²)/2 with C_a² = D(2h) (Whitt 1983).
    """
    if not curve or not (traffic_fraction > 0 and holding_s > 0 and math.isfinite(holding_s)):
        return 1.0
    return max(1.0, 1.0 + traffic_fraction * (dispersion_at(curve, 2.0 * holding_s) - 1.0))


# --------------------------------------------------------------------------------------------
# Arrivals for a simulation at another mean rate
# --------------------------------------------------------------------------------------------


def replay_at_rate(
    times_s: np.ndarray,
    rate_factor: float,
    window_s: float,
    rng: np.random.Generator,
    *,
    with_index: bool = False,
) -> Any:
    """The log's arrivals at ``rate_factor`` × its mean rate on its own time axis (sorted, seconds
    from the first arrival, within one period P = span + one mean gap).

    k = ⌈f⌉ copies of the log are superposed, each arrival of each copy kept with probability f/k,
    and copy j is shifted by a uniform offset in its own k-th of (−window/2, window/2) (stratified),
    wrapping around the period. So the windowed rate profile is kept (each window's expected count
    is f times the log's, smoothed by less than a window), every copy carries the log's bursts, and
    more traffic means more independent users shaped by the same profile, not one user sending f
    times as much. f = 1 is the log itself; f < 1 thins it. ``with_index``: also the position in
    ``times_s`` of the request each arrival replays (the same draws either way).
    """
    given = np.asarray(times_s, dtype=np.float64)
    order = np.argsort(given, kind="stable")
    times = given[order]
    times = times - times[0]
    if not (rate_factor > 0 and math.isfinite(rate_factor)):
        raise ValidationError(f"replay: rate factor {excerpt(rate_factor)} must be a positive, finite number")
    span = float(times[-1])
    period = span + (span / (times.size - 1) if times.size > 1 and span > 0 else 1.0)
    copies = max(1, math.ceil(rate_factor - 1e-12))
    keep = rate_factor / copies
    if copies == 1:
        mask = np.ones(times.size, dtype=bool) if keep >= 1.0 else rng.random(times.size) < keep
        return (times[mask], order[mask]) if with_index else times[mask]
    offsets = window_s * ((np.arange(copies) + rng.random(copies)) / copies - 0.5)
    parts, index = [], []
    for offset in offsets:
        mask = rng.random(times.size) < keep if keep < 1.0 else np.ones(times.size, dtype=bool)
        parts.append(np.mod(times[mask] + offset, period))
        index.append(order[mask])
    merged = np.concatenate(parts)
    if not with_index:
        merged.sort()
        return merged
    by_time = np.argsort(merged, kind="stable")
    return merged[by_time], np.concatenate(index)[by_time]


def profile_arrivals(counts: WindowCounts, rate_factor: float, rng: np.random.Generator) -> np.ndarray:
    """A non-homogeneous Poisson process following the windowed profile at ``rate_factor`` × its
    rates: in window k, Poisson(f·N_k) arrivals placed uniformly (sorted, seconds from the start)."""
    expected = rate_factor * counts.counts.astype(np.float64)
    drawn = rng.poisson(expected)
    starts = np.repeat(np.arange(counts.windows, dtype=np.float64) * counts.window_s, drawn)
    times = starts + rng.random(starts.size) * counts.window_s
    times.sort()
    return times


def with_periodic_warmup(
    times_s: np.ndarray, period_s: float, warmup_s: float, index: np.ndarray | None = None
) -> Any:
    """(times, count of warm-up arrivals): the last ``warmup_s`` of a periodic arrival pattern placed
    before it (repeating it as often as needed), all shifted to start at 0. The warm-up fills the
    pools as the end of the previous period would have. With ``index`` (what each arrival replays),
    also the index of every arrival, warm-up included."""
    times = np.asarray(times_s, dtype=np.float64)
    if warmup_s <= 0 or times.size == 0:
        return (times, 0) if index is None else (times, 0, index)
    laps = math.ceil(warmup_s / period_s)
    before, before_index = [], []
    for lap in range(laps, 0, -1):
        shifted = times - lap * period_s
        inside = shifted >= -warmup_s
        before.append(shifted[inside])
        if index is not None:
            before_index.append(index[inside])
    prefix = np.concatenate(before) if before else np.empty(0)
    out = np.concatenate((prefix, times)) + warmup_s, int(prefix.size)
    return out if index is None else (*out, np.concatenate((*before_index, index)))


#: How a simulation generates arrivals (``--arrivals``).
ARRIVAL_PROCESSES = ("poisson", "replay", "profile")


@dataclass(frozen=True, eq=False)
class ArrivalSpec:
    """The arrivals of one simulated seed: Poisson at ``rate_per_s``; the log's ``times_s`` replayed
    at ``rate_factor`` × its mean (:func:`replay_at_rate`); or the non-homogeneous Poisson process of
    its window ``counts`` at that factor (:func:`profile_arrivals`).

    Replay and profile cover the log's span once, after a warm-up of ``warmup_s`` taken from the end
    of the (periodic) pattern (:func:`with_periodic_warmup`); ``max_requests`` cuts the measured part
    to the first that many arrivals. ``window_s``: the profile's window (replay spreads its copies
    over one window).
    """

    kind: str
    rate_per_s: float | None = None
    times_s: np.ndarray | None = None
    counts: WindowCounts | None = None
    rate_factor: float = 1.0
    window_s: float = 60.0
    warmup_s: float = 0.0
    max_requests: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in ARRIVAL_PROCESSES:
            raise ValidationError(
                f"--arrivals: {excerpt(self.kind)} is not one of {', '.join(ARRIVAL_PROCESSES)}"
            )
        if self.kind == "replay" and (self.times_s is None or np.asarray(self.times_s).size < 2):
            raise ValidationError("arrivals: a replay needs at least 2 arrival times")
        if self.kind == "profile" and self.counts is None:
            raise ValidationError("arrivals: a profile needs the log's window counts")
        if self.kind == "poisson" and not (self.rate_per_s is not None and self.rate_per_s > 0):
            raise ValidationError("arrivals: Poisson arrivals need a rate > 0")

    @property
    def period_s(self) -> float:
        """The length of the pattern replayed once (the log's span plus one mean gap, or the profile's
        windows)."""
        if self.kind == "profile":
            return self.counts.span_s
        times = np.asarray(self.times_s, dtype=np.float64)
        span = float(times.max() - times.min())
        return span + (span / (times.size - 1) if span > 0 else 1.0)

    def _pattern_requests(self) -> float:
        return (
            float(np.asarray(self.times_s).size) if self.kind == "replay" else float(self.counts.counts.sum())
        )

    def expected_measured_requests(self) -> float:
        """The expected arrivals per seed after the warm-up (the measured ones) of a replay or profile."""
        measured = self.rate_factor * self._pattern_requests()
        return measured if self.max_requests is None else min(measured, float(self.max_requests))

    def expected_requests(self) -> float:
        """The expected arrivals per seed (warm-up included) of a replay or profile."""
        per_second = self.rate_factor * self._pattern_requests() / self.period_s
        return self.expected_measured_requests() + per_second * self.warmup_s

    def generate(self, rng: np.random.Generator) -> tuple[np.ndarray, int]:
        """(sorted arrival times from 0, the number of warm-up arrivals at their start)."""
        times, warmup, _ = self.generate_indexed(rng)
        return times, warmup

    def generate_indexed(self, rng: np.random.Generator) -> tuple[np.ndarray, int, np.ndarray | None]:
        """:meth:`generate` and, for a replay, the position in ``times_s`` of the log request each
        arrival replays (None for a profile): the same draws as :meth:`generate`."""
        index = None
        if self.kind == "replay":
            times, index = replay_at_rate(self.times_s, self.rate_factor, self.window_s, rng, with_index=True)
            times, warmup, index = with_periodic_warmup(times, self.period_s, self.warmup_s, index)
        else:
            times = profile_arrivals(self.counts, self.rate_factor, rng)
            times, warmup = with_periodic_warmup(times, self.period_s, self.warmup_s)
        if self.max_requests is not None and times.size > warmup + self.max_requests:
            times = times[: warmup + self.max_requests]
            index = None if index is None else index[: times.size]
        return times, warmup, index
