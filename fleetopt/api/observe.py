"""``fleetopt observe``'s API: what a running fleet's metrics say, and a plan checked against them.

One function per question, each load (io) → core → a typed result:

* :func:`observe_prometheus` — read Prometheus over a span: per pool the observed rates, P99 TTFT
  and TPOT, KV usage, waiting, preemptions, SLO attainment and goodput, and a workload summary;
* :func:`observe_scrape` — the same from engines' ``/metrics`` pages directly;
* :func:`check_plan_drift_live` — ``fleetopt drift --prometheus``: the plan's drift checks on the
  observed workload and rate, plus what only live metrics show (the SLO missed now, a pool far
  below its planned load).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fleetopt.errors import ValidationError

#: A live-drift pool "runs well below its plan" under this share of its planned mean rate.
DEFAULT_MIN_LOAD = 0.5


@dataclass(frozen=True)
class ObserveRun:
    """What ``fleetopt observe`` read and derived.

    ``pools``: per pool its observation (:class:`fleetopt.core.observed.PoolObservation`);
    ``fleet``: all pools added up; ``attainment``: per pool (and ``fleet``) the SLO attainment when
    an SLO is known (``--slo`` or the plan's); ``workloads``: per pool its summary from the token
    histograms, ``summary``: all pools merged (None when the token histograms are missing);
    ``plan``: the plan read, if any; ``warnings``: what was missing or doubtful.
    """

    source: str
    metrics: dict[str, str]
    start_s: float
    end_s: float
    window_s: float
    pools: tuple[Any, ...]
    fleet: Any
    ttft_slo_s: float | None
    tpot_slo_s: float | None
    attainment: dict[str, Any]
    workloads: dict[str, Any]
    summary: Any
    plan: Any
    warnings: tuple[str, ...]

    def report(self, summary_file: str | None = None) -> Any:
        """The report, typed (:class:`fleetopt.io.documents.observe.ObserveDocument`);
        ``summary_file``: where the workload summary was written, if it was."""
        from fleetopt.io.documents.build_observe import observe_document

        return observe_document(
            source=self.source, start_s=self.start_s, end_s=self.end_s, window_s=self.window_s,
            metrics=self.metrics, ttft_slo_s=self.ttft_slo_s, tpot_slo_s=self.tpot_slo_s,
            plan=None if self.plan is None else self.plan.source.removeprefix("plan "), pools=self.pools,
            fleet=self.fleet, attainment=self.attainment, workloads=self.workloads, summary=self.summary,
            summary_file=summary_file, warnings=self.warnings,
        )  # fmt: skip

    def document(self, summary_file: str | None = None) -> dict[str, Any]:
        """The report as plain data (``--format json|yaml``; fields: ``fleetopt schema observe``)."""
        from fleetopt.io.documents.typed import to_document

        return to_document(self.report(summary_file))


def _plan_and_slo(
    plan_path: Path | None, ttft_slo_s: float | None, tpot_slo_s: float | None
) -> tuple[Any, float | None, float | None]:
    plan_file = None
    if plan_path is not None:
        from fleetopt.io.plans import read_plan

        plan_file = read_plan(plan_path)
        if ttft_slo_s is None:
            ttft_slo_s = plan_file.options.ttft_slo_s
        if tpot_slo_s is None:
            tpot_slo_s = plan_file.options.tpot_slo_s
    for name, value in (("--slo", ttft_slo_s), ("--tpot-slo", tpot_slo_s)):
        if value is not None and not (value > 0 and math.isfinite(value)):
            raise ValidationError(f"{name}: {value!r} s must be positive and finite")
    return plan_file, ttft_slo_s, tpot_slo_s


def _finish(
    *,
    source: str,
    metrics: dict[str, str],
    start_s: float,
    end_s: float,
    window_s: float,
    pools: tuple[Any, ...],
    plan_file: Any,
    ttft_slo_s: float | None,
    tpot_slo_s: float | None,
    max_model_len: int | None,
    warnings: list[str],
) -> ObserveRun:
    """Attainment, workload summaries and the fleet total from the pools' observations."""
    from fleetopt.core.observed import attainment, fleet_observation, summary_from_histograms
    from fleetopt.core.summary import merge_summaries

    if not pools or all(p.requests <= 0 for p in pools):
        from fleetopt.io.prometheus import PrometheusError

        raise PrometheusError(f"{source}: no finished requests in the span (nothing usable to report)")
    fleet = fleet_observation(list(pools))
    results = {}
    if ttft_slo_s is not None:
        for pool in (*pools, fleet):
            if pool.ttft is not None:
                results[pool.pool] = attainment(pool, ttft_slo_s, tpot_slo_s)
    contexts = {}
    if plan_file is not None:
        contexts = {p.name: p.context_tokens for p in plan_file.fleet.pools}
    workloads = {}
    for pool in pools:
        if pool.requests <= 0 or pool.prompt_tokens is None or pool.generation_tokens is None:
            continue
        context = contexts.get(pool.pool) or max_model_len or _next_edge(pool)
        if pool.pool not in contexts and max_model_len is None:
            warnings.append(
                f"pool {pool.pool}: the token histograms' top bucket has no upper edge; requests above "
                f"{pool.prompt_tokens.upper_edges[-2]:,.0f} tokens are taken to be at most {context:,} (the "
                "next 1-2-5 edge, above vLLM's --max-model-len); give --max-model-len or --plan"
            )
        window_us = int(round(window_s * 1e6)) if window_s else 1_000_000  # no windows: any
        workload = summary_from_histograms(pool, f"{source} pool={pool.pool}", int(context), window_us)
        if not workload.summary.has_times and pool.window_s:
            warnings.append(
                f"pool {pool.pool}: the request counter and the token histograms count different requests; "
                "the summary has no rate profile"
            )
        workloads[pool.pool] = workload
    summary = None
    if workloads:
        parts = [w.summary for w in workloads.values()]
        if len({p.has_times for p in parts}) > 1:
            parts = [p for p in parts if p.has_times]
        summary = parts[0] if len(parts) == 1 else merge_summaries(parts)
    return ObserveRun(
        source, metrics, start_s, end_s, window_s, pools, fleet, ttft_slo_s, tpot_slo_s, results,
        workloads, summary, plan_file, tuple(warnings),
    )  # fmt: skip


def _next_edge(pool: Any) -> int:
    """The 1-2-5 edge after the token histograms' last finite edge (vLLM's top edge is the largest
    1-2-5 value ≤ --max-model-len, so the next one is above it)."""
    last = max(float(pool.prompt_tokens.upper_edges[-2]), float(pool.generation_tokens.upper_edges[-2]), 1.0)
    scale = 10 ** math.floor(math.log10(last))
    for mantissa in (1, 2, 5, 10):
        if mantissa * scale > last * (1 + 1e-9):
            return int(mantissa * scale)
    return int(10 * scale)


def mapping_for(plan_file: Any, pool_label: str | None, name_prefix: str) -> Any:
    """How series map to pools: ``--pool-label`` (its values are pool names), else with a plan the
    pod names ``fleetopt export`` gives (``<prefix>-<pool>-…``), else the whole fleet as one pool."""
    from fleetopt.io.prometheus import PoolMapping

    pools = None if plan_file is None else tuple(p.name for p in plan_file.fleet.pools)
    if pool_label is not None:
        return PoolMapping.by_label(pool_label, pools)
    if pools is not None:
        from fleetopt.io.names import check_resource_name

        check_resource_name(name_prefix, "--name-prefix", 63 - len("-pool-8"))
        return PoolMapping.by_pod_prefix(name_prefix, pools)
    return PoolMapping.whole_fleet()


def prometheus_client(
    url: str,
    *,
    token_env: str | None = None,
    token_file: Path | None = None,
    ca_file: str | None = None,
    timeout_s: float | None = None,
) -> Any:
    """A :class:`fleetopt.io.prometheus.PrometheusClient` with its bearer token read from the
    environment or a file."""
    from fleetopt.io.prometheus import DEFAULT_TIMEOUT_S, PrometheusClient, read_bearer_token

    return PrometheusClient(
        url,
        token=read_bearer_token(token_env, token_file),
        timeout_s=DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s,
        ca_file=ca_file,
    )


def observe_prometheus(
    url: str,
    *,
    since_s: float,
    end_s: float | None = None,
    selector: str | None = None,
    plan_path: Path | None = None,
    ttft_slo_s: float | None = None,
    tpot_slo_s: float | None = None,
    pool_label: str | None = None,
    name_prefix: str = "fleetopt",
    step_s: int = 15,
    window_s: int = 60,
    max_model_len: int | None = None,
    token_env: str | None = None,
    token_file: Path | None = None,
    ca_file: str | None = None,
    timeout_s: float | None = None,
) -> ObserveRun:
    """Read a fleet's vLLM metrics from Prometheus over the ``since_s`` seconds before ``end_s``
    (default now) and derive per pool its figures, SLO attainment and workload summary."""
    import time

    from fleetopt.io.prometheus import read_fleet

    if not (since_s > 0 and math.isfinite(since_s)):
        raise ValidationError(f"--since: {since_s!r} s must be positive")
    plan_file, ttft_slo_s, tpot_slo_s = _plan_and_slo(plan_path, ttft_slo_s, tpot_slo_s)
    client = prometheus_client(
        url, token_env=token_env, token_file=token_file, ca_file=ca_file, timeout_s=timeout_s
    )
    read = read_fleet(
        client, since_s=since_s, end_s=time.time() if end_s is None else end_s,
        mapping=mapping_for(plan_file, pool_label, name_prefix), selector=selector, step_s=step_s,
        window_s=window_s,
    )  # fmt: skip
    return _finish(
        source=read.source, metrics=read.metrics, start_s=read.start_s, end_s=read.end_s,
        window_s=read.window_s, pools=read.pools, plan_file=plan_file, ttft_slo_s=ttft_slo_s,
        tpot_slo_s=tpot_slo_s, max_model_len=max_model_len, warnings=list(read.warnings),
    )  # fmt: skip


def observe_scrape(
    urls: Sequence[str],
    *,
    interval_s: float = 0.0,
    plan_path: Path | None = None,
    ttft_slo_s: float | None = None,
    tpot_slo_s: float | None = None,
    pool_label: str | None = None,
    name_prefix: str = "fleetopt",
    max_model_len: int | None = None,
    token_env: str | None = None,
    token_file: Path | None = None,
    ca_file: str | None = None,
    timeout_s: float | None = None,
) -> ObserveRun:
    """Read engines' ``/metrics`` pages directly (:mod:`fleetopt.io.scrape`): with ``interval_s``
    two scrapes that far apart (the figures of the interval), else one (the engines' lifetimes,
    from their process start times)."""
    from fleetopt.io.prometheus import DEFAULT_TIMEOUT_S, read_bearer_token
    from fleetopt.io.scrape import scrape_fleet

    plan_file, ttft_slo_s, tpot_slo_s = _plan_and_slo(plan_path, ttft_slo_s, tpot_slo_s)
    read = scrape_fleet(
        list(urls), interval_s=interval_s, plan_pools=None if plan_file is None else
        tuple(p.name for p in plan_file.fleet.pools), pool_label=pool_label, name_prefix=name_prefix,
        token=read_bearer_token(token_env, token_file), ca_file=ca_file,
        timeout_s=DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s,
    )  # fmt: skip
    return _finish(
        source=read.source, metrics=read.metrics, start_s=read.start_s, end_s=read.end_s,
        window_s=read.window_s, pools=read.pools, plan_file=plan_file, ttft_slo_s=ttft_slo_s,
        tpot_slo_s=tpot_slo_s, max_model_len=max_model_len, warnings=list(read.warnings),
    )  # fmt: skip


# -- drift on live data ---------------------------------------------------------------------------


@dataclass(frozen=True)
class LiveDriftRun:
    """``fleetopt drift --prometheus``: the plan's drift checks on the observed workload
    (``drift``, a :class:`fleetopt.api.drift.DriftRun`), the observation behind it, and the live
    findings (:class:`fleetopt.core.observed.LiveFinding`) with the pools whose attainment the
    buckets cannot decide."""

    drift: Any
    observed: ObserveRun
    findings: tuple[Any, ...]
    undecided: tuple[str, ...]
    min_load: float
    prometheus: str  # the server's URL without credentials

    @property
    def drifted(self) -> bool:
        return self.drift.result.drifted or bool(self.findings)

    def report(self, plan_label: str, today_label: str = "live metrics") -> Any:
        """The drift report, typed (:class:`fleetopt.io.documents.drift.DriftDocument`): the
        plan's checks on the observed workload, the live findings among its reasons (so its verdict
        is :attr:`drifted`) and the observation as its ``live`` section."""
        from fleetopt.io.documents.build_observe import live_document, live_reasons

        observed = self.observed
        live = live_document(
            observed.report(), prometheus=self.prometheus, min_load=self.min_load, undecided=self.undecided
        )
        reasons = live_reasons(self.findings, observed.ttft_slo_s, observed.tpot_slo_s, self.min_load)
        return self.drift.report(plan_label, today_label, live=live, live_reasons=reasons)

    def document(self, plan_label: str, today_label: str = "live metrics") -> dict[str, Any]:
        """The drift report as plain data (``--format json|yaml``; fields: ``fleetopt schema drift``)."""
        from fleetopt.io.documents.typed import to_document

        return to_document(self.report(plan_label, today_label))


def check_plan_drift_live(
    plan_path: Path,
    url: str,
    *,
    since_s: float,
    end_s: float | None = None,
    selector: str | None = None,
    pool_label: str | None = None,
    name_prefix: str = "fleetopt",
    step_s: int = 15,
    window_s: int = 60,
    tolerances: Any = None,
    min_load: float = DEFAULT_MIN_LOAD,
    mean_rate_per_s: float | None = None,
    token_env: str | None = None,
    token_file: Path | None = None,
    ca_file: str | None = None,
    timeout_s: float | None = None,
) -> LiveDriftRun:
    """Observe the plan's fleet in Prometheus, run the plan's drift checks on the observed workload
    and rate, and add the live findings (:func:`fleetopt.core.observed.live_findings`).

    The distribution check (KS of total tokens) is not made: bucketed histograms do not determine
    total tokens (docs/observe.md); the fit, re-plan, cost and context checks run on the observed
    workload summary.
    """
    import dataclasses

    from fleetopt.api.drift import drift_of_workload
    from fleetopt.core.drift import Tolerances
    from fleetopt.core.observed import live_findings
    from fleetopt.core.summary import workload_from_summary

    observed = observe_prometheus(
        url, since_s=since_s, end_s=end_s, selector=selector, plan_path=plan_path, pool_label=pool_label,
        name_prefix=name_prefix, step_s=step_s, window_s=window_s, token_env=token_env,
        token_file=token_file, ca_file=ca_file, timeout_s=timeout_s,
    )  # fmt: skip
    if observed.summary is None:
        from fleetopt.io.prometheus import PrometheusError

        raise PrometheusError(
            f"{observed.source}: no prompt and generation token histograms, so no workload to check the plan "
            "against"
        )
    tolerances = Tolerances() if tolerances is None else tolerances
    tolerances = dataclasses.replace(tolerances, max_ks=1.0)  # not decidable from buckets
    today = workload_from_summary(observed.summary, "live metrics", observed.source)
    drift = drift_of_workload(observed.plan, today, mean_rate_per_s=mean_rate_per_s, tolerances=tolerances)
    plan = observed.plan
    factor = plan.options.basis_factor
    planned_rates = {
        p.name: None if p.predicted.arrival_rate_per_s is None else p.predicted.arrival_rate_per_s / factor
        for p in plan.fleet.pools
    }
    findings, undecided = live_findings(
        list(observed.pools), planned_rates, observed.ttft_slo_s, observed.tpot_slo_s, min_load
    )
    from fleetopt.io.prometheus import public_url

    return LiveDriftRun(drift, observed, tuple(findings), tuple(undecided), min_load, public_url(url))


# -- calibration from production ------------------------------------------------------------------


@dataclass(frozen=True)
class ProductionCalibration:
    """``fleetopt calibrate --prometheus``: per pool the profile checked against its load windows
    (:class:`fleetopt.core.live_calibrate.ProductionCheck`), the profile's name and parameters."""

    profile: str
    parameters: dict[str, float]
    prefill_chunk_tokens: int
    checks: dict[str, Any]
    window_s: int
    warnings: tuple[str, ...]


def calibrate_from_prometheus(
    url: str,
    *,
    profile: str,
    since_s: float,
    end_s: float | None = None,
    selector: str | None = None,
    plan_path: Path | None = None,
    pool_label: str | None = None,
    name_prefix: str = "fleetopt",
    step_s: int = 15,
    window_s: int = 600,
    profiles_dir: Path | None = None,
    token_env: str | None = None,
    token_file: Path | None = None,
    ca_file: str | None = None,
    timeout_s: float | None = None,
) -> ProductionCalibration:
    """Check the serving profile ``profile`` against each pool's windows of observed load
    (:func:`fleetopt.io.prometheus.read_load_windows`), refitting W, H, τ, T0 where the load varied
    (:func:`fleetopt.core.live_calibrate.check_production`)."""
    import time

    import numpy as np

    from fleetopt.api import profile_search_path
    from fleetopt.core.calibrate import PARAMETERS
    from fleetopt.core.live_calibrate import check_production
    from fleetopt.io.profiles import load_serving
    from fleetopt.io.prometheus import read_load_windows

    serving = load_serving(profile, profile_search_path(profiles_dir))
    theta = np.array(
        [serving.iteration_base_s, serving.iteration_per_slot_s, serving.prefill_per_token_s,
         serving.iteration_per_kv_token_s, serving.ttft_overhead_s, 0.0]
    )  # fmt: skip
    plan_file, _, _ = _plan_and_slo(plan_path, None, None)
    client = prometheus_client(
        url, token_env=token_env, token_file=token_file, ca_file=ca_file, timeout_s=timeout_s
    )
    windows, warnings = read_load_windows(
        client, since_s=since_s, end_s=time.time() if end_s is None else end_s,
        mapping=mapping_for(plan_file, pool_label, name_prefix), selector=selector, step_s=step_s,
        window_s=window_s,
    )  # fmt: skip
    checks = {}
    for pool, rows in windows.items():
        if rows.rows == 0:
            warnings.append(f"pool {pool}: no window with finished requests and every metric")
            continue
        checks[pool] = check_production(theta, rows, serving.prefill_chunk_tokens)
    if not checks:
        from fleetopt.io.prometheus import PrometheusError

        raise PrometheusError(f"Prometheus at {client.shown}: no window to check the profile against")
    parameters = {name: float(value) for name, value in zip(PARAMETERS, theta, strict=True)}
    return ProductionCalibration(
        serving.name, parameters, serving.prefill_chunk_tokens, checks, window_s, tuple(warnings)
    )
