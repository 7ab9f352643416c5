"""The drift report (``kind: fleetopt-drift``): what ``fleetopt drift --format json|yaml`` prints,
as typed dataclasses — the one definition of its fields (``fleetopt schema drift`` prints its JSON
Schema; docs/ci.md explains the checks). :mod:`fleetopt.io.documents.build_drift` builds it from
core's :class:`~fleetopt.core.drift.DriftResult` (and, on live metrics, the observation and its
findings: :mod:`fleetopt.io.documents.build_observe`); ``render/drift.py`` draws the table and the
pull-request comment from it.
"""

from typing import Literal

from fleetopt.core.drift import DriftCheck
from fleetopt.io.documents.observe import ObservedPool, ObservedSpan
from fleetopt.io.documents.typed import Document, document, field

DRIFT_KIND = "fleetopt-drift"


@document
class DriftReasonDocument(Document):
    """One reason for the verdict.

    Attributes:
        check: which check failed: ``context``, ``fit``, ``headroom``, ``replan``, ``cost`` or
            ``distribution``; on live metrics also ``slo_missed`` or ``tpot_missed`` (a pool misses
            its SLO now) and ``underused`` (a pool runs well below its plan) — the stable keys
            pipelines read.
        pool: the pool it concerns (null for fleet-wide checks).
        message: the reason in words, with the numbers behind it.
    """

    check: str = field(enum=tuple(c.value for c in DriftCheck))
    pool: str | None
    message: str


@document
class DriftPlan(Document):
    """The plan checked, as its reader read it.

    Attributes:
        file: the plan file.
        workload: the workload it was planned for (as given to ``fleetopt plan``).
        fleetopt_version: the fleetopt that wrote it.
        arrival_rate_per_s: its mean rate, req/s.
        sizing_rate_per_s: the rate its pools were sized for, req/s.
        rate_basis: ``mean``, ``peak`` or ``pNN``.
        ttft_slo_s: its P99 TTFT SLO, s.
        max_utilization: its utilization cap.
        service_model: its service model.
        compressibility: its p_c.
        b_short_tokens: its first boundary, tokens (null: one homogeneous pool).
        gamma: its γ (null: one homogeneous pool).
        total_gpus: its GPUs.
        cost_per_year_usd: its $/year.
    """

    file: str
    workload: str | None
    fleetopt_version: str | None
    arrival_rate_per_s: float = field(exclusive_minimum=0)
    sizing_rate_per_s: float = field(exclusive_minimum=0)
    rate_basis: str
    ttft_slo_s: float = field(exclusive_minimum=0)
    max_utilization: float = field(exclusive_minimum=0, maximum=1)
    service_model: str
    compressibility: float = field(minimum=0, maximum=1)
    b_short_tokens: int | None = field(minimum=1)
    gamma: float | None = field(minimum=1)
    total_gpus: int = field(minimum=0)
    cost_per_year_usd: float = field(minimum=0)


@document
class DriftToday(Document):
    """Today's workload.

    Attributes:
        workload: as given (``--cdf``).
        requests: requests in it (null for a CDF).
        arrival_rate_per_s: today's mean rate, req/s.
        arrival_rate_origin: ``given`` (``--rate``), ``observed`` (the log's) or ``planned`` (the plan's).
        sizing_rate_per_s: today's rate on the plan's basis, req/s.
        longest_request_tokens: the longest request, tokens.
        beyond_long_context_fraction: the share of requests longer than the long pool's context.
    """

    workload: str
    requests: int | None = field(minimum=0)
    arrival_rate_per_s: float = field(exclusive_minimum=0)
    arrival_rate_origin: Literal["given", "observed", "planned"]
    sizing_rate_per_s: float = field(exclusive_minimum=0)
    longest_request_tokens: int = field(minimum=0)
    beyond_long_context_fraction: float = field(minimum=0)


@document
class DriftTolerances(Document):
    """When the report says drift.

    Attributes:
        max_cost_change: |re-planned cost / planned cost − 1| above this is drift.
        max_ks: a KS distance surely above this is drift.
        min_headroom: the fleet must also fit at (1 + this) × today's rate.
    """

    max_cost_change: float = field(minimum=0)
    max_ks: float = field(minimum=0, maximum=1)
    min_headroom: float = field(minimum=0)


@document
class PoolFitDocument(Document):
    """One planned pool under today's traffic (its instances and slots as planned).

    Attributes:
        instances: instances, as planned.
        slots_per_instance: slots per instance, as planned.
        gpus: GPUs, as planned.
        context_tokens: context window, tokens.
        arrival_rate_per_s: today's rate into the pool, req/s.
        planned_arrival_rate_per_s: the plan's rate into it, req/s.
        utilization: today's slot utilization.
        planned_utilization: the plan's.
        max_utilization: the cap.
        utilization_headroom: cap − utilization.
        rate_headroom: cap / utilization − 1, the traffic growth the cap still allows.
        p99_ttft_s: today's P99 TTFT, s (null when the pool cannot keep up).
        planned_p99_ttft_s: the plan's, s.
        ttft_slo_s: the SLO, s.
        ttft_headroom_s: SLO − P99 TTFT, s (null when the pool cannot keep up).
        unstable: utilization ≥ 1 (or traffic and no instances): the queue grows without bound.
        fits: the pool meets its cap and SLOs.
        problems: what breaks, in words.
    """

    instances: int = field(minimum=0)
    slots_per_instance: int = field(minimum=0)
    gpus: int = field(minimum=0)
    context_tokens: int = field(minimum=1)
    arrival_rate_per_s: float = field(minimum=0)
    planned_arrival_rate_per_s: float | None
    utilization: float | None
    planned_utilization: float | None
    max_utilization: float
    utilization_headroom: float | None
    rate_headroom: float | None
    p99_ttft_s: float | None
    planned_p99_ttft_s: float | None
    ttft_slo_s: float
    ttft_headroom_s: float | None
    unstable: bool
    fits: bool
    problems: list[str]


@document
class FleetFitDocument(Document):
    """The planned fleet, unchanged, under a rate: α, β, α' of today's workload and every pool.

    Attributes:
        rate_factor: the rate over today's (only in ``headroom_check``: 1 + min_headroom).
        fits: every pool fits.
        arrival_rate_per_s: the fleet's rate, req/s.
        alpha: α = F(B_short) of today's workload (null for one pool).
        beta: β = F(γ·B_short) − F(B_short) (null for one pool).
        short_traffic_fraction: α', the share the first pool serves (null for one pool).
        pools: every pool, by name.
    """

    rate_factor: float | None = field(omit_if_none=True, minimum=1)
    fits: bool
    arrival_rate_per_s: float = field(minimum=0)
    alpha: float | None
    beta: float | None
    short_traffic_fraction: float | None
    pools: dict[str, PoolFitDocument]


@document
class ReplanPool(Document):
    """One pool of the re-plan.

    Attributes:
        instances: instances.
        slots_per_instance: slots per instance.
        gpus: GPUs.
    """

    instances: int = field(minimum=0)
    slots_per_instance: int = field(minimum=0)
    gpus: int = field(minimum=0)


@document
class ReplanDocument(Document):
    """The planner run again on today's workload and rate with the plan's options and hardware
    (only ``feasible`` when no fleet is).

    Attributes:
        feasible: whether any fleet meets the SLO and the cap today.
        b_short_tokens: its first boundary, tokens (null: one homogeneous pool).
        boundaries_tokens: its boundaries, tokens.
        gamma: its γ (null: one homogeneous pool).
        total_gpus: its GPUs.
        cost_per_year_usd: its $/year.
        gpu_change: its GPUs − the plan's.
        cost_change: its cost / the plan's − 1.
        pools: its pools, by name.
    """

    feasible: bool
    b_short_tokens: int | None = field(default=None, present_if=("feasible", True), minimum=1)
    boundaries_tokens: list[int] | None = field(default=None, present_if=("feasible", True), minimum=1)
    gamma: float | None = field(default=None, present_if=("feasible", True), minimum=1)
    total_gpus: int | None = field(default=None, present_if=("feasible", True), minimum=0)
    cost_per_year_usd: float | None = field(default=None, present_if=("feasible", True), minimum=0)
    gpu_change: int | None = field(default=None, present_if=("feasible", True))
    cost_change: float | None = field(default=None, present_if=("feasible", True))
    pools: dict[str, ReplanPool] | None = field(default=None, present_if=("feasible", True))


@document
class KsDocument(Document):
    """The Kolmogorov–Smirnov distance of today's total lengths from the plan's stored quantiles.

    Attributes:
        lower: the distance is at least this.
        upper: and at most this.
        estimate: the midpoint.
        resolution: upper − lower at most (the quantile grid's spacing).
        exact: the data are identical (distance 0).
        note: why the distance is not a check (only on live metrics: bucketed histograms do not
            determine total tokens).
    """

    lower: float = field(minimum=0)
    upper: float = field(minimum=0)
    estimate: float = field(minimum=0)
    resolution: float = field(minimum=0)
    exact: bool
    note: str | None = field(default=None, omit_if_none=True)


@document
class ChangeDocument(Document):
    """A figure as planned and today (null where a workload lacks it).

    Attributes:
        planned: the plan's value.
        today: today's value.
        change: today / planned − 1.
    """

    planned: float | None
    today: float | None
    change: float | None


@document
class QuantileChanges(Document):
    """Three quantiles of a length, as planned and today.

    Attributes:
        p50: the median, tokens.
        p90: the 90th percentile, tokens.
        p99: the 99th percentile, tokens.
    """

    p50: ChangeDocument
    p90: ChangeDocument
    p99: ChangeDocument


@document
class ShiftDocument(Document):
    """How far the workload moved.

    Attributes:
        ks_total_tokens: the KS distance of the total lengths.
        tokens: p50, p90 and p99 of the ``total``, ``input`` and ``output`` lengths, tokens.
        mean_total_tokens: the mean total length, tokens.
        alpha: α at the plan's B_short.
        beta: β at the plan's γ.
        arrival_rate_per_s: the mean rate, req/s.
        sizing_rate_per_s: the rate on the plan's basis, req/s.
        interarrival_scv: the inter-arrival SCV.
    """

    ks_total_tokens: KsDocument
    tokens: dict[str, QuantileChanges] = field(keys=("total", "input", "output"))
    mean_total_tokens: ChangeDocument
    alpha: ChangeDocument
    beta: ChangeDocument
    arrival_rate_per_s: ChangeDocument
    sizing_rate_per_s: ChangeDocument
    interarrival_scv: ChangeDocument


@document
class LiveDocument(Document):
    """What the fleet does now, from Prometheus (``fleetopt drift --prometheus``): the observed
    pools the live findings come from (their fields: ``fleetopt schema observe``).

    Attributes:
        prometheus: the server (its URL without credentials).
        min_load: a pool under this share of its planned mean rate runs well below its plan.
        undecided: the pools (and ``TTFT`` or ``TPOT``) whose attainment the buckets cannot decide
            (the SLO lies inside a bucket and the share straddles 99%).
        span: the span read.
        metrics: the metric read for each role.
        pools: every pool, by name.
        fleet: all pools added up.
        warnings: what was missing or doubtful.
    """

    prometheus: str
    min_load: float = field(minimum=0, maximum=1)
    undecided: list[str]
    span: ObservedSpan
    metrics: dict[str, str]
    pools: dict[str, ObservedPool]
    fleet: ObservedPool
    warnings: list[str]


@document
class DriftDocument(Document):
    """Does a planned fleet still fit today's workload? (``fleetopt drift``; docs/ci.md)

    Attributes:
        kind: always ``fleetopt-drift``.
        verdict: ``fits`` or ``drift``.
        exit_code: 0 (fits) or 1 (drift).
        reasons: every reason for a drift verdict (none when it fits).
        plan: the plan checked.
        today: today's workload.
        tolerances: when the report says drift.
        fit: the planned fleet under today's rate (null when today's requests do not fit its contexts).
        headroom_check: the same at (1 + min_headroom) × today's rate (null as ``fit``).
        replan: the planner run again today (null as ``fit``).
        shift: how far the workload moved.
        live: what the fleet does now (only with ``--prometheus``).
    """

    kind: Literal["fleetopt-drift"]
    verdict: Literal["fits", "drift"]
    exit_code: Literal[0, 1]
    reasons: list[DriftReasonDocument]
    plan: DriftPlan
    today: DriftToday
    tolerances: DriftTolerances
    fit: FleetFitDocument | None
    headroom_check: FleetFitDocument | None
    replan: ReplanDocument | None
    shift: ShiftDocument
    live: LiveDocument | None = field(default=None, omit_if_none=True)
