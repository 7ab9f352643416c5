"""Prefix caching: hit rates from a log's block hashes, and plans that charge each prompt only its
uncached tokens (``--prefix-caching``).

``off`` (the default) is today's plan, untouched. ``hit-rate:F`` charges every prompt (1 − F) of
its tokens. ``auto`` reads the log's block hashes (Mooncake ``hash_ids``) and replays them through
the caches of the fleet it plans — each pool's instances, each holding what its KV leaves over
after the sequences in flight, dispatched ``random`` or by prefix ``affinity``
(:mod:`fleetopt.core.prefix`) — then plans again on each request's uncached prompt, and repeats
until the fleet the caches were simulated at is the fleet planned. A log without block hashes that
reports each request's cached prompt tokens (OpenAI's ``cached_tokens`` and its kin,
:class:`fleetopt.core.prefix.ReportedCache`) is charged them as given: the hit rate of the fleet
the log was taken on, said so in the plan. A log without cache evidence plans as ``off``.
Routing, KV slots and the workload's fingerprint keep the whole prompt: a cached prompt still
needs its context in the KV cache.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from fleetopt.core.prefix import (
    DEFAULT_LOAD_BOUND,
    DISPATCH_POLICIES,
    MOONCAKE_BLOCK_TOKENS,
    BlockStream,
    CacheHits,
    simulate_prefix_cache,
    uncached_input_tokens,
)
from fleetopt.core.workload import Workload
from fleetopt.errors import ValidationError

#: Plans made at most, ``auto``: the first at ``off``, then until the fleet stops changing.
MAX_ROUNDS = 5
#: The seed of random dispatch in the cache simulation.
CACHE_SEED = 0


@dataclass(frozen=True)
class PrefixCaching:
    """A parsed ``--prefix-caching``: ``mode`` off, auto or hit-rate (with ``hit_fraction``)."""

    mode: str = "off"
    hit_fraction: float | None = None


def parse_prefix_caching(text: str | None) -> PrefixCaching:
    """``off``, ``auto`` or ``hit-rate:F`` (F in [0, 1), e.g. 0.3 or 30%)."""
    from fleetopt.io.units import parse_fraction

    value = (text or "off").strip().lower()
    if value in ("off", "auto"):
        return PrefixCaching(value)
    match = re.fullmatch(r"hit-rate:(.+)", value)
    if match is None:
        raise ValidationError(
            f"--prefix-caching: {text!r} is not off, auto or hit-rate:F (F the share of prompt tokens "
            "cached, e.g. hit-rate:0.3 or hit-rate:30%)"
        )
    fraction = parse_fraction(match.group(1), field="--prefix-caching hit-rate")
    if not 0.0 <= fraction < 1.0:
        raise ValidationError(f"--prefix-caching: hit-rate {match.group(1)!r} must be in [0, 1)")
    return PrefixCaching("hit-rate", fraction)


def cached_workload(
    workload: Workload,
    total_tokens: np.ndarray,
    uncached: np.ndarray,
    output_tokens: np.ndarray,
    weights,
    *,
    in_order: bool = False,
) -> Workload:
    """``workload`` with each request's prompt charged ``uncached`` tokens: atoms (total, uncached
    input, output) — the total (routing key, KV footprint) and the output as they were — with
    equal atoms merged, by total ascending; arrivals and everything else kept. ``in_order``: the rows
    are the log's requests in arrival order (one each), and the workload keeps each one's atom
    (``metadata["request_atoms"]``), so a replay serves every arrival its own request."""
    rows = np.stack([total_tokens, uncached, output_tokens], axis=1).astype(np.int64)
    atoms, inverse = np.unique(rows, axis=0, return_inverse=True)
    merged = np.bincount(inverse.reshape(-1), weights=np.asarray(weights, dtype=np.float64))
    metadata = dict(workload.metadata)
    metadata.pop("request_atoms", None)
    if in_order:
        metadata["request_atoms"] = inverse.reshape(-1)
    return dataclasses.replace(
        workload,
        total_tokens=atoms[:, 0].copy(),
        input_tokens=atoms[:, 1].copy(),
        output_tokens=atoms[:, 2].copy(),
        weights=merged,
        metadata=metadata,
    )


def _signature(fleet: Any) -> tuple:
    return fleet.routing.boundaries_tokens, tuple(p.instances for p in fleet.pools)


def pool_of_requests(fleet: Any, total_tokens: np.ndarray) -> np.ndarray:
    """The pool index of each request (B_{k−1} < L ≤ B_k; beyond the last boundary, the last pool)."""
    bounds = np.asarray(fleet.routing.boundaries_tokens, dtype=np.int64)
    return np.minimum(np.searchsorted(bounds, total_tokens, side="left"), len(fleet.pools) - 1)


def cache_tokens_per_instance(kv_capacity_tokens: int, pool: Any, mean_total_tokens: float) -> int:
    """KV an instance leaves to cached blocks: its capacity less the sequences in flight on average
    (utilization × slots, each holding its whole routed length — a bound from above)."""
    utilization = pool.utilization if math.isfinite(pool.utilization) else 1.0
    in_flight = utilization * pool.slots_per_instance * mean_total_tokens
    return max(0, int(kv_capacity_tokens - in_flight))


def _pool_cache_hits(
    stream: BlockStream, rows: np.ndarray, instances: int, cache_tokens: int, dispatch: str
) -> CacheHits:
    """The cache hits of one pool's requests (``rows`` of ``stream``) over ``instances`` LRU caches of
    ``cache_tokens`` each under ``dispatch``, with the plan's seed and load bound: what a plan
    simulates at its fleet and what ``simulate --plan`` replays it with."""
    return simulate_prefix_cache(
        stream.subset(rows),
        instances=instances,
        capacity_blocks=cache_tokens // stream.block_size_tokens,
        dispatch=dispatch,
        seed=CACHE_SEED,
        load_bound=DEFAULT_LOAD_BOUND,
    )


def simulate_fleet_caches(
    stream: BlockStream, output_tokens: np.ndarray, fleet: Any, dispatch: str
) -> tuple[np.ndarray, dict[str, dict[str, Any]]]:
    """Each request's cached prompt tokens in ``fleet`` (the pools' own instances and caches), and
    per pool its hit rate, instance count and cache size."""
    totals = stream.input_tokens + output_tokens
    pools = pool_of_requests(fleet, totals)
    hits = np.zeros(stream.request_count, np.int64)
    found: dict[str, dict[str, Any]] = {}
    for k, (name, pool, hardware) in enumerate(
        zip(fleet.pool_names, fleet.pools, fleet.hardware, strict=True)
    ):
        rows = np.flatnonzero(pools == k)
        if not rows.size:
            continue
        cache_tokens = cache_tokens_per_instance(
            hardware.kv_capacity_tokens, pool, float(totals[rows].mean())
        )
        result = _pool_cache_hits(stream, rows, max(1, pool.instances), cache_tokens, dispatch)
        hits[rows] = result.hit_tokens
        found[name] = {
            "hit_rate": result.hit_rate,
            "source": "simulated",
            "instances": max(1, pool.instances),
            "cache_tokens_per_instance": cache_tokens,
        }
    return hits, found


def _pools_of(fleet: Any, totals: np.ndarray, simulated: dict[str, dict[str, Any]]):
    """(name, simulated figures, request mask) of each pool of ``fleet`` with requests."""
    where = pool_of_requests(fleet, totals)
    for k, name in enumerate(fleet.pool_names):
        if name in simulated and (where == k).any():
            yield name, simulated[name], where == k


def _finish(run: Any, off: Any, section: dict[str, Any], note: str) -> Any:
    """``run`` with the prefix-caching section, the off plan's fingerprint and a note."""
    from fleetopt.io.documents.prefix import PoolCacheDocument, PrefixCachingDocument
    from fleetopt.io.documents.typed import to_document
    from fleetopt.io.plans import workload_fingerprint

    document = dict(run.document)
    best = run.plan.best
    # of the log as it is (whole prompts), at this plan's B and γ
    b_short, gamma = (best.b_short_tokens, best.gamma) if best is not None else (None, None)
    fingerprint = workload_fingerprint(off.workload, b_short, gamma)
    document["inputs"] = {**document["inputs"], "workload_fingerprint": to_document(fingerprint)}
    off_gpus = off.plan.best.total_gpus if off.plan.best is not None else 0
    gpus = run.plan.best.total_gpus if run.plan.best is not None else off_gpus
    pools = {name: PoolCacheDocument(**values) for name, values in section.pop("pools").items()}
    document["prefix_caching"] = to_document(
        PrefixCachingDocument(
            pools=pools, gpus_without_caching=off_gpus, gpus_saved=off_gpus - gpus, **section
        )
    )
    document["notes"] = [*document["notes"], note]
    return dataclasses.replace(run, document=document)


def plan_with_prefix_caching(
    workload: str,
    setting: PrefixCaching,
    *,
    prefix_dispatch: str = "random",
    block_size_tokens: int = MOONCAKE_BLOCK_TOKENS,
    **plan_options: Any,
) -> Any:
    """:func:`fleetopt.api.plan_workload` with prompts charged only their uncached tokens (module
    docstring); the plan document gains ``prefix_caching``. ``off`` returns today's plan as is.
    ``prefix_dispatch``: how the cache simulation dispatches (``random`` or ``affinity``; the
    plan's own router policy is ``dispatch``, among ``plan_options``)."""
    from fleetopt.api import plan_workload

    if prefix_dispatch not in DISPATCH_POLICIES:
        raise ValidationError(
            f"--prefix-dispatch: {prefix_dispatch!r} is not one of {', '.join(DISPATCH_POLICIES)}"
        )
    if setting.mode != "off" and plan_options.get("compressibility"):
        raise ValidationError(
            "--prefix-caching with --compressibility > 0: compressing a prompt and reusing its cached "
            "prefix are not modelled together; plan one of them"
        )
    off = plan_workload(workload, **plan_options)
    if setting.mode == "off":
        return off
    loaded = off.workload
    options = {**plan_options, "workload_label": plan_options.get("workload_label") or workload}
    if setting.mode == "hit-rate":
        fraction = float(setting.hit_fraction or 0.0)
        uncached = uncached_input_tokens(loaded.input_tokens, fraction)
        run = plan_workload(
            cached_workload(loaded, loaded.total_tokens, uncached, loaded.output_tokens, loaded.weights),
            **options,
        )
        inputs = float(np.dot(loaded.input_tokens, loaded.weights))
        rate = 1 - float(np.dot(uncached, loaded.weights)) / inputs if inputs else 0.0
        names = run.plan.best.pool_names if run.plan.best is not None else ()
        section = {
            "mode": "hit-rate",
            "dispatch": None,
            "block_size_tokens": None,
            "hit_rate": rate,
            "pools": {n: dict(hit_rate=rate, source="given", instances=None, cache_tokens_per_instance=None)
                      for n in names},
            "rounds": 1,
        }  # fmt: skip
        note = (
            f"Prefix caching: every prompt charged {1 - fraction:.0%} of its tokens (--prefix-caching "
            f"hit-rate:{fraction:g}, a given share, not measured)."
        )
        return _finish(run, off, section, note)
    return _plan_auto(workload, off, options, prefix_dispatch, block_size_tokens)


def _plan_auto(
    workload: str, off: Any, options: dict[str, Any], dispatch: str, block_size_tokens: int
) -> Any:
    from fleetopt.api import plan_workload
    from fleetopt.io.prefix_logs import has_block_hashes, read_hash_log

    hashes = has_block_hashes(workload)
    reported = off.workload.metadata.get("reported_cache")
    if off.plan.best is None or not (hashes or reported is not None):
        note = (
            "Prefix caching: auto found neither block hashes nor reported cached tokens in the log, so "
            "prompts are charged in full (as --prefix-caching off)."
            if off.plan.best is not None
            else "Prefix caching: no fleet meets the SLO even charging whole prompts."
        )
        document = {**off.document, "notes": [*off.document["notes"], note]}
        return dataclasses.replace(off, document=document)
    if not hashes:  # block hashes, where present, are simulated for the fleet planned: they come first
        return _plan_reported(off, options, reported)
    log = read_hash_log(workload, block_size_tokens)
    stream = log.stream
    if stream.request_count != int(round(off.workload.total_weight)):
        raise ValidationError(
            f"{workload}: {stream.request_count:,} rows with block hashes but "
            f"{off.workload.total_weight:,.0f} "
            "requests read as the workload; every row needs its hash_ids"
        )
    totals = stream.input_tokens + log.output_tokens

    def plan_on(hits: np.ndarray) -> Any:
        uncached = stream.input_tokens - hits
        return plan_workload(
            cached_workload(off.workload, totals, uncached, log.output_tokens, np.ones(totals.size)),
            **options,
        )

    hits, _ = simulate_fleet_caches(stream, log.output_tokens, off.plan.best, dispatch)
    tried, run, rounds = [hits], off, 0
    why = "caching saved nothing: the plan is the off plan"
    while rounds < MAX_ROUNDS:
        rounds += 1
        candidate = plan_on(hits)
        if candidate.plan.best is None:
            break
        # the hits at the planned fleet's own instances: the plan holds when no pool gets fewer
        # cached tokens there than it was planned with
        own, own_pools = simulate_fleet_caches(stream, log.output_tokens, candidate.plan.best, dispatch)
        where = pool_of_requests(candidate.plan.best, totals)
        if all(
            own[where == k].sum() >= hits[where == k].sum() for k in range(len(candidate.plan.best.pools))
        ):
            run, why = candidate, "and this fleet's own caches hit at least that much"
            break
        hits = own
        tried.append(own)
    else:  # no plan held its own hit rates: charge each request the least it hit at any fleet tried
        hits = np.minimum.reduce(tried)
        run = plan_on(hits)
        why = f"the least each request hit at the {len(tried)} fleets tried (none held its own hit rates)"
        if run.plan.best is not None:
            own_pools = simulate_fleet_caches(stream, log.output_tokens, run.plan.best, dispatch)[1]
    if run.plan.best is None or run.plan.best.total_gpus > off.plan.best.total_gpus:
        run, hits = off, np.zeros_like(hits)
        why = "caching saved nothing: the plan is the off plan"
    inputs = stream.input_tokens
    pools = {} if run is off else {
        name: {**values, "hit_rate": float(hits[mask].sum()) / max(1.0, float(inputs[mask].sum()))}
        for name, values, mask in _pools_of(run.plan.best, totals, own_pools)
    }  # fmt: skip
    rate = float(hits.sum()) / float(stream.input_tokens.sum())
    section = {
        "mode": "auto",
        "dispatch": dispatch,
        "block_size_tokens": stream.block_size_tokens,
        "hit_rate": rate,
        "pools": pools,
        "rounds": rounds,
    }
    note = (
        f"Prefix caching: prompts charged their uncached tokens; {rate:.1%} of prompt tokens hit the caches "
        f"of the log's block hashes replayed per pool ({dispatch} dispatch, LRU caches of the KV left after "
        f"the sequences in flight) at the fleet planned, {why}."
    )
    return _finish(run, off, section, note)


def _plan_reported(off: Any, options: dict[str, Any], reported: Any) -> Any:
    """``auto`` on a log that reports each request's cached prompt tokens: every request charged its
    prompt less them (at least one token computed; a row that reports none in full), as given —
    the production fleet's hits, not simulated for the fleet planned."""
    from fleetopt.api import plan_workload

    inputs, outputs, counts = reported.input_tokens, reported.output_tokens, reported.counts
    totals, uncached = inputs + outputs, reported.uncached_input_tokens()
    run = plan_workload(cached_workload(off.workload, totals, uncached, outputs, counts), **options)
    saved = ""
    if run.plan.best is None or run.plan.best.total_gpus > off.plan.best.total_gpus:
        run, uncached = off, inputs
        saved = "; caching saved nothing: the plan is the off plan"

    def rate(mask) -> float:
        prompt = float(np.dot(inputs[mask], counts[mask]))
        return 1 - float(np.dot(uncached[mask], counts[mask])) / prompt if prompt else 0.0

    pools = {}
    if run is not off:
        where = pool_of_requests(run.plan.best, totals)
        for k, name in enumerate(run.plan.best.pool_names):
            if (where == k).any():
                pools[name] = dict(
                    hit_rate=rate(where == k),
                    source="reported",
                    instances=None,
                    cache_tokens_per_instance=None,
                )
    share = rate(np.ones(inputs.size, dtype=bool))
    section = {
        "mode": "auto", "dispatch": None, "block_size_tokens": None, "hit_rate": share, "pools": pools,
        "rounds": 1,
    }  # fmt: skip
    field = f" ({reported.field})" if reported.field else ""
    note = (
        f"Prefix caching: prompts charged less the cached tokens the log reports{field}, "
        f"{reported.hit_rate:.1%} of prompt tokens: the hit rate of the production fleet, measured where "
        "the log was taken, not simulated for the fleet planned (other instance counts, cache sizes or "
        f"routing hit at other rates; a log with block hashes is simulated per pool instead){saved}."
    )
    partial = partial_cache_warning(reported)
    if partial:
        note += " " + partial
    return _finish(run, off, section, note)


def partial_cache_warning(reported: Any) -> str | None:
    """The words for a log in which some rows report their cached tokens and others do not (the
    documented fallback: those rows count as 0 cached, charged in full), or None."""
    missing = reported.requests - reported.reporting_requests
    if not missing:
        return None
    return (
        f"{missing:,} of {reported.requests:,} requests report no cached tokens and count as 0 cached "
        f"(charged in full): {reported.hit_rate:.1%} of all prompt tokens are cached, "
        f"{reported.reporting_hit_rate:.1%} of the prompt tokens of the requests that report them."
    )


def reported_cache_report(workload: Workload) -> tuple[dict[str, Any] | None, str | None]:
    """What ``workload show`` prints for a log that reports cached prompt tokens: (the hit rate it
    reports and its counts, or None; the partial-presence warning, or None)."""
    reported = workload.metadata.get("reported_cache")
    if reported is None:
        return None, None
    report = {
        "field": reported.field,
        "requests": reported.requests,
        "reporting_requests": reported.reporting_requests,
        "prompt_tokens": reported.prompt_tokens,
        "cached_prompt_tokens": reported.cached_prompt_tokens,
        "hit_rate": reported.hit_rate,
        "reporting_hit_rate": reported.reporting_hit_rate,
    }
    return report, partial_cache_warning(reported)


#: Instance counts ``workload cache`` reports by default.
DEFAULT_REPORT_INSTANCES = (1, 4, 16)


def cache_report(
    path: str,
    *,
    block_size_tokens: int = MOONCAKE_BLOCK_TOKENS,
    cache_tokens_per_instance: int | None = None,
    serving: str | None = None,
    instances: tuple[int, ...] = DEFAULT_REPORT_INSTANCES,
    profiles_dir: Any = None,
) -> dict[str, Any]:
    """The hit rates a hash log gives under each cache model: one unbounded cache, then LRU
    caches of ``cache_tokens_per_instance`` (default: the KV of one instance of ``serving``, the
    default serving profile when not given) over each instance count, random and affinity dispatch."""
    from fleetopt.api import profile_search_path, resolve_hardware
    from fleetopt.defaults import DEFAULT_SERVING
    from fleetopt.io.prefix_logs import read_hash_log

    if any(n < 1 or n > 1023 for n in instances):
        raise ValidationError(f"--instances: {list(instances)} must be whole numbers in 1 … 1,023")
    if cache_tokens_per_instance is None:
        hardware = resolve_hardware(serving or DEFAULT_SERVING, None, profile_search_path(profiles_dir))
        cache_tokens_per_instance = int(hardware.kv_capacity_tokens)
        size_origin = f"the KV of one {serving or DEFAULT_SERVING} instance"
    else:
        size_origin = "given"
    log = read_hash_log(path, block_size_tokens)
    stream = log.stream
    capacity = cache_tokens_per_instance // stream.block_size_tokens
    models = [
        {"cache": "unbounded", "instances": 1, "cache_tokens_per_instance": None, "dispatch": "—",
         "hit_rate": simulate_prefix_cache(stream).hit_rate},
    ]  # fmt: skip
    for n in instances:
        for dispatch in DISPATCH_POLICIES if n > 1 else ("random",):
            hits = simulate_prefix_cache(stream, instances=n, capacity_blocks=capacity, dispatch=dispatch)
            size = capacity * stream.block_size_tokens
            models.append(
                {"cache": "LRU", "instances": n, "cache_tokens_per_instance": size,
                 "dispatch": dispatch if n > 1 else "—", "hit_rate": hits.hit_rate}
            )  # fmt: skip
    return {
        "source": log.source,
        "requests": stream.request_count,
        "prompt_tokens": int(stream.input_tokens.sum()),
        "block_size_tokens": stream.block_size_tokens,
        "cache_size_origin": size_origin,
        "models": models,
    }


def with_planned_caching(workload: Workload, document: dict[str, Any], fleet: Any) -> Workload:
    """``workload`` charged as a plan with ``prefix_caching`` charged its traffic: each request its
    pool's assumed hit rate (pools by the fleet's routing, whole prompts), what ``drift`` evaluates
    the deployed fleet on; the workload itself when the plan assumed no caching."""
    caching = document.get("prefix_caching")
    if not caching:
        return workload
    rates = [caching["pools"].get(pool.name, {}).get("hit_rate", 0.0) for pool in fleet.pools]
    pools = pool_of_requests(fleet, workload.total_tokens)
    inputs = workload.total_tokens - workload.output_tokens
    cached = np.floor(inputs * np.asarray(rates, dtype=np.float64)[pools]).astype(np.int64)
    uncached = np.maximum(inputs - cached, np.minimum(inputs, 1))
    totals, outputs = workload.total_tokens, workload.output_tokens
    return cached_workload(workload, totals, uncached, outputs, workload.weights)


def prefix_evidence(workload: str, block_size_tokens: int = MOONCAKE_BLOCK_TOKENS) -> tuple[Any, str | None]:
    """What ``workload show`` adds for a log with block hashes: (:func:`cache_report` of an
    unbounded cache and one instance's LRU, or None; a warning when the hashes cannot be used —
    the rest of ``show`` goes on without them)."""
    from pathlib import Path

    from fleetopt.io.prefix_logs import has_block_hashes

    if not Path(workload).is_file() or not has_block_hashes(workload):
        return None, None
    try:
        return cache_report(workload, block_size_tokens=block_size_tokens, instances=(1,)), None
    except ValidationError as exc:
        return None, f"the log's hash_ids were not used for hit rates: {exc}"


def replayed_caching(workload: Workload, source: str, document: dict[str, Any], fleet: Any) -> Workload:
    """``workload`` (a plan's own, read as the plan read it) charged as the plan's ``prefix_caching``
    charged it, for ``simulate --plan``: with ``auto`` on a log with block hashes, the hashes replayed
    through the caches the plan recorded — each pool's instances and cache size, its dispatch and
    seed — so each request is charged the cached tokens it hits in the planned fleet, in the log's
    order (at least what the plan charged: it keeps a fleet whose own caches hit no less); with
    ``auto`` on a log that reports cached tokens, each request its reported ones; otherwise each
    request its pool's planned hit rate (:func:`with_planned_caching`). The workload itself when
    the plan assumed no caching."""
    from fleetopt.io.prefix_logs import has_block_hashes, read_hash_log

    caching = document.get("prefix_caching")
    pools = (caching or {}).get("pools") or {}
    reported = workload.metadata.get("reported_cache")
    if (
        caching
        and caching.get("mode") == "auto"
        and reported is not None
        and any(values.get("source") == "reported" for values in pools.values())
    ):  # the log's own cached tokens, request by request, as the plan charged them
        inputs, outputs = reported.input_tokens, reported.output_tokens
        uncached = reported.uncached_input_tokens()
        return cached_workload(workload, inputs + outputs, uncached, outputs, reported.counts)
    if not caching or caching.get("mode") != "auto" or not pools or not has_block_hashes(source):
        return with_planned_caching(workload, document, fleet)
    log = read_hash_log(source, int(caching["block_size_tokens"]))
    stream = log.stream
    if stream.request_count != int(round(workload.total_weight)):
        return with_planned_caching(workload, document, fleet)
    totals = stream.input_tokens + log.output_tokens
    where = pool_of_requests(fleet, totals)
    hits = np.zeros(stream.request_count, np.int64)
    for k, pool in enumerate(fleet.pools):
        values = pools.get(pool.name)
        rows = np.flatnonzero(where == k)
        if values is None or not rows.size or values.get("cache_tokens_per_instance") is None:
            continue
        hits[rows] = _pool_cache_hits(
            stream,
            rows,
            int(values["instances"]),
            int(values["cache_tokens_per_instance"]),
            caching["dispatch"],
        ).hit_tokens
    in_order = workload.arrival_times_s is not None and workload.arrival_times_s.size == totals.size
    uncached = stream.input_tokens - hits
    return cached_workload(
        workload, totals, uncached, log.output_tokens, np.ones(totals.size), in_order=in_order
    )
