"""The observe report (``kind: fleetopt-observe``): what ``fleetopt observe --format json|yaml``
prints, as typed dataclasses — the one definition of its fields (``fleetopt schema observe`` prints
its JSON Schema; docs/observe.md explains the figures). :mod:`fleetopt.io.documents.build_observe`
builds it from core's observations (:mod:`fleetopt.core.observed`); ``render/observe.py`` draws
the tables from it. The observed pools are also the ``live`` section of a drift report made on
live metrics (``fleetopt drift --prometheus``, :class:`~fleetopt.io.documents.drift.LiveDocument`).

A figure read from histogram buckets is a :class:`BoundedFigure`: Prometheus' interpolated
estimate and the interval the bucket counts guarantee.
"""

from typing import Literal

from fleetopt.io.documents.typed import Document, document, field

OBSERVE_KIND = "fleetopt-observe"


@document
class BoundedFigure(Document):
    """A figure read from histogram buckets.

    Attributes:
        estimate: Prometheus' estimate (linear interpolation inside the bucket, as
            ``histogram_quantile`` and Grafana).
        lower: the buckets guarantee it is at least this.
        upper: and at most this (null: above the highest finite bucket edge, unbounded).
        exact: the buckets determine it (lower = upper).
    """

    estimate: float | None
    lower: float | None
    upper: float | None
    exact: bool


@document
class ObservedSpan(Document):
    """The span read.

    Attributes:
        start: its start, ISO 8601 UTC.
        end: its end, ISO 8601 UTC.
        seconds: its length, s.
        window_s: the rate profile's window, s (null: no windows, e.g. one scrape).
    """

    start: str = field(format="date-time")
    end: str = field(format="date-time")
    seconds: float = field(minimum=0)
    window_s: float | None = field(exclusive_minimum=0)


@document
class ObservedSlo(Document):
    """The SLO attainment is measured against (``--slo``/``--tpot-slo``, else the plan's).

    Attributes:
        ttft_s: the P99 TTFT SLO, s (null: none given, no attainment).
        tpot_s: the TPOT cap, s (null: none).
    """

    ttft_s: float | None = field(exclusive_minimum=0)
    tpot_s: float | None = field(exclusive_minimum=0)


@document
class ObservedRateProfile(Document):
    """Finished requests per window over the span (empty windows included).

    Attributes:
        window_s: the window, s.
        windows: windows in the span.
        mean_per_s: the mean rate, req/s.
        p50_per_s: the median window's rate, req/s.
        p99_per_s: the 99th-percentile window's rate (inverted CDF), req/s.
        peak_per_s: the busiest window's rate, req/s.
    """

    window_s: float = field(exclusive_minimum=0)
    windows: int = field(minimum=1)
    mean_per_s: float = field(minimum=0)
    p50_per_s: float = field(minimum=0)
    p99_per_s: float = field(minimum=0)
    peak_per_s: float = field(minimum=0)


@document
class TtftFigures(Document):
    """Time to first token.

    Attributes:
        mean: the exact mean (``_sum``/``_count``), s.
        p99: the P99, s.
    """

    mean: float | None
    p99: BoundedFigure | None


@document
class TpotFigures(Document):
    """Time per output token.

    Attributes:
        mean: the exact mean, s.
        p99: the P99, s.
        per: ``request`` (vLLM's per-request TPOT) or ``output token`` (inter-token latency of older
            vLLMs: a token-weighted distribution).
    """

    mean: float | None
    p99: BoundedFigure | None
    per: Literal["request", "output token"]


@document
class TokenFigures(Document):
    """A token-length histogram (prompt or generation tokens per request).

    Attributes:
        mean: the exact mean, tokens.
        p50: the median, tokens.
        p90: the 90th percentile, tokens.
        p99: the 99th percentile, tokens.
        buckets_le: the buckets' upper edges, tokens (null: the +Inf bucket).
    """

    mean: float | None
    p50: BoundedFigure | None
    p90: BoundedFigure | None
    p99: BoundedFigure | None
    buckets_le: list[float | None]


@document
class AttainmentDocument(Document):
    """SLO attainment and goodput.

    Attributes:
        ttft_within_slo: the share of requests whose TTFT is within the SLO (exact when the SLO is
            a bucket edge).
        tpot_within_slo: the share within the TPOT cap (null without one).
        tpot_share_per: what that share counts: ``request`` or ``output token``.
        both_within: the share within both (Fréchet's bounds; the estimate assumes independence).
        goodput_per_s: requests per second within both.
        goodput_ignores_tpot: the TPOT share is token-weighted, so ``both_within`` and goodput count
            the TTFT SLO alone.
    """

    ttft_within_slo: BoundedFigure | None
    tpot_within_slo: BoundedFigure | None
    tpot_share_per: Literal["request", "output token"]
    both_within: BoundedFigure | None
    goodput_per_s: BoundedFigure | None
    goodput_ignores_tpot: bool


@document
class WorkloadPlacement(Document):
    """Where the workload summary put each token bucket's requests.

    Attributes:
        prompt_position_in_bucket: the common relative position of a prompt length inside its
            bucket, 0 (its lower edge) to 1 (its upper edge), chosen so the mean is exact.
        generation_position_in_bucket: the same for output lengths.
        means_matched: both means are the histograms' exact means (to half a token).
        outputs_shortened_to_context: requests whose output was shortened so that prompt + output
            fits the pool's context.
    """

    prompt_position_in_bucket: float = field(minimum=0, maximum=1)
    generation_position_in_bucket: float = field(minimum=0, maximum=1)
    means_matched: bool
    outputs_shortened_to_context: int = field(minimum=0)


@document
class ObservedPool(Document):
    """One pool's figures over the span (or the whole fleet's: counts and histograms added).

    Attributes:
        instances: engines seen.
        requests: finished requests (exact counter increase).
        rate_per_s: finished requests per second over the span.
        rate_profile: the rate per window (null without windows).
        ttft_s: TTFT (null: no TTFT histogram).
        tpot_s: TPOT (null: no TPOT histogram).
        queue_time_mean_s: the mean queueing time, s (null: not published).
        running_mean: running requests, time average summed over instances.
        waiting_mean: waiting requests, time average summed over instances.
        waiting_max: the longest queue of one engine (null for the fleet).
        kv_usage_mean: KV-cache usage, time average over instances (a fraction).
        kv_usage_max: its maximum.
        preemptions_per_s: preemptions per second.
        attainment: SLO attainment and goodput (null without an SLO or a TTFT histogram).
        prompt_tokens: prompt lengths (null: no histogram).
        generation_tokens: output lengths (null: no histogram).
        workload_placement: how the workload summary placed the token buckets (null: no summary).
        missing: metrics the pool did not publish.
        notes: what the reader noticed (restarts, missed scrapes, engines started or stopped).
    """

    instances: int = field(minimum=0)
    requests: float = field(minimum=0)
    rate_per_s: float = field(minimum=0)
    rate_profile: ObservedRateProfile | None
    ttft_s: TtftFigures | None
    tpot_s: TpotFigures | None
    queue_time_mean_s: float | None
    running_mean: float | None
    waiting_mean: float | None
    waiting_max: float | None
    kv_usage_mean: float | None
    kv_usage_max: float | None
    preemptions_per_s: float | None = field(minimum=0)
    attainment: AttainmentDocument | None
    prompt_tokens: TokenFigures | None
    generation_tokens: TokenFigures | None
    workload_placement: WorkloadPlacement | None
    missing: list[str]
    notes: list[str]


@document
class ObservedWorkloadSummary(Document):
    """The workload summary made from the token histograms (the format ``fleetopt workload
    summarize`` writes; docs/observe.md says what the buckets can and cannot give).

    Attributes:
        file: where ``--output`` wrote it (null: not written).
        requests: requests in it.
        distinct_lengths: distinct (prompt, output) lengths.
        windows: windows with finished requests.
        window_s: its arrival window, s (null: no rate profile).
    """

    file: str | None
    requests: int = field(minimum=0)
    distinct_lengths: int = field(minimum=0)
    windows: int = field(minimum=0)
    window_s: float | None = field(exclusive_minimum=0)


@document
class ObserveDocument(Document):
    """What a running fleet's metrics say (``fleetopt observe``; docs/observe.md).

    Attributes:
        kind: always ``fleetopt-observe``.
        source: where the metrics came from: the server, selector and span, or the pages scraped.
        span: the span read.
        metrics: the metric read for each role (the first name the server has, across vLLM versions).
        slo: the SLO attainment is measured against.
        plan: the plan whose pools and SLO were used (null: none).
        pools: every pool, by name (``all`` without a plan or a pool label).
        fleet: all pools added up.
        workload_summary: the workload summary (null: no token histograms).
        warnings: what was missing or doubtful.
    """

    kind: Literal["fleetopt-observe"]
    source: str
    span: ObservedSpan
    metrics: dict[str, str]
    slo: ObservedSlo
    plan: str | None
    pools: dict[str, ObservedPool]
    fleet: ObservedPool
    workload_summary: ObservedWorkloadSummary | None
    warnings: list[str]
