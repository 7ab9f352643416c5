"""The plan document (``kind: fleetopt-plan``, schema version 2): what ``fleetopt plan --format
json|yaml`` prints and ``--output`` writes, as typed dataclasses — the one definition of its fields.

:mod:`fleetopt.io.documents.build_plan` builds a :class:`PlanDocument` from a planner result,
:func:`~fleetopt.io.documents.typed.to_document` writes it, :func:`read_plan_document` reads one
back (version 1 files are upgraded first), ``render/plan.py`` draws it, and ``fleetopt schema
plan`` prints its JSON Schema. Units are in every key; non-finite numbers are null.

Adding a field: add it to its dataclass (with an ``Attributes:`` line, which becomes its
description in the schema) and give it ``since=`` the value files written before it read as; set
it in ``build_plan.py``. A field that changes meaning or disappears bumps :data:`SCHEMA_VERSION`
and gets an upgrade step in :func:`upgrade`.
"""

import copy
from typing import TYPE_CHECKING, Any, Literal

from fleetopt.core.service import SERVICE_MODELS, PoolHardware
from fleetopt.core.simulate import DISPATCH_POLICIES
from fleetopt.defaults import DEFAULT_DISPATCH
from fleetopt.errors import ValidationError
from fleetopt.io.documents.prefix import PrefixCachingDocument
from fleetopt.io.documents.typed import Document, constrain, document, field, from_document, spec

if TYPE_CHECKING:  # a CDF's plan has neither: core.workload_stats is imported when a document holds one
    from fleetopt.core.workload_stats import ArrivalStatistics, RateProfile


def __getattr__(name: str) -> Any:
    """PEP 562: the arrival statistics' types, imported on first use (their module costs a plan of
    a CDF ~5 ms of start-up, and it has none)."""
    if name in ("ArrivalStatistics", "RateProfile"):
        from fleetopt.core import workload_stats

        return getattr(workload_stats, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: Version 2 (fleetopt 0.2): fleets of any number of pools (``pool-1`` … ``pool-K`` beyond two),
#: ``routing.boundaries_tokens``, ``pool_count``, ``inputs.max_pools``, ``best_by_pool_count``.
SCHEMA_VERSION = 2
#: Versions this fleetopt reads (version 1 plans are two-pool or homogeneous plans).
READABLE_SCHEMA_VERSIONS = (1, 2)
PLAN_KIND = "fleetopt-plan"

_POSITIVE = spec(exclusive_minimum=0)
_NON_NEGATIVE = spec(minimum=0)
_AT_LEAST_ONE = spec(minimum=1)
_NAME = spec(non_empty=True)

constrain(
    PoolHardware,
    serving_name=_NAME, model_name=_NAME, gpu_name=_NAME,
    gpus_per_instance=_AT_LEAST_ONE, gpu_hour_usd=_POSITIVE, iteration_base_s=_POSITIVE,
    iteration_per_slot_s=_NON_NEGATIVE, prefill_chunk_tokens=_AT_LEAST_ONE,
    calibration_context_tokens=_AT_LEAST_ONE, kv_capacity_tokens=_AT_LEAST_ONE,
    kv_block_tokens=_AT_LEAST_ONE, max_num_seqs=_AT_LEAST_ONE, prefill_per_token_s=_NON_NEGATIVE,
    iteration_per_kv_token_s=_NON_NEGATIVE, peak_flops_per_s=_POSITIVE,
    memory_bandwidth_bytes_per_s=_POSITIVE, parameters_active=_POSITIVE, weight_bytes=_POSITIVE,
    ttft_overhead_s=_NON_NEGATIVE, kv_bytes_per_token=_POSITIVE, max_context_tokens=_AT_LEAST_ONE,
)  # fmt: skip


def _described(bounds: dict[str, Any], text: str) -> dict[str, Any]:
    return spec(**{**{k: v for k, v in bounds["fleetopt"].items() if v is not None}, "description": text})


constrain(
    "fleetopt.core.workload_stats.RateProfile",
    window_s=_described(_POSITIVE, "the window, s."),
    windows=_described(_AT_LEAST_ONE, "whole windows between the first and the last arrival."),
    mean_rate_per_s=_described(_NON_NEGATIVE, "the windows' mean rate, req/s."),
    peak_rate_per_s=_described(_NON_NEGATIVE, "the busiest window's rate, req/s."),
    rate_p50_per_s=_described(_NON_NEGATIVE, "the median window's rate, req/s."),
    rate_p90_per_s=_described(_NON_NEGATIVE, "the 90th-percentile window's rate, req/s."),
    rate_p99_per_s=_described(_NON_NEGATIVE, "the 99th-percentile window's rate, req/s."),
    peak_to_mean_ratio=spec(minimum=0, nullable=True, description="peak / mean rate."),
    index_of_dispersion=spec(
        minimum=0, nullable=True, description="Var[count] / E[count] over the windows (1: Poisson)."
    ),
)
constrain(
    "fleetopt.core.workload_stats.ArrivalStatistics",
    request_count=_described(_NON_NEGATIVE, "requests with a timestamp."),
    span_s=_described(_NON_NEGATIVE, "last − first arrival, s."),
    mean_rate_per_s=_described(_NON_NEGATIVE, "(n − 1) / span, req/s."),
    mean_interarrival_s=_described(_NON_NEGATIVE, "the mean gap between arrivals, s."),
    interarrival_scv=_described(_NON_NEGATIVE, "the gaps' squared coefficient of variation (1: Poisson)."),
    interarrival_cv=_described(_NON_NEGATIVE, "the gaps' coefficient of variation."),
    peak_requests_per_min=_described(_NON_NEGATIVE, "the most arrivals in a 60 s window starting at one."),
    peak_rate_per_s=_described(_NON_NEGATIVE, "that peak as a rate, req/s."),
    peak_to_mean_ratio=_described(_NON_NEGATIVE, "peak / mean rate."),
)


@document
class WorkloadReader(Document):
    """How the workload was read: the reader options given (only those given) and, for a CDF, the
    model that split its total lengths into prompt and output tokens.

    Attributes:
        input_format: ``--input-format``.
        log_format: ``--log-format`` (a gateway's or engine's column preset).
        input_column: ``--input-column``.
        output_column: ``--output-column``.
        time_column: ``--time-column``.
        time_unit: ``--time-unit``.
        split_model: a CDF's prompt/output split (``fleet-sim``, ``input-fraction:F``, ``output-tokens:N``).
    """

    input_format: str | None = field(default=None, omit_if_none=True)
    log_format: str | None = field(default=None, omit_if_none=True)
    input_column: str | None = field(default=None, omit_if_none=True)
    output_column: str | None = field(default=None, omit_if_none=True)
    time_column: str | None = field(default=None, omit_if_none=True)
    time_unit: str | None = field(default=None, omit_if_none=True)
    split_model: str | None = field(default=None, omit_if_none=True)


@document
class WorkloadFingerprint(Document):
    """A compact, comparable summary of the planned workload: ``fleetopt drift`` compares today's
    with it (sizes, quantiles, α and β at the plan's routing, arrivals, a hash of the data).

    Attributes:
        sha256: SHA-256 of the workload's atoms (equal hashes: equal data).
        kind: ``requests`` (a log or summary) or ``cdf``.
        requests: requests in the log (null for a CDF).
        atoms: distinct (prompt, output) lengths the workload holds.
        mean_input_tokens: mean prompt length, tokens.
        mean_output_tokens: mean output length, tokens.
        mean_total_tokens: mean prompt + output length, tokens.
        input_tokens_p50_p90_p99: prompt-length quantiles, tokens.
        output_tokens_p50_p90_p99: output-length quantiles, tokens.
        total_tokens_quantile_levels: the levels 0, 0.001, …, 1 of ``total_tokens_quantiles``.
        total_tokens_quantiles: inverted-CDF quantiles of the total length at those levels, tokens
            (the KS distance against them is known to ±0.0005).
        alpha_at_b_short: α = F(B_short) of the best fleet (absent without one).
        beta_at_gamma: β = F(γ·B_short) − F(B_short) of the best fleet (absent without one).
        arrivals: the log's arrival statistics (absent without timestamps).
    """

    sha256: str
    kind: Literal["requests", "cdf"]
    requests: int | None = field(minimum=0)
    atoms: int = field(minimum=1)
    mean_input_tokens: float = field(minimum=0)
    mean_output_tokens: float = field(minimum=0)
    mean_total_tokens: float = field(minimum=0)
    input_tokens_p50_p90_p99: tuple[int, int, int]
    output_tokens_p50_p90_p99: tuple[int, int, int]
    total_tokens_quantile_levels: list[float] = field(min_items=1, minimum=0, maximum=1)
    total_tokens_quantiles: list[int] = field(min_items=1)
    alpha_at_b_short: float | None = field(omit_if_none=True, minimum=0)
    beta_at_gamma: float | None = field(omit_if_none=True)
    arrivals: "ArrivalStatistics | None" = field(omit_if_none=True)


@document
class RateBasis(Document):
    """What every pool was sized for: the basis, its window, the sizing rate over the mean, the
    log's rate profile and its burstiness.

    Attributes:
        basis: ``mean``, ``peak`` or ``pNN`` (a percentile of the windowed rates).
        window_s: the rate window, s (null without a rate profile).
        mean_rate_per_s: the mean arrival rate, req/s.
        sizing_rate_per_s: the rate every pool was sized for, req/s (mean × factor).
        factor: sizing rate / mean rate (≥ 1), read from the profile with its Poisson counting noise
            taken out (:func:`fleetopt.core.arrivals.denoised_counts`).
        observed_factor: the same basis of the profile as observed, noise included (null on a plan
            written before it was recorded, or without a profile).
        counting_noise_factor: observed_factor − factor: how much of the log's basis over its mean was
            Poisson counting noise, left out of the sizing rate (null as observed_factor).
        peak_to_mean_ratio: the log's busiest window over its mean, whatever the basis (null without
            a profile).
        profile: the log's windowed rate profile (null without one).
        overdispersed: the window counts fail Fisher's index-of-dispersion test for Poisson at 1%.
        arrival_dispersion: the within-window index of dispersion curve, [τ s, D(τ)] pairs behind each
            pool's arrival SCV ([] on the mean basis: Poisson).
    """

    basis: str = field(pattern=r"^(mean|peak|p[0-9]+(\.[0-9]+)?)$")
    window_s: float | None = field(exclusive_minimum=0)
    mean_rate_per_s: float = field(exclusive_minimum=0)
    sizing_rate_per_s: float = field(exclusive_minimum=0)
    factor: float = field(minimum=1)
    observed_factor: float | None = field(minimum=1, since=None)
    counting_noise_factor: float | None = field(minimum=0, since=None)
    peak_to_mean_ratio: float | None = field(minimum=0)
    profile: "RateProfile | None"
    overdispersed: bool
    arrival_dispersion: list[tuple[float, float]] = field(minimum=0)


@document
class Profiles(Document):
    """The serving calibrations the pools were planned with (the last pool runs ``long``, the
    others ``short``).

    Attributes:
        short: every pool but the last.
        long: the last (longest-context) pool, and the homogeneous fleet.
        pools: the best fleet's hardware by pool name, when its pools run on hardware the search
            chose (``--hardware``); absent otherwise (each pool then runs ``short`` or ``long``).
    """

    short: PoolHardware
    long: PoolHardware
    pools: dict[str, PoolHardware] | None = field(default=None, since=None, omit_if_none=True)


@document
class PlanInputs(Document):
    """What the plan was computed from.

    Attributes:
        workload: the workload as given (a bundled name or a path).
        workload_reader: how it was read (reader options for reading it again).
        workload_fingerprint: its comparable summary, for drift checks.
        arrival_rate_per_s: the mean arrival rate, req/s (``--rate``, else the log's (n − 1)/span).
        sizing_rate_per_s: the rate every pool was sized for (mean × ``rate_basis.factor``), req/s;
            absent in plans before the rate basis, which were sized at the mean.
        arrival_rate_origin: ``given`` (``--rate``), ``observed`` (the log's) or ``default``.
        rate_basis: what the plan sized for (absent in plans before the rate basis: the mean).
        ttft_slo_s: the P99 time-to-first-token SLO, s.
        tpot_slo_s: the cap on the iteration time (TPOT), s, or null.
        quantile: the TTFT quantile the SLO applies to (0.99).
        max_utilization: the utilization cap ρ_max.
        compressibility: p_c, the share of band requests Compress-and-Route compresses.
        max_cut_fraction: the largest share of a request's prompt Compress-and-Route may cut
            (``Routing.max_cut_fraction``; plans written before it was recorded read as 1, the papers'
            rule they were sized with).
        service_model: the service model of every pool.
        max_pools: the most pools a fleet may have (``--pools``).
        long_context_tokens: the last pool's context window, tokens.
        b_short_candidates: the first boundaries B_short swept, tokens.
        gammas: the C&R band factors γ swept.
        profiles: the serving calibrations of the pools.
        spare_instances: spare instances per pool (``--spare``): each pool meets the SLO with that
            many of its instances lost (0 in plans before it).
        ttft_headroom_fraction: the pools were sized to the SLO less this share of it
            (``--ttft-headroom``; 0 in plans before it).
    """

    workload: str
    workload_reader: WorkloadReader = field(since=WorkloadReader)
    workload_fingerprint: WorkloadFingerprint
    arrival_rate_per_s: float = field(exclusive_minimum=0)
    sizing_rate_per_s: float | None = field(exclusive_minimum=0, since=None)
    arrival_rate_origin: Literal["given", "observed", "default"]
    rate_basis: RateBasis | None = field(since=None)
    ttft_slo_s: float = field(exclusive_minimum=0)
    tpot_slo_s: float | None = field(exclusive_minimum=0)
    quantile: float = field(exclusive_minimum=0, maximum=1)
    max_utilization: float = field(exclusive_minimum=0, maximum=1)
    compressibility: float = field(minimum=0, maximum=1)
    max_cut_fraction: float = field(exclusive_minimum=0, maximum=1, since=1.0)
    service_model: str = field(enum=SERVICE_MODELS)
    max_pools: int = field(minimum=1)
    long_context_tokens: int = field(minimum=1)
    b_short_candidates: list[int] = field(min_items=1, minimum=1)
    gammas: list[float] = field(min_items=1, minimum=1)
    profiles: Profiles
    spare_instances: int = field(minimum=0, maximum=1000, since=0)
    ttft_headroom_fraction: float = field(minimum=0, maximum=0.99, since=0.0)


@document
class PoolDocument(Document):
    """One pool: what to deploy (instances, GPUs, ``max_num_seqs``, ``max_model_len``) and how it
    behaves under the planned traffic. Figures a pool without traffic lacks are null.

    Attributes:
        serving_profile: the serving profile (model × GPU × tensor parallelism) it runs.
        model: the model profile.
        gpu: the GPU profile.
        gpus_per_instance: GPUs in one instance (tensor parallelism).
        instances: instances to deploy.
        gpus: instances × GPUs per instance.
        slots_per_instance: concurrent sequences per instance (vLLM ``--max-num-seqs``).
        kv_slot_limit: the most slots the KV cache holds at the pool's context.
        context_tokens: the pool's context window (vLLM ``--max-model-len``), tokens.
        arrival_rate_per_s: the requests it receives at the sizing rate, req/s.
        traffic_fraction: its share of the fleet's requests.
        mean_service_s: mean time a request holds a slot, s.
        service_scv: squared coefficient of variation of that time.
        service_rate_per_instance_per_s: requests one instance completes per second at full occupancy.
        utilization: slot utilization ρ = λ·E[S]/(n·s).
        compute_utilization: the share of the instances' compute the traffic needs (engine model).
        p99_wait_s: P99 wait for a slot, s.
        mean_wait_s: mean wait for a slot, s.
        p99_prefill_s: P99 prefill and first decode, s.
        iteration_s: the iteration time (TPOT) at the pool's occupancy, s.
        p99_ttft_s: P99 time to first token, s.
        arrival_scv: the arrivals' squared coefficient of variation the pool was sized at (1: Poisson).
        binding_constraint: what set the instance count: ``utilization`` (the cap), ``ttft`` (the
            SLO), ``minimum`` (one instance), ``none`` (no traffic), ``infeasible``, or ``evaluated``
            (a fleet whose pools were evaluated at given sizes, not sized: the retrofit).
        slots_binding: what set the slot count: ``kv``, ``ttft``, ``tpot`` or ``fixed``.
        feasible: whether the pool meets its SLOs and the cap.
        reason: why it is infeasible, in words (null when feasible).
        min_achievable_ttft_s: the smallest P99 TTFT any size reaches (infeasible pools), s.
        fewer_instances: 10% fewer instances (at least one fewer), for TTFT-bound engine pools.
        p99_ttft_fewer_instances_s: the P99 TTFT with ``fewer_instances``, s.
        slot_wait_over_slo: the share of requests over the TTFT SLO because they waited for a slot.
        cost_per_year_usd: GPUs × $/GPU-hour × 8,760 (null when infeasible).
        ttft_headroom_s: SLO − P99 TTFT, s (null without traffic).
        ttft_headroom_fraction: that headroom as a fraction of the SLO.
        tpot_limit_s: the TPOT SLO, or without one the 100 ms chat reading pace, s.
        tpot_limit_kind: ``tpot_slo`` or ``chat_reading_pace``.
        tpot_headroom_s: TPOT limit − iteration time, s.
        tpot_headroom_fraction: that headroom as a fraction of the limit.
        spare_instances: of ``instances``, the spares (``--spare``): every latency and load figure
            above is the pool's with them lost (0 in plans before it).
    """

    serving_profile: str = field(non_empty=True)
    model: str = field(non_empty=True)
    gpu: str = field(non_empty=True)
    gpus_per_instance: int = field(minimum=1)
    instances: int = field(minimum=0)
    gpus: int = field(minimum=0)
    slots_per_instance: int = field(minimum=0)
    kv_slot_limit: int = field(minimum=0)
    context_tokens: int = field(minimum=1)
    arrival_rate_per_s: float = field(minimum=0)
    traffic_fraction: float = field(minimum=0)
    mean_service_s: float | None = field(minimum=0)
    service_scv: float | None = field(minimum=0)
    service_rate_per_instance_per_s: float | None = field(minimum=0)
    utilization: float | None = field(minimum=0)
    compute_utilization: float | None = field(minimum=0, since=None)
    p99_wait_s: float | None = field(minimum=0)
    mean_wait_s: float | None = field(minimum=0)
    p99_prefill_s: float | None = field(minimum=0)
    iteration_s: float | None = field(minimum=0)
    p99_ttft_s: float | None = field(minimum=0)
    arrival_scv: float | None = field(minimum=0, since=None)
    binding_constraint: Literal["utilization", "ttft", "minimum", "none", "infeasible", "evaluated"]
    slots_binding: Literal["kv", "ttft", "tpot", "fixed"]
    feasible: bool
    reason: str | None
    min_achievable_ttft_s: float | None = field(minimum=0)
    fewer_instances: int | None = field(minimum=0, since=None)
    p99_ttft_fewer_instances_s: float | None = field(minimum=0, since=None)
    slot_wait_over_slo: float | None = field(since=None)
    cost_per_year_usd: float | None = field(minimum=0)
    ttft_headroom_s: float | None = field(since=None)
    ttft_headroom_fraction: float | None = field(since=None)
    tpot_limit_s: float | None = field(exclusive_minimum=0, since=None)
    tpot_limit_kind: Literal["tpot_slo", "chat_reading_pace"] | None = field(since=None)
    tpot_headroom_s: float | None = field(since=None)
    tpot_headroom_fraction: float | None = field(since=None)
    spare_instances: int = field(minimum=0, since=0)


@document
class FleetRouting(Document):
    """How a fleet of two or more pools routes a request with budget L = prompt tokens + max_tokens.

    Attributes:
        rule: the rule in words, shortest pool first.
        b_short_tokens: the first boundary B_short, tokens.
        compress_up_to_tokens: the top of the C&R band, ⌊γ·B_short⌋ tokens (null without one).
        boundaries_tokens: every boundary B₁ < … < B_{K−1}, tokens.
    """

    rule: str
    b_short_tokens: int = field(minimum=1)
    compress_up_to_tokens: int | None = field(minimum=1)
    boundaries_tokens: list[int] = field(min_items=1, minimum=1)


@document
class FleetDocument(Document):
    """One fleet (the best, a baseline): its routing, its pools by name, its GPUs and cost.

    Attributes:
        label: which fleet this is.
        feasible: every pool meets its SLOs and the cap.
        reason: why it is infeasible, pool by pool (null when feasible).
        b_short_tokens: the first boundary B_short, tokens (null: one homogeneous pool).
        gamma: the C&R band factor γ.
        alpha: α = F(B_short), the share of requests within the first boundary.
        beta: β = F(γ·B_short) − F(B_short), the share in the C&R band.
        short_traffic_fraction: α', the share the first pool serves after C&R.
        pool_count: how many pools.
        total_instances: instances over all pools.
        total_gpus: GPUs over all pools.
        cost_per_hour_usd: $/hour (null when infeasible).
        cost_per_year_usd: $/year = $/hour × 8,760 (null when infeasible).
        routing: the routing (null for one homogeneous pool).
        pools: the pools, shortest first: ``homogeneous``; ``short`` and ``long``; or ``pool-1`` …
            ``pool-K``.
        cost_per_million_input_tokens_usd: the prompt share of the fleet's $/hour per million input
            tokens clients send at the mean rate (docs/planner.md, "Cost per million tokens"; null
            when infeasible).
        cost_per_million_output_tokens_usd: the output share per million output tokens (null when
            infeasible).
        cost_per_million_requests_usd: $/hour per million requests at the mean rate (null when
            infeasible).
        prompt_cost_fraction: the share of the fleet's cost its prompts take (prefill work against
            decode work, pool by pool; null when infeasible).
    """

    label: str
    feasible: bool
    reason: str | None
    b_short_tokens: int | None = field(minimum=1)
    gamma: float = field(minimum=1)
    alpha: float = field(minimum=0)
    beta: float
    short_traffic_fraction: float = field(minimum=0)
    pool_count: int = field(minimum=1)
    total_instances: int = field(minimum=0)
    total_gpus: int = field(minimum=0)
    cost_per_hour_usd: float | None = field(minimum=0)
    cost_per_year_usd: float | None = field(minimum=0)
    routing: FleetRouting | None
    pools: dict[str, PoolDocument]
    cost_per_million_input_tokens_usd: float | None = field(minimum=0, since=None)
    cost_per_million_output_tokens_usd: float | None = field(minimum=0, since=None)
    cost_per_million_requests_usd: float | None = field(minimum=0, since=None)
    prompt_cost_fraction: float | None = field(minimum=0, maximum=1, since=None)


@document
class Baselines(Document):
    """The fleets the best is compared with.

    Attributes:
        homogeneous: one pool at the long context.
        pool_routing: the cheapest two-pool fleet without C&R, γ = 1 (null when none is feasible).
        retrofit: pool routing's boundary with C&R added (null when none).
        best_single_hardware: with ``--hardware``, the cheapest fleet whose every pool runs one
            profile of the catalog (absent without ``--hardware``; null when none is feasible).
    """

    homogeneous: FleetDocument
    pool_routing: FleetDocument | None
    retrofit: FleetDocument | None
    best_single_hardware: FleetDocument | None = field(since=None, omit_if_none=True)


@document
class Savings(Document):
    """The best fleet's saving as a fraction of each baseline's cost (null when either is infeasible).

    Attributes:
        vs_homogeneous: against the homogeneous fleet.
        vs_pool_routing: against pool routing.
        vs_retrofit: against the retrofit.
        vs_best_single_hardware: against the best single-hardware fleet (only with ``--hardware``).
    """

    vs_homogeneous: float | None
    vs_pool_routing: float | None
    vs_retrofit: float | None
    vs_best_single_hardware: float | None = field(since=None, omit_if_none=True)


@document
class PoolCountBest(Document):
    """The cheapest fleet of exactly ``pool_count`` pools (``--pools``).

    Attributes:
        pool_count: the number of pools.
        feasible: whether any such fleet meets the SLOs.
        boundaries_tokens: its boundaries, tokens ([] for one pool; null when infeasible).
        gamma: its γ (null when infeasible).
        total_gpus: its GPUs (null when infeasible).
        cost_per_year_usd: its $/year (null when infeasible).
    """

    pool_count: int = field(minimum=1)
    feasible: bool
    boundaries_tokens: list[int] | None = field(minimum=1)
    gamma: float | None = field(minimum=1)
    total_gpus: int | None = field(minimum=0)
    cost_per_year_usd: float | None = field(minimum=0)


@document
class GridCell(Document):
    """One cell of the two-pool (B_short, γ) sweep.

    Attributes:
        b_short_tokens: B_short, tokens.
        gamma: γ.
        feasible: both pools meet their SLOs and the cap.
        short_instances: the short pool's instances.
        long_instances: the long pool's instances.
        total_gpus: GPUs (null when infeasible).
        cost_per_year_usd: $/year (null when infeasible).
        reason: why it is infeasible (null when feasible).
    """

    b_short_tokens: int = field(minimum=1)
    gamma: float = field(minimum=1)
    feasible: bool
    short_instances: int | None = field(minimum=0)
    long_instances: int = field(minimum=0)
    total_gpus: int | None = field(minimum=0)
    cost_per_year_usd: float | None = field(minimum=0)
    reason: str | None


@document
class HeadroomWarning(Document):
    """A pool of the best fleet that sits close to an SLO, or whose P99 rests on a weak spot.

    Attributes:
        pool: the pool's name.
        kind: ``ttft_near_slo``, ``ttft_flat_in_instances``, ``slot_wait_sets_ttft``,
            ``tpot_near_slo``, ``tpot_noticeable`` or ``outside_validated_region`` (an unrefined plan's
            pool where the analytic model was not shown to hold: docs/validation.md).
        message: what it means and what to do, in words.
    """

    pool: str
    kind: Literal[
        "ttft_flat_in_instances",
        "slot_wait_sets_ttft",
        "ttft_near_slo",
        "tpot_near_slo",
        "tpot_noticeable",
        "outside_validated_region",
    ]
    message: str


@document
class ScheduleWindowDocument(Document):
    """One window of the schedule: offsets from its origin and the instances each pool needs.

    Attributes:
        start_s: start, s from the origin (mod the period when periodic).
        end_s: end, s from the origin.
        arrival_rate_per_s: the rate it was sized for (its basis), req/s.
        mean_arrival_rate_per_s: its mean rate, req/s.
        instances: instances per pool.
        gpus: GPUs over all pools.
        rate_windows: rate windows of the log behind it (0: none, the static fleet is kept).
    """

    start_s: float = field(minimum=0)
    end_s: float = field(exclusive_minimum=0)
    arrival_rate_per_s: float = field(minimum=0)
    mean_arrival_rate_per_s: float = field(minimum=0)
    instances: dict[str, int] = field(minimum=0)
    gpus: int = field(minimum=0)
    rate_windows: int = field(minimum=0)


@document
class ScheduleDocument(Document):
    """The time-of-day schedule (``--schedule WINDOW``): the fleet re-sized in every window of the
    log's rate profile, the routing fixed.

    Attributes:
        window_s: window length, s.
        period_s: 86,400 (daily) or 604,800 (weekly) when the log spans that, else its span, s.
        periodic: false when ``period_s`` is only the log's span.
        origin_utc: wall-clock time of offset 0 (ISO 8601, UTC), or null for a relative clock.
        pools: the best fleet's pools, in order.
        windows: one per window, in order of their offsets.
        rate_basis: the plan's basis, applied within each window.
        gpu_hours_per_period: Σ GPUs × window hours over one period.
        static_gpu_hours_per_period: the static fleet's GPUs × period hours.
        static_instances: the static fleet's instances per pool.
    """

    window_s: float = field(exclusive_minimum=0)
    period_s: float = field(exclusive_minimum=0)
    periodic: bool
    origin_utc: str | None = field(format="date-time")
    pools: list[str] = field(min_items=1)
    windows: list[ScheduleWindowDocument] = field(min_items=1)
    rate_basis: str
    gpu_hours_per_period: float = field(minimum=0)
    static_gpu_hours_per_period: float = field(minimum=0)
    static_instances: dict[str, int] = field(minimum=0)


@document
class CompressionReliance(Document):
    """What the best fleet needs a gateway to compress (Compress-and-Route), and the fleet to deploy
    without it: only fleetopt's LiteLLM plugin compresses prompts (``fleetopt export --to litellm``);
    behind any other gateway these requests reach the pool their own budget names.

    Attributes:
        compressed_fraction: the share of requests the first pool serves only after compression (α' − α).
        compressed_rate_per_s: those requests at the sizing rate, req/s.
        gateway: what compresses them: ``litellm`` (``export --to litellm``; no other export target can).
        without_compression: the cheapest fleet that compresses nothing (γ = 1; null when none is feasible).
        extra_gpus: its GPUs − the best fleet's (null without it).
        extra_cost_per_year_usd: its $/year − the best fleet's (null without it).
        message: the same in words (the header of the plan report).
    """

    compressed_fraction: float = field(exclusive_minimum=0, maximum=1)
    compressed_rate_per_s: float = field(minimum=0)
    gateway: Literal["litellm"]
    without_compression: FleetDocument | None
    extra_gpus: int | None
    extra_cost_per_year_usd: float | None
    message: str


@document
class CalibrationInterval(Document):
    """The best fleet under its measured profiles' calibration error: the same pools (boundaries and
    γ) re-sized with every fitted parameter at its lower and at its upper percentile of the fit's
    bootstrap over benchmark rows (the profiles' ``fit.*_p10_p90``; docs/profiles.md).

    Attributes:
        percentiles: the parameters' percentiles, [lower, upper].
        gpus: the fleet's GPUs at the lower and at the upper parameters (where the same pools cannot
            meet the SLO, the cheapest fleet of any split; null where none can).
        cost_per_hour_usd: its cost per hour at each (null where no fleet meets the SLO).
        feasible: whether a fleet meets the SLO at each.
    """

    percentiles: list[float] = field(min_items=2, minimum=0, maximum=100)
    gpus: list[int | None] = field(min_items=2, minimum=0)
    cost_per_hour_usd: list[float | None] = field(min_items=2, minimum=0)
    feasible: list[bool] = field(min_items=2)


@document
class RefinedPoolDocument(Document):
    """One pool of a fleet ``--refine`` re-sized by simulation.

    Attributes:
        pool: the pool's name.
        outcome: ``refined`` (the smallest count whose simulated P99 TTFT meets the SLO with
            confidence), ``unreachable`` (no count up to the bound does), ``too_large`` (beyond the
            simulation budget: the analytic count kept, unchecked) or ``no_traffic``.
        analytic_instances: the count the analytic model sized.
        refined_instances: the count the simulation chose (the analytic one unless ``refined``).
        slots_per_instance: the slots simulated (the plan's).
        simulated_p99_ttft_s: the simulated P99 TTFT at the refined count, s (for ``unreachable``: the
            best reached, at ``best_instances``; null when not simulated).
        p99_ttft_low_s: the lower end of its 95% interval, s.
        p99_ttft_high_s: the upper end, s: at or below the SLO for ``refined``.
        best_instances: the count of that P99 (null when not simulated).
        confirmed: the figures are over the confirmation seeds (Student-t); else over the search seed
            (the order-statistic interval), for a fleet that did not win.
        simulations: one-seed runs the search took.
        requests_per_seed: requests of each run, warm-up included.
        warmup_requests: of which warm-up.
    """

    pool: str
    outcome: Literal["refined", "unreachable", "too_large", "no_traffic"]
    analytic_instances: int = field(minimum=0)
    refined_instances: int = field(minimum=0)
    slots_per_instance: int = field(minimum=0)
    simulated_p99_ttft_s: float | None = field(minimum=0)
    p99_ttft_low_s: float | None
    p99_ttft_high_s: float | None
    best_instances: int | None = field(minimum=0)
    confirmed: bool
    simulations: int = field(minimum=0)
    requests_per_seed: int = field(minimum=0)
    warmup_requests: int = field(minimum=0)


@document
class RefinedFleetDocument(Document):
    """One of the K cheapest fleets, analytic and refined.

    Attributes:
        boundaries_tokens: its boundaries, tokens ([] for one pool).
        gamma: its γ.
        analytic_gpus: GPUs as the analytic model sized it.
        refined_gpus: GPUs at the refined counts (null when a pool is unreachable).
        analytic_cost_per_year_usd: $/year as sized.
        refined_cost_per_year_usd: $/year refined (null when a pool is unreachable).
        passed: every pool met the SLO in simulation (or kept its analytic count, ``too_large``).
        chosen: this fleet is the plan's best.
        pools: its pools, shortest first.
    """

    boundaries_tokens: list[int] = field(minimum=1)
    gamma: float = field(minimum=1)
    analytic_gpus: int = field(minimum=0)
    refined_gpus: int | None = field(minimum=0)
    analytic_cost_per_year_usd: float = field(minimum=0)
    refined_cost_per_year_usd: float | None = field(minimum=0)
    passed: bool
    chosen: bool
    pools: list[RefinedPoolDocument]


@document
class RefinementDocument(Document):
    """``plan --refine K``: the analytic sweep proposed, the simulator decided (docs/validation.md).

    Attributes:
        candidates: K, the cheapest distinct feasible fleets re-sized.
        service_model: the simulator's engine (``physical``).
        scheduler: its scheduler (``vllm``).
        dispatch: the dispatch policy simulated (the plan's).
        search_seed: the seed of the search (common random numbers across instance counts).
        confirm_seeds: the seeds the winner's counts were confirmed on.
        rule: how a count passes, in words.
        max_requests_per_seed: the budget: a pool needing more keeps its analytic count (``too_large``).
        bound: how far up the search goes, in words.
        fleets: the refined fleets, cheapest analytic first.
    """

    candidates: int = field(minimum=1)
    service_model: str
    scheduler: str
    dispatch: str
    search_seed: int
    confirm_seeds: list[int]
    rule: str
    max_requests_per_seed: int = field(minimum=1)
    bound: str
    fleets: list[RefinedFleetDocument]


@document
class HardwareOption(Document):
    """One pool of the best fleet's routing sized on one profile of the catalog.

    Attributes:
        serving_profile: the profile.
        gpu: its GPU type.
        gpus_per_instance: its tensor-parallel size.
        gpu_hour_usd: the $/GPU-hour the plan priced it at.
        feasible: the pool meets its SLOs and cap on it.
        instances: instances it needs (null when infeasible).
        gpus: GPUs it needs (null when infeasible).
        cost_per_hour_usd: $/hour (null when infeasible).
        binding_constraint: what sets its size (``infeasible`` when no size meets the SLO).
        reason: why it is infeasible (null when feasible).
        chosen: the search picked it (the cheapest feasible; ties: fewer GPUs, then catalog order).
    """

    serving_profile: str
    gpu: str
    gpus_per_instance: int = field(minimum=1)
    gpu_hour_usd: float = field(exclusive_minimum=0)
    feasible: bool
    instances: int | None = field(minimum=0)
    gpus: int | None = field(minimum=0)
    cost_per_hour_usd: float | None = field(minimum=0)
    binding_constraint: str
    reason: str | None
    chosen: bool


@document
class HardwareSearchDocument(Document):
    """``plan --hardware``: the catalog searched and, for each pool of the best fleet, every profile's
    sizing there (the chosen one marked).

    Attributes:
        catalog: the serving profiles every pool chose among (one model).
        prices_usd_per_gpu_hour: ``--price`` overrides by GPU type ({} when none).
        max_gpus: ``--max-gpus`` inventory by GPU type ({} when none).
        inventory_method: how the inventory was met: ``none`` (no inventory), ``unconstrained``
            (the unconstrained optimum fits it: exact), ``pairs`` (every hardware pair of every two-pool
            cell and every single profile checked: exact over fleets of at most two pools).
        pools: the best fleet's pools by name, each with every profile's option.
    """

    catalog: list[str] = field(min_items=1)
    prices_usd_per_gpu_hour: dict[str, float] = field(exclusive_minimum=0)
    max_gpus: dict[str, int] = field(minimum=0)
    inventory_method: Literal["none", "unconstrained", "pairs"]
    pools: dict[str, list[HardwareOption]]


@document
class PlanDocument(Document):
    """A capacity plan: the cheapest fleet that meets a P99 TTFT SLO, against the baselines.

    Attributes:
        schema_version: this document's version.
        kind: always ``fleetopt-plan``.
        fleetopt_version: the fleetopt that wrote it.
        inputs: what the plan was computed from.
        feasible: whether any fleet meets the SLO and the cap.
        best: the cheapest feasible fleet (null when none is).
        baselines: the fleets it is compared with.
        savings: the best fleet's savings against them.
        best_by_pool_count: the cheapest fleet of each pool count, 1 … ``inputs.max_pools``.
        grid: every cell of the two-pool (B_short, γ) sweep.
        compression: what the best fleet needs a gateway to compress and the fleet without compression
            (null when the best fleet compresses nothing, as with the default p_c = 0).
        warnings: pools of the best fleet close to an SLO or resting on a weak spot of the model.
        notes: what a reader should know about the inputs and the outcome, in words.
        schedule: the time-of-day schedule (only with ``--schedule``).
        prefix_caching: the prefix-cache hit rates the plan assumed (only with ``--prefix-caching``
            other than ``off``; :mod:`fleetopt.io.documents.prefix`).
        hardware_search: which profile each pool of the best fleet runs and why (only with
            ``--hardware``).
        validation: the simulation cross-check of ``plan --validate`` (only on its standard output;
            docs/validation.md).
        calibration_interval: the best fleet at the measured profiles' parameter percentiles (only
            when a profile carries them).
        dispatch: the dispatch policy the plan was sized (and refined) for: how a pool's router
            picks an instance (``simulate --plan`` and ``export`` use it).
        refinement: what ``--refine K`` simulated and decided (only with ``--refine``).
    """

    schema_version: Literal[2]
    kind: Literal["fleetopt-plan"]
    fleetopt_version: str
    inputs: PlanInputs
    feasible: bool
    best: FleetDocument | None = field(allowed="a fleet, or null when no fleet is feasible")
    baselines: Baselines
    savings: Savings
    best_by_pool_count: list[PoolCountBest]
    grid: list[GridCell]
    compression: CompressionReliance | None = field(since=None)
    warnings: list[HeadroomWarning] = field(since=list)
    notes: list[str]
    schedule: ScheduleDocument | None = field(omit_if_none=True)
    prefix_caching: PrefixCachingDocument | None = field(default=None, omit_if_none=True)
    hardware_search: HardwareSearchDocument | None = field(since=None, omit_if_none=True)
    validation: dict[str, Any] | None = field(default=None, omit_if_none=True)
    calibration_interval: CalibrationInterval | None = field(default=None, omit_if_none=True)
    dispatch: str = field(enum=DISPATCH_POLICIES, since=DEFAULT_DISPATCH)
    refinement: RefinementDocument | None = field(omit_if_none=True, since=None)


def upgrade(document: dict[str, Any]) -> dict[str, Any]:
    """A version 1 document as version 2 (a copy): version 2 only added fields, which a version 1
    (two-pool or homogeneous) plan implies — ``pool_count`` from its pools,
    ``routing.boundaries_tokens`` = [B_short], ``inputs.max_pools`` = 2, no ``best_by_pool_count``."""
    document = copy.deepcopy(document)
    document["schema_version"] = 2
    inputs = document.get("inputs")
    if isinstance(inputs, dict):
        inputs.setdefault("max_pools", 2)
    document.setdefault("best_by_pool_count", [])
    baselines = document.get("baselines")
    fleets = [document.get("best"), *(baselines.values() if isinstance(baselines, dict) else ())]
    for fleet in fleets:
        if not isinstance(fleet, dict):
            continue
        if isinstance(fleet.get("pools"), dict):
            fleet.setdefault("pool_count", len(fleet["pools"]))
        routing = fleet.get("routing")
        if isinstance(routing, dict) and "boundaries_tokens" not in routing:
            routing["boundaries_tokens"] = [routing.get("b_short_tokens", fleet.get("b_short_tokens"))]
    return document


def read_plan_document(document: Any, source: str) -> PlanDocument:
    """A plan document (as parsed from JSON or YAML) checked field by field into a
    :class:`PlanDocument`: kind and version first, then every field against the schema.

    Version 1 documents are upgraded (:func:`upgrade`); fields added since a file was written take
    their documented defaults. Raises ValidationError naming ``source``, the field, the value and
    what is allowed.
    """
    if not isinstance(document, dict) or document.get("kind") != PLAN_KIND:
        raise ValidationError(f"{source}: not a fleetopt plan (expected kind: {PLAN_KIND})")
    version = document.get("schema_version")
    if version not in READABLE_SCHEMA_VERSIONS or isinstance(version, bool):
        raise ValidationError(
            f"{source}: schema_version {version!r} is not supported (this fleetopt reads versions "
            f"{', '.join(map(str, READABLE_SCHEMA_VERSIONS))}); re-run fleetopt plan --output to "
            "regenerate it"
        )
    if version == 1:
        document = upgrade(document)
    return from_document(PlanDocument, document, source)
