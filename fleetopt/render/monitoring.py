"""``fleetopt export --to monitoring``: watching the plan's own promises in production — a
PodMonitor that scrapes every vLLM pod (prometheus-operator, ``monitoring.coreos.com/v1``), a
PrometheusRule whose alerts are the plan's numbers (P99 TTFT SLO, TPOT limit, utilization cap,
sizing rate, and the pool-routing paper's preemption guideline), and a Grafana dashboard of planned
against observed per pool.

Metric names are vLLM's (``vllm/v1/metrics/loggers.py``, the same in every release of
:data:`fleetopt.render.deploy.VLLM_RELEASES`); every series is selected by
:func:`fleetopt.render.deploy.pod_selector`, the labels the PodMonitor gives and KEDA's query uses.
The manifests and the dashboard go through serializers (YAML, JSON), never text concatenation.
"""

from __future__ import annotations

import json
import math
from typing import Any

from fleetopt import __version__
from fleetopt.render.deploy import (
    VLLM_PORT,
    DeployPool,
    ExportContext,
    ExportOptions,
    pod_selector,
    prometheus_le,
    ttft_slo_edge,
)

#: The window every rate and quantile of the alerts and the dashboard is taken over.
RATE_WINDOW = "5m"
#: How long a condition must hold before its alert fires (a burst shorter than this is KEDA's job).
FOR = "5m"
#: The pool-routing paper's guideline (arXiv 2604.09613 §8, "Monitor preemption, not
#: utilization"): alert when the 5-minute preemption rate exceeds 1% (preemptions per request).
PREEMPTIONS_PER_REQUEST = 0.01
#: The P99 TTFT alert fires when more than this share of first tokens is later than the SLO.
TTFT_QUANTILE = 0.99


def _rate(metric: str, selector: str, by: str = "") -> str:
    return f"sum{by}(rate({metric}{{{selector}}}[{RATE_WINDOW}]))"


def pool_expressions(context: ExportContext, pool: DeployPool, options: ExportOptions) -> dict[str, str]:
    """The PromQL series of one pool that the alerts threshold and the dashboard draws, by name."""
    sel = pod_selector(pool, options)
    edge = ttft_slo_edge(context, options)
    within = "+Inf" if math.isinf(edge) else prometheus_le(edge)
    requests = _rate("vllm:time_to_first_token_seconds_count", sel)
    return {
        "request_rate": _rate("vllm:request_success_total", sel),
        "ttft_late_fraction": (
            f"(1 - {_rate('vllm:time_to_first_token_seconds_bucket', f'{sel},le={json.dumps(within)}')} "
            f"/ {requests})"
        ),
        "p99_ttft": f"histogram_quantile({TTFT_QUANTILE}, "
        f"{_rate('vllm:time_to_first_token_seconds_bucket', sel, ' by (le)')})",
        "p99_itl": f"histogram_quantile({TTFT_QUANTILE}, "
        f"{_rate('vllm:inter_token_latency_seconds_bucket', sel, ' by (le)')})",
        "mean_itl": f"({_rate('vllm:inter_token_latency_seconds_sum', sel)} / "
        f"{_rate('vllm:inter_token_latency_seconds_count', sel)})",
        "kv_usage": f"avg(vllm:kv_cache_usage_perc{{{sel}}})",
        "waiting": f"sum(vllm:num_requests_waiting{{{sel}}})",
        "preemption_rate": _rate("vllm:num_preemptions_total", sel),
        "preemptions_per_request": f"({_rate('vllm:num_preemptions_total', sel)} / "
        f"{_rate('vllm:request_success_total', sel)})",
        # cached prompt tokens over queried prompt tokens (vLLM V1's counters, vllm/v1/metrics/loggers.py)
        "prefix_cache_hit_rate": f"({_rate('vllm:prefix_cache_hits_total', sel)} / "
        f"{_rate('vllm:prefix_cache_queries_total', sel)})",
    }


def _alert(name: str, expr: str, summary: str, pool: DeployPool, severity: str = "warning") -> dict[str, Any]:
    return {
        "alert": name,
        "expr": expr,
        "for": FOR,
        "labels": {"severity": severity, "fleetopt_pool": pool.name},
        "annotations": {"summary": summary},
    }


def pool_alerts(context: ExportContext, pool: DeployPool, options: ExportOptions, max_utilization: float):
    """The alerts of one pool: each of the plan's promises, as a threshold on what vLLM reports."""
    e = pool_expressions(context, pool, options)
    slo = context.ttft_slo_s
    edge = ttft_slo_edge(context, options)
    where = "" if edge == slo else f" (counted at vLLM's next bucket edge, {edge:g} s)"
    late = 1 - TTFT_QUANTILE
    rules = [
        _alert(
            "FleetoptTTFTAboveSLO",
            f"{e['ttft_late_fraction']} > {late:g}",
            f"{pool.name} pool: more than {late:.0%} of first tokens are later than the plan's "
            f"{slo * 1e3:g} ms SLO{where}: P99 TTFT is above the SLO",
            pool,
            "critical",
        )
    ]
    if pool.tpot_limit_s is not None:
        rules.append(
            _alert(
                "FleetoptTPOTAboveLimit",
                f"{e['mean_itl']} > {pool.tpot_limit_s:g}",
                f"{pool.name} pool: mean time per output token is above the plan's "
                f"{pool.tpot_limit_s * 1e3:g} ms limit",
                pool,
            )
        )
    rules.append(
        _alert(
            "FleetoptKVCacheAboveCap",
            f"{e['kv_usage']} > {max_utilization:g}",
            f"{pool.name} pool: KV cache usage is above the plan's {max_utilization:.0%} utilization cap",
            pool,
        )
    )
    rules.append(
        _alert(
            "FleetoptPreemptions",
            f"{e['preemptions_per_request']} > {PREEMPTIONS_PER_REQUEST:g}",
            f"{pool.name} pool: more than {PREEMPTIONS_PER_REQUEST:.0%} of requests are preempted "
            "(the pool-routing paper's guideline)",
            pool,
        )
    )
    if pool.prefix_caching:
        rate = pool.prefix_cache_hit_rate
        rules.append(
            _alert(
                "FleetoptPrefixCacheHitsBelowPlan",
                f"{e['prefix_cache_hit_rate']} < {rate:.6g}",
                f"{pool.name} pool: fewer prompt tokens are prefix-cache hits than the {rate:.1%} the plan "
                "charged as cached, so prefills cost more than planned: check the router's prefix "
                "affinity (router.yaml dispatch), or re-plan with --prefix-caching hit-rate:F at the "
                "observed rate",
                pool,
            )
        )
    if pool.arrival_rate_per_s is not None and pool.instances > 0:
        rules.append(
            _alert(
                "FleetoptRateAbovePlan",
                f"{e['request_rate']} > {pool.arrival_rate_per_s:.6g}",
                f"{pool.name} pool: requests per second are above the {pool.arrival_rate_per_s:.6g} "
                "req/s the pool was sized for: re-plan at the new rate",
                pool,
            )
        )
    return rules


def rule_groups(context: ExportContext, options: ExportOptions, max_utilization: float) -> list[dict]:
    """One Prometheus rule group per pool that serves traffic (a Prometheus rules file's ``groups``)."""
    return [
        {"name": f"{pool.resource}", "rules": pool_alerts(context, pool, options, max_utilization)}
        for pool in context.pools
        if pool.instances > 0
    ]


def _metadata(name: str, options: ExportOptions) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "labels": {"app.kubernetes.io/part-of": options.name_prefix}}
    if options.namespace is not None:
        metadata["namespace"] = options.namespace
    return metadata


def pod_monitor(options: ExportOptions) -> dict[str, Any]:
    """A PodMonitor scraping vLLM's /metrics on every pod of the fleet: Prometheus then labels each
    series with the pod's ``namespace`` and ``pod``, the labels KEDA's query and the alerts select on."""
    spec: dict[str, Any] = {
        "selector": {
            "matchLabels": {
                "app.kubernetes.io/name": "vllm",
                "app.kubernetes.io/part-of": options.name_prefix,
            }
        },
        "podMetricsEndpoints": [{"port": "http", "path": "/metrics", "interval": "15s"}],
    }
    if options.namespace is not None:
        spec["namespaceSelector"] = {"matchNames": [options.namespace]}
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": _metadata(f"{options.name_prefix}-vllm", options),
        "spec": spec,
    }


def prometheus_rule(context: ExportContext, options: ExportOptions, max_utilization: float) -> dict[str, Any]:
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": _metadata(f"{options.name_prefix}-plan", options),
        "spec": {"groups": rule_groups(context, options, max_utilization)},
    }


def monitoring_manifests(
    context: ExportContext, options: ExportOptions, max_utilization: float
) -> list[dict]:
    return [pod_monitor(options), prometheus_rule(context, options, max_utilization)]


def _panel(title: str, targets: list[tuple[str, str]], unit: str, x: int, y: int) -> dict[str, Any]:
    return {
        "type": "timeseries",
        "title": title,
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "gridPos": {"h": 8, "w": 8, "x": x, "y": y},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "targets": [
            {"refId": chr(ord("A") + k), "expr": expr, "legendFormat": legend}
            for k, (legend, expr) in enumerate(targets)
        ],
    }


def dashboard(context: ExportContext, options: ExportOptions, max_utilization: float) -> dict[str, Any]:
    """A Grafana dashboard (JSON model, schemaVersion 39): one row per pool, each observed series
    beside the plan's figure for it (drawn as a constant)."""
    panels: list[dict[str, Any]] = []
    y = 0
    for pool in context.pools:
        if pool.instances == 0:
            continue
        e = pool_expressions(context, pool, options)
        panels.append(
            {"type": "row", "title": f"{pool.name} pool", "gridPos": {"h": 1, "w": 24, "x": 0, "y": y}}
        )
        y += 1
        planned_rate = f"vector({pool.arrival_rate_per_s or 0:.6g})"
        panels += [
            _panel("requests/s", [("observed", e["request_rate"]), ("planned", planned_rate)], "reqps", 0, y),
            _panel("P99 TTFT", [("observed", e["p99_ttft"]), ("SLO", f"vector({context.ttft_slo_s:g})")],
                   "s", 8, y),
            _panel("KV cache usage", [("observed", e["kv_usage"]), ("cap", f"vector({max_utilization:g})")],
                   "percentunit", 16, y),
            _panel("requests waiting", [("waiting", e["waiting"])], "short", 0, y + 8),
            _panel("preemptions per request",
                   [("observed", e["preemptions_per_request"]),
                    ("guideline", f"vector({PREEMPTIONS_PER_REQUEST:g})")],
                   "percentunit", 8, y + 8),
            _panel("time per output token",
                   [("mean", e["mean_itl"]), ("P99", e["p99_itl"])]
                   + ([("limit", f"vector({pool.tpot_limit_s:g})")] if pool.tpot_limit_s else []),
                   "s", 16, y + 8),
        ]  # fmt: skip
        y += 16
        if pool.prefix_caching:
            planned_hits = f"vector({pool.prefix_cache_hit_rate:.6g})"
            panels.append(
                _panel("prefix-cache hits (share of prompt tokens)",
                       [("observed", e["prefix_cache_hit_rate"]), ("planned", planned_hits)],
                       "percentunit", 0, y)
            )  # fmt: skip
            y += 8
    return {
        "title": f"fleetopt plan {context.plan_label}",
        "uid": f"{options.name_prefix}-plan",
        "tags": ["fleetopt", "vllm"],
        "schemaVersion": 39,
        "time": {"from": "now-6h", "to": "now"},
        "refresh": "30s",
        "templating": {
            "list": [
                {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Prometheus"}
            ]
        },
        "annotations": {"list": []},
        "description": f"fleetopt {__version__}: planned against observed for {context.plan_label} "
        f"(vLLM's /metrics on port {VLLM_PORT})",
        "panels": panels,
    }


def dashboard_json(context: ExportContext, options: ExportOptions, max_utilization: float) -> str:
    return json.dumps(dashboard(context, options, max_utilization), indent=1, ensure_ascii=False) + "\n"
