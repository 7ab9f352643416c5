"""Cumulative (Prometheus) histograms: quantiles and shares with the bounds their buckets allow.

A Prometheus histogram counts observations at or below each bucket's upper edge ``le``
(cumulative counts; the last edge is +Inf). It determines exactly

* the count at or below every edge (so the share within an SLO that *is* an edge is exact), and
* the mean, from ``_sum``/``_count``,

and nothing inside a bucket. Every figure here therefore comes with the interval the buckets
guarantee: the inverted-CDF quantile Q(q) = min{x : F(x) ≥ q} lies in the bucket (lo, hi] whose
cumulative count first reaches q·N, and the share at or below x lies between the cumulative
shares of the edges on either side of x. The point estimates are Prometheus'
``histogram_quantile`` (linear interpolation inside the bucket, the first bucket starting at 0,
the +Inf bucket answered with the highest finite edge) and the same interpolation for shares,
so they agree with a Grafana panel over the same counts.

Counter arithmetic (:func:`counter_increase`) follows Prometheus: a drop is a reset, after which
the counter counted up from zero.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fleetopt.errors import ValidationError

#: Relative tolerance for "x is a bucket edge" (edges are printed as decimal text by exporters).
EDGE_RTOL = 1e-9


@dataclass(frozen=True, eq=False)
class Histogram:
    """Observations counted per bucket: ``upper_edges`` ascending (the last is +Inf),
    ``cumulative`` the count at or below each edge (non-decreasing; whole numbers for counts of
    requests), ``sum`` the sum of the observations (None when unknown)."""

    upper_edges: np.ndarray
    cumulative: np.ndarray
    sum: float | None = None

    @property
    def count(self) -> float:
        return float(self.cumulative[-1]) if self.cumulative.size else 0.0

    @property
    def mean(self) -> float | None:
        """The exact mean (``_sum``/``_count``), None without observations or a sum."""
        if self.sum is None or self.count <= 0:
            return None
        return self.sum / self.count

    @property
    def bucket_counts(self) -> np.ndarray:
        """Observations in each bucket (lo, hi]."""
        return np.diff(self.cumulative, prepend=0.0)

    @property
    def lower_edges(self) -> np.ndarray:
        """Each bucket's lower edge (the first bucket starts at min(0, its upper edge))."""
        first = min(0.0, float(self.upper_edges[0])) if self.upper_edges.size else 0.0
        return np.concatenate(([first], self.upper_edges[:-1]))


def make_histogram(
    edges: list[float] | np.ndarray, cumulative: list[float] | np.ndarray, total_sum: float | None, what: str
) -> Histogram:
    """A checked histogram: edges strictly increasing and ending at +Inf, counts non-decreasing.

    Exporters write bucket counts one by one, so a scrape can catch a histogram mid-update; like
    Prometheus' ``histogram_quantile`` a count that drops below the one before is raised to it
    (``np.maximum.accumulate``). Counts may be fractional only by float error.
    """
    upper = np.asarray(edges, dtype=np.float64)
    counts = np.asarray(cumulative, dtype=np.float64)
    if upper.size == 0 or upper.size != counts.size:
        raise ValidationError(f"{what}: a histogram needs one count per bucket edge and at least one bucket")
    order = np.argsort(upper, kind="stable")
    upper, counts = upper[order], counts[order]
    if np.any(np.diff(upper) <= 0):
        raise ValidationError(f"{what}: two buckets share the edge le={upper[np.argmin(np.diff(upper))]:g}")
    if not math.isinf(upper[-1]) or upper[-1] < 0:
        raise ValidationError(f'{what}: the histogram has no le="+Inf" bucket (its total count)')
    if np.any(~np.isfinite(counts)) or np.any(counts < 0):
        raise ValidationError(f"{what}: a bucket count is negative or not a number")
    counts = np.maximum.accumulate(counts)
    return Histogram(upper, counts, None if total_sum is None else float(total_sum))


def add_histograms(parts: list[Histogram], what: str) -> Histogram:
    """The histogram of the union of the parts' observations (they must share their edges)."""
    if not parts:
        raise ValidationError(f"{what}: no histogram to add")
    first = parts[0]
    for part in parts[1:]:
        if part.upper_edges.size != first.upper_edges.size or not np.allclose(
            part.upper_edges, first.upper_edges, rtol=EDGE_RTOL, atol=0.0
        ):
            raise ValidationError(
                f"{what}: the series' buckets differ (le = {_edges_text(first)} vs {_edges_text(part)}); "
                "engines of different versions or settings cannot be added bucket by bucket"
            )
    sums = [p.sum for p in parts]
    return Histogram(
        first.upper_edges.copy(),
        np.sum([p.cumulative for p in parts], axis=0),
        None if any(s is None for s in sums) else float(sum(sums)),
    )


def _edges_text(histogram: Histogram) -> str:
    return ",".join(f"{e:g}" for e in histogram.upper_edges[:6]) + (
        "…" if histogram.upper_edges.size > 6 else ""
    )


@dataclass(frozen=True)
class Bounded:
    """A figure read from bucket counts: ``estimate`` (linear interpolation inside the bucket, as
    Prometheus does) and the interval [``lower``, ``upper``] that the counts guarantee. ``exact``
    when the counts determine it (lower == upper)."""

    estimate: float
    lower: float
    upper: float

    @property
    def exact(self) -> bool:
        return self.lower == self.upper

    @property
    def half_width(self) -> float:
        return 0.5 * (self.upper - self.lower)


def quantile(histogram: Histogram, q: float) -> Bounded | None:
    """The inverted-CDF quantile Q(q) = min{x : F(x) ≥ q}, bounded by its bucket (lo, hi].

    The estimate is Prometheus' ``histogram_quantile(q, …)``: rank q·N, linear interpolation in
    the bucket that reaches it; in the +Inf bucket the highest finite edge (the upper bound is
    then +Inf). ``lower`` is the bucket's lower edge: Q lies above it (no request is there, but
    any value just above it can be), so the interval is half-open. None without observations.
    """
    if not 0.0 < q < 1.0:
        raise ValidationError(f"quantile: {q!r} must be in (0, 1)")
    total = histogram.count
    if total <= 0:
        return None
    rank = q * total
    cumulative = histogram.cumulative
    index = int(np.searchsorted(cumulative, rank * (1.0 - 1e-12), side="left"))
    index = min(index, cumulative.size - 1)
    upper = float(histogram.upper_edges[index])
    lower = float(histogram.lower_edges[index])
    if math.isinf(upper):
        finite = float(histogram.upper_edges[-2]) if histogram.upper_edges.size > 1 else 0.0
        return Bounded(finite, lower, math.inf)
    below = float(cumulative[index - 1]) if index > 0 else 0.0
    inside = float(cumulative[index]) - below
    fraction = (rank - below) / inside if inside > 0 else 1.0
    estimate = lower + (upper - lower) * min(1.0, max(0.0, fraction))
    return Bounded(estimate, lower, upper)


def share_at_most(histogram: Histogram, limit: float) -> Bounded | None:
    """The share of observations ≤ ``limit``: exact when ``limit`` is a bucket edge, else between
    the cumulative shares of the edges below and above it (estimate: linear interpolation).
    None without observations."""
    total = histogram.count
    if total <= 0:
        return None
    edges = histogram.upper_edges
    cumulative = histogram.cumulative
    match = np.flatnonzero(np.isclose(edges, limit, rtol=EDGE_RTOL, atol=0.0))
    if match.size:
        share = float(cumulative[match[0]]) / total
        return Bounded(share, share, share)
    above = int(np.searchsorted(edges, limit, side="right"))  # first edge > limit
    low_count = float(cumulative[above - 1]) if above > 0 else 0.0
    high_count = float(cumulative[above]) if above < edges.size else total
    low_edge = float(histogram.lower_edges[above]) if above < edges.size else float(edges[-1])
    high_edge = float(edges[above]) if above < edges.size else math.inf
    if math.isinf(high_edge) or high_edge <= low_edge:
        estimate = low_count
    else:
        estimate = low_count + (high_count - low_count) * (limit - low_edge) / (high_edge - low_edge)
    return Bounded(estimate / total, low_count / total, high_count / total)


def both_within(first: Bounded, second: Bounded | None) -> Bounded:
    """The share of requests within two limits when only each limit's share is known.

    Without the second limit it is the first share. With both, the joint share is not determined
    by the two marginals; Fréchet's bounds hold for any joint distribution:
    max(0, a + b − 1) ≤ P(A ∩ B) ≤ min(a, b) (exact when either share is 0 or 1). The estimate
    assumes the two are independent (a·b).
    """
    if second is None:
        return first
    lower = max(0.0, first.lower + second.lower - 1.0)
    upper = min(first.upper, second.upper)
    estimate = min(upper, max(lower, first.estimate * second.estimate))
    return Bounded(estimate, lower, upper)


def counter_increase(values: np.ndarray) -> tuple[float, int]:
    """(increase, resets) of a counter's samples in time order: the sum of the rises, where a
    drop is a reset after which the counter counted up from zero (Prometheus' rule: the increase
    across a reset is the value after it)."""
    samples = np.asarray(values, dtype=np.float64)
    if samples.size < 2:
        return 0.0, 0
    steps = np.diff(samples)
    resets = steps < 0
    return float(np.where(resets, samples[1:], steps).sum()), int(resets.sum())
