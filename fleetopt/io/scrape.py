"""Reading engines' ``/metrics`` pages directly (``fleetopt observe --scrape``), without Prometheus.

Each page is parsed with ``prometheus_client``'s text-format parser (the reference
implementation of the format vLLM serves; an optional extra, ``pip install 'fleetopt[observe]'``:
only ``--scrape`` needs it). A page holds every counter and histogram bucket since the engine
started, so

* one scrape gives the engine's lifetime: counts since start, rates over the time since
  ``process_start_time_seconds`` (vLLM's server publishes it);
* two scrapes ``--scrape-interval`` apart give the interval: each series' increase, a drop being
  a restart after which it counted up from zero (:func:`fleetopt.core.histograms.counter_increase`).

A URL is one engine; ``POOL=URL`` puts it in a pool (else the whole fleet is one pool). Gauges are
the mean of the scrapes. There are no arrival windows (one interval), so the workload summary has
no rate profile.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from fleetopt.core.histograms import counter_increase, make_histogram
from fleetopt.core.observed import PoolObservation
from fleetopt.errors import ValidationError
from fleetopt.io.prometheus import (
    ALL_POOLS,
    HISTOGRAM_ROLES,
    PER_REQUEST_TPOT,
    VLLM_METRICS,
    PrometheusClient,
    PrometheusError,
    public_url,
    resolve_metric,
)

#: The labels that tell engines apart within one page (data-parallel engines) — added over.
_Snapshot = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def parse_page(text: str, where: str) -> _Snapshot:
    """(sample name, labels) → value of a text-format page (``prometheus_client``'s parser)."""
    try:
        from prometheus_client.parser import text_string_to_metric_families
    except ImportError:
        raise ValidationError(
            "--scrape reads /metrics pages with prometheus_client: pip install 'fleetopt[observe]'"
        ) from None
    snapshot: _Snapshot = {}
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                key = (sample.name, tuple(sorted(sample.labels.items())))
                snapshot[key] = float(sample.value)
    except (ValueError, TypeError, KeyError, IndexError) as exc:
        raise PrometheusError(f"{where}: not a Prometheus text-format page ({exc})") from None
    return snapshot


def _split(target: str) -> tuple[str, str]:
    """``POOL=URL`` → (pool, url); a bare URL → (ALL_POOLS, url)."""
    head, sep, tail = target.partition("=")
    if sep and "://" in tail and "://" not in head:
        if not head:
            raise ValidationError(f"--scrape {target!r}: the pool name before '=' is empty")
        return head, tail
    return ALL_POOLS, target


@dataclass(frozen=True)
class ScrapeRead:
    """What the scrapes gave, shaped like :class:`fleetopt.io.prometheus.FleetRead`."""

    pools: tuple[PoolObservation, ...]
    metrics: dict[str, str]
    start_s: float
    end_s: float
    window_s: float | None
    warnings: tuple[str, ...]
    source: str


def scrape_fleet(
    targets: Sequence[str],
    *,
    interval_s: float = 0.0,
    plan_pools: tuple[str, ...] | None = None,
    pool_label: str | None = None,
    name_prefix: str = "fleetopt",
    token: str | None = None,
    ca_file: str | None = None,
    timeout_s: float = 30.0,
) -> ScrapeRead:
    """Scrape every target once (or twice, ``interval_s`` apart) and add up each pool's engines."""
    del pool_label, name_prefix  # a page has no pod label: pools come from POOL=URL
    if not targets:
        raise ValidationError("--scrape: give at least one /metrics URL")
    if not (interval_s >= 0 and math.isfinite(interval_s)):
        raise ValidationError(f"--scrape-interval: {interval_s!r} s must be ≥ 0")
    split = [_split(t) for t in targets]
    if plan_pools is not None:
        unknown = sorted({pool for pool, _ in split if pool not in plan_pools and pool != ALL_POOLS})
        if unknown:
            raise ValidationError(
                f"--scrape: pool {unknown[0]!r} is not in the plan (its pools: {', '.join(plan_pools)})"
            )
    clients = [PrometheusClient(url, token=token, timeout_s=timeout_s, ca_file=ca_file, what="engine")
               for _, url in split]  # fmt: skip

    def scrape_all() -> tuple[float, list[_Snapshot]]:
        moment = time.time()
        with ThreadPoolExecutor(max_workers=min(8, len(clients))) as pool:
            pages = list(pool.map(lambda c: c.fetch("", post=False), clients))
        return moment, [
            parse_page(p.decode("utf-8", "replace"), c.shown) for p, c in zip(pages, clients, strict=True)
        ]

    first_s, first = scrape_all()
    if interval_s > 0:
        time.sleep(interval_s)
        end_s, last = scrape_all()
    else:
        end_s, last = first_s, first
    warnings: list[str] = []
    metrics: dict[str, str] = {}
    present = {name for snapshot in last for name, _ in snapshot}
    for role, names in VLLM_METRICS.items():
        found = resolve_metric(role, present)
        if found is not None:
            metrics[role] = found
        else:
            warnings.append(f"no {' or '.join(names)} on the pages")
    if "requests" not in metrics:
        raise PrometheusError(
            f"{', '.join(c.shown for c in clients[:3])}: no vllm:request_success_total on the page(s) "
            "(another engine, or not a vLLM /metrics URL?)"
        )
    pools: dict[str, list[tuple[float, _Snapshot, _Snapshot]]] = {}
    for (pool, _), client, before, after in zip(split, clients, first, last, strict=True):
        if interval_s > 0:
            span = end_s - first_s
        else:
            start = after.get(("process_start_time_seconds", ()))
            if start is None:
                raise PrometheusError(
                    f"engine at {client.shown}: no process_start_time_seconds on its page, so its lifetime "
                    "is unknown; give --scrape-interval to measure an interval instead"
                )
            span = end_s - start
            before = {}
        pools.setdefault(pool, []).append((span, before, after))
    observations = [_pool(name, engines, metrics, end_s) for name, engines in pools.items()]
    shown = " ".join(public_url(url) for _, url in split[:3]) + (" …" if len(split) > 3 else "")
    source = f"scrape {shown} at {np.datetime64(int(end_s), 's')}Z"
    start_s = end_s - max(obs.span_s for obs in observations)
    return ScrapeRead(tuple(observations), metrics, start_s, end_s, None, tuple(warnings), source)


def _increase(name: str, before: _Snapshot, after: _Snapshot, le: str | None = None) -> float:
    """The summed increase of the samples called ``name`` (with ``le`` when given) between pages."""
    total = 0.0
    for (sample, labels), value in after.items():
        if sample != name or (le is not None and dict(labels).get("le") != le):
            continue
        previous = before.get((sample, labels))
        total += value if previous is None else counter_increase(np.array([previous, value]))[0]
    return total


def _pool(name: str, engines: list[tuple[float, _Snapshot, _Snapshot]], metrics: dict[str, str],
          end_s: float) -> PoolObservation:  # fmt: skip
    span = float(np.mean([e[0] for e in engines]))
    histograms: dict[str, Any] = {}
    for role in HISTOGRAM_ROLES:
        if role not in metrics:
            continue
        family = metrics[role]
        names = {dict(labels)["le"] for (s, labels) in engines[0][2] if s == family + "_bucket"}
        edges = sorted(names, key=lambda t: float(t.replace("+Inf", "inf")))
        counts = [sum(_increase(family + "_bucket", b, a, le) for _, b, a in engines) for le in edges]
        total_sum = sum(_increase(family + "_sum", b, a) for _, b, a in engines)
        values = [float(le.replace("+Inf", "inf")) for le in edges]
        histograms[role] = (
            make_histogram(values, counts, total_sum, f"{family}, pool {name}") if edges else None
        )

    def gauge(role: str, how: str = "sum") -> float | None:
        if role not in metrics:
            return None
        per_engine = []
        for _, before, after in engines:
            values = [v for (s, _), v in after.items() if s == metrics[role]]
            earlier = [v for (s, _), v in before.items() if s == metrics[role]] or values
            per_engine.append(0.5 * (sum(values) + sum(earlier)) / (len(values) if how == "mean" else 1))
        return float(sum(per_engine) / (len(per_engine) if how == "mean" else 1))

    requests = sum(_increase(metrics["requests"], b, a) for _, b, a in engines)
    preemptions = (
        sum(_increase(metrics["preemptions"], b, a) for _, b, a in engines)
        if "preemptions" in metrics
        else None
    )
    return PoolObservation(
        pool=name, span_s=span, end_s=end_s, instances=len(engines), requests=requests,
        ttft=histograms.get("ttft"), tpot=histograms.get("tpot"),
        tpot_per_request=metrics.get("tpot") == PER_REQUEST_TPOT,
        prompt_tokens=histograms.get("prompt_tokens"), generation_tokens=histograms.get("generation_tokens"),
        queue_time=histograms.get("queue_time"), preemptions=preemptions, running_mean=gauge("running"),
        waiting_mean=gauge("waiting"), kv_usage_mean=gauge("kv_usage", "mean"),
    )  # fmt: skip
