"""What a running fleet's metrics say: per pool, SLO attainment, goodput, and a workload summary.

The inputs are counts a serving engine publishes (vLLM's histograms and counters, read by
:mod:`fleetopt.io.prometheus` or :mod:`fleetopt.io.scrape`): per pool, the requests finished
per window, histograms of TTFT, TPOT, prompt and generation tokens, and gauge averages. Every
figure derived here from a histogram is a :class:`~fleetopt.core.histograms.Bounded` — the
interval the buckets guarantee and Prometheus' interpolated estimate.

**A workload from token histograms** (:func:`summary_from_histograms`). The histograms give, per
pool, the exact number of requests whose prompt (and, separately, whose output) falls in each
bucket, and the exact mean of each. They do not give a length inside a bucket, nor which prompt
went with which output. The summary therefore

* puts each bucket's requests at one whole-token length inside it, at the same relative position
  in every bucket, chosen so the mean equals the histogram's ``_sum``/``_count`` (to half a token;
  the midpoint when the sum is unknown);
* pairs prompts and outputs as if independent, rounded to whole requests so that both marginal
  counts stay exact (:func:`independent_counts`), and shortens an output so that no pair exceeds
  the pool's context (vLLM cannot have served it);
* counts requests per window as they *finished* (the counter moves at completion, not arrival).

Its F at every bucket edge is exact per marginal; quantiles are known only to within their
bucket (vLLM's token buckets are 1-2-5 steps: a factor of 2–2.5), and anything that depends on
the joint distribution of prompt and output lengths (total tokens, hence routing by token budget)
is an assumption. A request log, when there is one, is exact: prefer it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from fleetopt.core.histograms import Bounded, Histogram, both_within, quantile, share_at_most
from fleetopt.core.summary import LogSummary, SummarySource, make_summary
from fleetopt.errors import ValidationError

if TYPE_CHECKING:  # the drift vocabulary (and the planner behind it) loads when live drift runs
    from fleetopt.core.drift import DriftCheck

#: The quantile a P99 SLO is stated at.
P99 = 0.99


@dataclass(frozen=True)
class PoolObservation:
    """One pool's metrics over an observed span (``span_s`` seconds ending at ``end_s``, Unix).

    ``requests``: finished requests (exact counter increase); ``window_s``/``window_starts_s``/
    ``window_counts``: finished requests per window (only windows with requests); histograms as
    counted over the span (None when the engine does not publish them); ``tpot_per_request``:
    the TPOT histogram holds one value per request (vLLM's request TPOT), else one per output
    token (inter-token latency: shares are token-weighted). Gauges are time averages and maxima
    of the pool's sums over its instances (``kv_usage_*``: the mean over instances, a fraction).
    ``missing``: metrics the pool did not publish; ``notes``: what the reader noticed (resets,
    gaps).
    """

    pool: str
    span_s: float
    end_s: float
    instances: int
    requests: float
    window_s: float | None = None
    window_starts_s: np.ndarray = field(default_factory=lambda: np.zeros(0))
    window_counts: np.ndarray = field(default_factory=lambda: np.zeros(0))
    ttft: Histogram | None = None
    tpot: Histogram | None = None
    tpot_per_request: bool = True
    prompt_tokens: Histogram | None = None
    generation_tokens: Histogram | None = None
    queue_time: Histogram | None = None
    preemptions: float | None = None
    running_mean: float | None = None
    waiting_mean: float | None = None
    waiting_max: float | None = None
    kv_usage_mean: float | None = None
    kv_usage_max: float | None = None
    resets: int = 0
    missing: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def request_rate_per_s(self) -> float:
        return self.requests / self.span_s if self.span_s > 0 else 0.0

    @property
    def preemption_rate_per_s(self) -> float | None:
        return None if self.preemptions is None or self.span_s <= 0 else self.preemptions / self.span_s


@dataclass(frozen=True)
class Attainment:
    """SLO attainment of one pool: P99 TTFT and TPOT (bounded), the share of requests within the
    TTFT SLO and within the TPOT cap, the share within both, and goodput (requests/s within both).

    ``tpot_share`` is token-weighted when the engine publishes only inter-token latency
    (``tpot_per_request`` False): then ``both`` and ``goodput_per_s`` use the TTFT share alone and
    ``goodput_ignores_tpot`` says so.
    """

    ttft_slo_s: float
    tpot_slo_s: float | None
    p99_ttft_s: Bounded | None
    p99_tpot_s: Bounded | None
    ttft_share: Bounded | None
    tpot_share: Bounded | None
    both: Bounded | None
    goodput_per_s: Bounded | None
    tpot_per_request: bool
    goodput_ignores_tpot: bool


def scaled(value: Bounded, factor: float) -> Bounded:
    return Bounded(value.estimate * factor, value.lower * factor, value.upper * factor)


def attainment(pool: PoolObservation, ttft_slo_s: float, tpot_slo_s: float | None = None) -> Attainment:
    """The pool's SLO attainment and goodput from its histograms (:mod:`fleetopt.core.histograms`)."""
    ttft_share = share_at_most(pool.ttft, ttft_slo_s) if pool.ttft is not None else None
    tpot_share = (
        share_at_most(pool.tpot, tpot_slo_s) if pool.tpot is not None and tpot_slo_s is not None else None
    )
    ignores = tpot_share is not None and not pool.tpot_per_request
    both = None
    if ttft_share is not None:
        both = both_within(ttft_share, None if ignores else tpot_share)
    return Attainment(
        ttft_slo_s=ttft_slo_s,
        tpot_slo_s=tpot_slo_s,
        p99_ttft_s=quantile(pool.ttft, P99) if pool.ttft is not None else None,
        p99_tpot_s=quantile(pool.tpot, P99) if pool.tpot is not None else None,
        ttft_share=ttft_share,
        tpot_share=tpot_share,
        both=both,
        goodput_per_s=None if both is None else scaled(both, pool.request_rate_per_s),
        tpot_per_request=pool.tpot_per_request,
        goodput_ignores_tpot=ignores,
    )


# -- a workload summary from token histograms ---------------------------------------------------


@dataclass(frozen=True)
class Placement:
    """Where a token histogram's buckets were put: one whole-token length per bucket (``tokens``,
    zero-count buckets included), the common relative ``position`` in [0, 1] inside each bucket,
    and whether it matches the exact mean (``mean_matched``; False: the sum was unknown or the
    mean lies outside what the buckets allow)."""

    tokens: np.ndarray
    counts: np.ndarray
    position: float
    mean_matched: bool


def place_buckets(histogram: Histogram, top_tokens: int, what: str) -> Placement:
    """One whole-token length per bucket: lo + f·(hi − lo) with f common to all buckets and the
    mean Σ cᵢ·lengthᵢ / N equal to the histogram's exact mean (f clipped to [0, 1]; the midpoint
    when the sum is unknown). The +Inf bucket spans (last edge, ``top_tokens``]."""
    upper = histogram.upper_edges.copy()
    last_finite = float(upper[-2]) if upper.size > 1 else 0.0
    if not top_tokens > last_finite:
        raise ValidationError(
            f"{what}: the longest request allowed ({top_tokens:,} tokens) is not above the last finite "
            f"bucket edge ({last_finite:g})"
        )
    upper[-1] = float(top_tokens)
    whole_upper = np.floor(upper + 1e-9)
    whole_lower = np.concatenate(([1.0], np.floor(upper[:-1] + 1e-9) + 1.0))
    whole_lower = np.minimum(whole_lower, whole_upper)
    counts = histogram.bucket_counts
    total = counts.sum()
    width = float((counts * (whole_upper - whole_lower)).sum())
    base = float((counts * whole_lower).sum())
    matched = False
    position = 0.5
    if histogram.sum is not None and total > 0:
        if width > 0:
            raw = (histogram.sum - base) / width
            position = min(1.0, max(0.0, raw))
            matched = 0.0 <= raw <= 1.0
        else:
            matched = abs(histogram.sum - base) <= 0.5 * total
    tokens = np.rint(whole_lower + position * (whole_upper - whole_lower)).astype(np.int64)
    return Placement(tokens, np.rint(counts).astype(np.int64), position, matched)


def independent_counts(rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """Whole counts nᵢⱼ ≈ rᵢ·cⱼ/N whose row sums are ``rows`` and column sums ``columns`` exactly.

    nᵢⱼ is the second difference of round(Rᵢ·Cⱼ/N) over the cumulative sums R, C (exact integer
    arithmetic), so every row and column adds up exactly; the rare −1 left by rounding is moved
    to a cell of the same row and column that has room (a 2×2 exchange keeps the sums).
    """
    rows = [int(v) for v in rows]
    columns = [int(v) for v in columns]
    total = sum(rows)
    if total != sum(columns):
        raise ValidationError(f"the two histograms count {total:,} and {sum(columns):,} requests")
    if total == 0:
        return np.zeros((len(rows), len(columns)), dtype=np.int64)
    cum_r = np.cumsum([0, *rows]).tolist()
    cum_c = np.cumsum([0, *columns]).tolist()
    grid = [[(2 * r * c + total) // (2 * total) for c in cum_c] for r in cum_r]
    cells = np.array(
        [
            [grid[i + 1][j + 1] - grid[i][j + 1] - grid[i + 1][j] + grid[i][j] for j in range(len(columns))]
            for i in range(len(rows))
        ],
        dtype=np.int64,
    )
    while (cells < 0).any():
        i, j = (int(k) for k in np.argwhere(cells < 0)[0])
        j2, i2 = int(np.argmax(cells[i])), int(np.argmax(cells[:, j]))
        cells[i, j] += 1
        cells[i2, j2] += 1
        cells[i, j2] -= 1
        cells[i2, j] -= 1
    return cells


@dataclass(frozen=True)
class ObservedWorkload:
    """A pool's workload summary from its histograms, with how the buckets were placed."""

    summary: LogSummary
    prompt: Placement
    generation: Placement
    capped_requests: int


def summary_from_histograms(
    pool: PoolObservation, source: str, context_tokens: int, window_us: int
) -> ObservedWorkload:
    """The pool's workload as a mergeable :class:`LogSummary` (module docstring: what it can and
    cannot be). ``context_tokens``: the pool's context (vLLM's ``--max-model-len``): the top of the
    +Inf bucket and the longest total a pair may have. Windows: finished requests per window."""
    if pool.prompt_tokens is None or pool.generation_tokens is None:
        raise ValidationError(
            f"pool {pool.pool}: no prompt or generation token histogram "
            "(vllm:request_prompt_tokens / vllm:request_generation_tokens); a workload needs both"
        )
    prompt = place_buckets(pool.prompt_tokens, context_tokens, f"pool {pool.pool}: prompt tokens")
    generation = place_buckets(pool.generation_tokens, context_tokens, f"pool {pool.pool}: generation tokens")
    if prompt.counts.sum() != generation.counts.sum():
        raise ValidationError(
            f"pool {pool.pool}: the prompt-token histogram counts {int(prompt.counts.sum()):,} requests and "
            f"the generation-token histogram {int(generation.counts.sum()):,}"
        )
    cells = independent_counts(prompt.counts, generation.counts)
    i, j = np.nonzero(cells)
    inputs, outputs, counts = prompt.tokens[i], generation.tokens[j], cells[i, j]
    over = inputs + outputs > context_tokens
    capped = int(counts[over].sum())
    outputs = np.where(over, np.maximum(context_tokens - inputs, 0), outputs)
    inputs = np.where(inputs + outputs < 1, 1, inputs)
    total = int(counts.sum())
    if total == 0:
        raise ValidationError(f"pool {pool.pool}: no finished requests in the observed span")
    starts_us = np.rint(np.asarray(pool.window_starts_s, dtype=np.float64) * 1e6).astype(np.int64)
    window_counts = np.rint(np.asarray(pool.window_counts, dtype=np.float64)).astype(np.int64)
    keep = window_counts > 0
    starts_us, window_counts = starts_us[keep], window_counts[keep]
    if pool.window_s is None or int(window_counts.sum()) != total or starts_us.size == 0:
        record = SummarySource(source, total)
        summary = make_summary(
            inputs, outputs, counts, None, np.zeros(0, np.int64), np.zeros(0, np.int64), (record,)
        )
    else:
        if np.any(starts_us % window_us):
            raise ValidationError(f"pool {pool.pool}: windows do not start on multiples of {window_us} µs")
        record = SummarySource(
            source, total, int(starts_us.min()), int(starts_us.max()) + window_us - 1, utc=True
        )
        summary = make_summary(inputs, outputs, counts, window_us, starts_us, window_counts, (record,))
    summary.check(f"pool {pool.pool}")
    return ObservedWorkload(summary, prompt, generation, capped)


# -- live drift findings --------------------------------------------------------------------------


@dataclass(frozen=True)
class LiveFinding:
    """One thing the live metrics say about a plan: ``kind`` :attr:`~DriftCheck.SLO_MISSED` (the
    pool's observed P99 surely exceeds the SLO: its share within it, ``observed``, is surely below
    ``planned`` = 99%), :attr:`~DriftCheck.TPOT_MISSED` (the same for the TPOT cap), or
    :attr:`~DriftCheck.UNDERUSED` (the pool's ``observed`` mean rate is under ``min_load`` × its
    ``planned`` one)."""

    kind: DriftCheck
    pool: str
    observed: float
    planned: float
    bounded: Bounded | None = None


def live_findings(
    observations: list[PoolObservation],
    planned_rates_per_s: dict[str, float | None],
    ttft_slo_s: float,
    tpot_slo_s: float | None,
    min_load: float,
) -> tuple[list[LiveFinding], list[str]]:
    """The live drift reasons and the pools whose attainment the buckets cannot decide.

    A pool misses its SLO now when the share of its requests within the TTFT SLO is *surely*
    below 99% (its upper bound is), i.e. its P99 TTFT surely exceeds the SLO; undecided when the
    interval straddles 99% (the SLO lies inside a bucket). It runs well below its plan when its
    observed mean rate is under ``min_load`` × the pool's planned mean rate.
    """
    from fleetopt.core.drift import DriftCheck

    findings: list[LiveFinding] = []
    undecided: list[str] = []
    for pool in observations:
        result = attainment(pool, ttft_slo_s, tpot_slo_s)
        for kind, share, limit in (
            (DriftCheck.SLO_MISSED, result.ttft_share, ttft_slo_s),
            (DriftCheck.TPOT_MISSED, result.tpot_share if result.tpot_per_request else None, tpot_slo_s),
        ):
            if share is None or limit is None:
                continue
            if share.upper < P99:
                findings.append(LiveFinding(kind, pool.pool, share.upper, P99, share))
            elif share.lower < P99 <= share.upper:
                undecided.append(f"{pool.pool} ({'TTFT' if kind is DriftCheck.SLO_MISSED else 'TPOT'})")
        planned = planned_rates_per_s.get(pool.pool)
        rate = pool.request_rate_per_s
        if planned is not None and planned > 0 and min_load > 0 and rate < min_load * planned:
            findings.append(LiveFinding(DriftCheck.UNDERUSED, pool.pool, rate, planned))
    return findings, undecided


def fleet_observation(pools: list[PoolObservation], name: str = "fleet") -> PoolObservation:
    """The whole fleet as one pool: counts and histograms added (histograms only where every pool
    has one with the same buckets), gauges summed (KV usage: the mean and max over pools)."""
    from fleetopt.core.histograms import add_histograms

    if not pools:
        raise ValidationError("no pool to add up")

    def added(role: str) -> Histogram | None:
        parts = [getattr(p, role) for p in pools]
        if any(part is None for part in parts):
            return None
        try:
            return add_histograms(parts, role)
        except ValidationError:
            return None

    def total(role: str) -> float | None:
        values = [getattr(p, role) for p in pools]
        return None if any(v is None for v in values) else float(sum(values))

    starts = np.concatenate([np.asarray(p.window_starts_s, dtype=np.float64) for p in pools])
    counts = np.concatenate([np.asarray(p.window_counts, dtype=np.float64) for p in pools])
    unique, where = np.unique(starts, return_inverse=True)
    summed = np.bincount(where, weights=counts, minlength=unique.size) if unique.size else np.zeros(0)
    kv = [p.kv_usage_mean for p in pools if p.kv_usage_mean is not None]
    kv_max = [p.kv_usage_max for p in pools if p.kv_usage_max is not None]
    first = pools[0]
    return PoolObservation(
        pool=name, span_s=first.span_s, end_s=first.end_s, instances=sum(p.instances for p in pools),
        requests=float(sum(p.requests for p in pools)), window_s=first.window_s, window_starts_s=unique,
        window_counts=summed, ttft=added("ttft"), tpot=added("tpot"),
        tpot_per_request=all(p.tpot_per_request for p in pools), prompt_tokens=added("prompt_tokens"),
        generation_tokens=added("generation_tokens"), queue_time=added("queue_time"),
        preemptions=total("preemptions"), running_mean=total("running_mean"),
        waiting_mean=total("waiting_mean"), waiting_max=None,
        kv_usage_mean=sum(kv) / len(kv) if kv else None, kv_usage_max=max(kv_max) if kv_max else None,
        resets=sum(p.resets for p in pools),
    )  # fmt: skip


@dataclass(frozen=True)
class RateProfile:
    """Finished requests per window over the observed span (empty windows included): mean, median,
    99th percentile (inverted CDF) and peak rates, req/s."""

    window_s: float
    windows: int
    mean_per_s: float
    p50_per_s: float
    p99_per_s: float
    peak_per_s: float


def rate_profile(pool: PoolObservation) -> RateProfile | None:
    """The pool's windowed rate profile (None without windows)."""
    if pool.window_s is None or pool.window_s <= 0 or pool.span_s < pool.window_s:
        return None
    windows = int(round(pool.span_s / pool.window_s))
    counts = np.zeros(windows)
    observed = np.asarray(pool.window_counts, dtype=np.float64)
    counts[: observed.size] = np.sort(observed)[::-1][:windows]  # order is irrelevant to the quantiles
    rates = counts / pool.window_s
    return RateProfile(
        float(pool.window_s), windows, float(rates.mean()),
        float(np.percentile(rates, 50, method="inverted_cdf")),
        float(np.percentile(rates, 99, method="inverted_cdf")), float(rates.max()),
    )  # fmt: skip
