"""Building the observe report and the live part of a drift report: core's observations
(:class:`~fleetopt.core.observed.PoolObservation`, :class:`~fleetopt.core.observed.Attainment`,
:class:`~fleetopt.core.observed.ObservedWorkload`) as a typed
:class:`~fleetopt.io.documents.observe.ObserveDocument` (fields and schema: ``observe.py``), and
the live findings (:func:`fleetopt.core.observed.live_findings`) as drift reasons with the
observation as the drift report's ``live`` section (:func:`fleetopt.io.documents.build_drift.drift_document`
decides the verdict from all its reasons). Their words come from :mod:`fleetopt.io.documents.words`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from fleetopt.core.histograms import Bounded, Histogram, quantile
from fleetopt.core.observed import P99, Attainment, ObservedWorkload, PoolObservation, rate_profile
from fleetopt.io.documents.drift import DriftReasonDocument, LiveDocument
from fleetopt.io.documents.observe import (
    OBSERVE_KIND,
    AttainmentDocument,
    BoundedFigure,
    ObserveDocument,
    ObservedPool,
    ObservedRateProfile,
    ObservedSlo,
    ObservedSpan,
    ObservedWorkloadSummary,
    TokenFigures,
    TpotFigures,
    TtftFigures,
    WorkloadPlacement,
)
from fleetopt.io.documents.typed import finite_or_none
from fleetopt.io.documents.words import live_finding_sentence

if TYPE_CHECKING:
    from fleetopt.core.observed import LiveFinding
    from fleetopt.core.summary import LogSummary


def _iso(moment_s: float) -> str:
    import numpy as np

    return str(np.datetime64(int(moment_s), "s")) + "Z"


def bounded(value: Bounded | None) -> BoundedFigure | None:
    """A figure read from buckets (None stays None; an unbounded end is null)."""
    if value is None:
        return None
    return BoundedFigure(
        estimate=finite_or_none(value.estimate),
        lower=finite_or_none(value.lower),
        upper=finite_or_none(value.upper),
        exact=value.exact,
    )


def _per(per_request: bool) -> str:
    return "request" if per_request else "output token"


def _token_figures(histogram: Histogram | None) -> TokenFigures | None:
    if histogram is None:
        return None
    return TokenFigures(
        mean=histogram.mean,
        p50=bounded(quantile(histogram, 0.5)),
        p90=bounded(quantile(histogram, 0.9)),
        p99=bounded(quantile(histogram, P99)),
        buckets_le=[finite_or_none(edge) for edge in histogram.upper_edges.tolist()],
    )


def pool_document(
    pool: PoolObservation, result: Attainment | None = None, workload: ObservedWorkload | None = None
) -> ObservedPool:
    """One pool's figures (or the fleet's), with its attainment and workload summary when it has them."""
    profile = rate_profile(pool)
    return ObservedPool(
        instances=pool.instances,
        requests=pool.requests,
        rate_per_s=pool.request_rate_per_s,
        rate_profile=None
        if profile is None
        else ObservedRateProfile(
            window_s=profile.window_s,
            windows=profile.windows,
            mean_per_s=profile.mean_per_s,
            p50_per_s=profile.p50_per_s,
            p99_per_s=profile.p99_per_s,
            peak_per_s=profile.peak_per_s,
        ),
        ttft_s=None if pool.ttft is None else TtftFigures(pool.ttft.mean, bounded(quantile(pool.ttft, P99))),
        tpot_s=None
        if pool.tpot is None
        else TpotFigures(pool.tpot.mean, bounded(quantile(pool.tpot, P99)), _per(pool.tpot_per_request)),
        queue_time_mean_s=None if pool.queue_time is None else pool.queue_time.mean,
        running_mean=pool.running_mean,
        waiting_mean=pool.waiting_mean,
        waiting_max=pool.waiting_max,
        kv_usage_mean=pool.kv_usage_mean,
        kv_usage_max=pool.kv_usage_max,
        preemptions_per_s=pool.preemption_rate_per_s,
        attainment=None
        if result is None
        else AttainmentDocument(
            ttft_within_slo=bounded(result.ttft_share),
            tpot_within_slo=bounded(result.tpot_share),
            tpot_share_per=_per(result.tpot_per_request),
            both_within=bounded(result.both),
            goodput_per_s=bounded(result.goodput_per_s),
            goodput_ignores_tpot=result.goodput_ignores_tpot,
        ),
        prompt_tokens=_token_figures(pool.prompt_tokens),
        generation_tokens=_token_figures(pool.generation_tokens),
        workload_placement=None
        if workload is None
        else WorkloadPlacement(
            prompt_position_in_bucket=workload.prompt.position,
            generation_position_in_bucket=workload.generation.position,
            means_matched=workload.prompt.mean_matched and workload.generation.mean_matched,
            outputs_shortened_to_context=workload.capped_requests,
        ),
        missing=list(pool.missing),
        notes=list(pool.notes),
    )


def observe_document(
    *,
    source: str,
    start_s: float,
    end_s: float,
    window_s: float | None,
    metrics: Mapping[str, str],
    ttft_slo_s: float | None,
    tpot_slo_s: float | None,
    plan: str | None,
    pools: Sequence[PoolObservation],
    fleet: PoolObservation,
    attainment: Mapping[str, Attainment],
    workloads: Mapping[str, ObservedWorkload],
    summary: LogSummary | None,
    summary_file: str | None,
    warnings: Iterable[str],
) -> ObserveDocument:
    """The ``fleetopt observe`` report (schema: :mod:`fleetopt.io.documents.observe`;
    docs/observe.md). ``attainment`` and ``workloads``: by pool name (the fleet's attainment under
    ``fleet.pool``); ``plan``: the plan file read, if any; ``summary_file``: where the summary was
    written, if it was."""
    return ObserveDocument(
        kind=OBSERVE_KIND,
        source=source,
        span=ObservedSpan(start=_iso(start_s), end=_iso(end_s), seconds=end_s - start_s, window_s=window_s),
        metrics=dict(metrics),
        slo=ObservedSlo(ttft_s=ttft_slo_s, tpot_s=tpot_slo_s),
        plan=plan,
        pools={
            pool.pool: pool_document(pool, attainment.get(pool.pool), workloads.get(pool.pool))
            for pool in pools
        },
        fleet=pool_document(fleet, attainment.get(fleet.pool)),
        workload_summary=None
        if summary is None
        else ObservedWorkloadSummary(
            file=summary_file,
            requests=summary.request_count,
            distinct_lengths=int(summary.counts.size),
            windows=int(summary.window_counts.size),
            window_s=None if summary.window_us is None else summary.window_us / 1e6,
        ),
        warnings=list(warnings),
    )


def live_document(
    observed: ObserveDocument, *, prometheus: str, min_load: float, undecided: Iterable[str]
) -> LiveDocument:
    """The ``live`` section of a drift report: the observation's pools, span and metrics."""
    return LiveDocument(
        prometheus=prometheus,
        min_load=min_load,
        undecided=list(undecided),
        span=observed.span,
        metrics=observed.metrics,
        pools=observed.pools,
        fleet=observed.fleet,
        warnings=observed.warnings,
    )


def live_reasons(
    findings: Iterable[LiveFinding], ttft_slo_s: float, tpot_slo_s: float | None, min_load: float
) -> list[DriftReasonDocument]:
    """The live findings as drift reasons (``slo_missed``, ``tpot_missed``, ``underused``)."""
    return [
        DriftReasonDocument(
            check=finding.kind.value,
            pool=finding.pool,
            message=live_finding_sentence(finding, ttft_slo_s, tpot_slo_s, min_load),
        )
        for finding in findings
    ]
