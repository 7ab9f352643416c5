"""The Python API: plan a fleet from a workload and profiles without shelling out.

>>> from fleetopt.api import plan_workload
>>> run = plan_workload("azure-2023", ttft_slo_s=0.5)          # doctest: +SKIP
>>> run.plan.best.total_gpus, run.document["best"]["b_short_tokens"]  # doctest: +SKIP

``plan_workload`` takes typed values (seconds, req/s, tokens); ``plan_from_options`` takes the
CLI's strings (``"500ms"``, ``"4096,8192"``) and returns the plan document the renderers use.
Both are thin: load (io) → one core call (:func:`fleetopt.core.planner.plan_fleet`) → document.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fleetopt import __version__
from fleetopt.core.planner import FleetPlan, PlanOptions
from fleetopt.core.service import PoolHardware
from fleetopt.core.workload import Workload
from fleetopt.defaults import (
    DEFAULT_DISPATCH,
    DEFAULT_GAMMAS,
    DEFAULT_LONG_CONTEXT_TOKENS,
    DEFAULT_MAX_UTILIZATION,
    DEFAULT_POOL_COUNT,
    DEFAULT_RATE_PER_S,
    DEFAULT_SERVICE_MODEL,
    DEFAULT_SERVING,
    PAPER_SERVING,
)
from fleetopt.errors import FleetoptError, ValidationError


@dataclass(frozen=True)
class PlanRun:
    """A finished plan with what it was computed from (``arrivals``: the rate basis it was sized on;
    ``schedule``: the time-of-day schedule when one was asked for)."""

    plan: FleetPlan
    workload: Workload
    document: dict[str, Any]
    arrivals: ArrivalBasis | None = None
    schedule: Any = None  # fleetopt.core.schedule.Schedule


#: The default window of the rate profile a plan's basis is read from, seconds.
DEFAULT_RATE_WINDOW_S = 60.0


@dataclass(frozen=True)
class ArrivalBasis:
    """What a plan sizes for, from the workload's arrivals (:mod:`fleetopt.core.arrivals`).

    ``basis``: ``mean``, ``peak`` or ``pNN``; ``factor``: sizing rate / mean rate (≥ 1);
    ``counts`` and ``profile``: the log's window counts and rate profile (None for a CDF or a log
    without timestamps); ``dispersion``: the within-window index of dispersion curve used for each
    pool's C_a² (empty on the mean basis: Poisson); ``overdispersed``: the window counts fail
    Fisher's index-of-dispersion test for Poisson at the 1% level (the log is bursty at the window
    scale, which a mean-rate plan ignores).
    """

    basis: str
    window_s: float
    mean_rate_per_s: float
    factor: float
    counts: Any  # fleetopt.core.arrivals.WindowCounts | None
    profile: Any  # fleetopt.core.arrivals.RateProfile | None
    dispersion: tuple[tuple[float, float], ...]
    overdispersed: bool

    @property
    def sizing_rate_per_s(self) -> float:
        return self.mean_rate_per_s * self.factor


def arrival_basis(
    workload: Workload, mean_rate_per_s: float, rate_basis: str | None, rate_window_s: float
) -> ArrivalBasis:
    """The basis a plan sizes on: ``rate_basis`` (default: ``peak`` for a log whose timestamps span
    at least one window, else ``mean``), its factor over the mean from the windowed profile, and
    the dispersion curve behind each pool's C_a² (only off the mean basis)."""
    from fleetopt.core.arrivals import (
        basis_factor,
        dispersion_curve,
        parse_rate_basis,
        rate_profile_of,
        workload_window_counts,
    )

    try:
        counts = workload_window_counts(workload, rate_window_s)
    except ValidationError:
        if rate_basis is not None and parse_rate_basis(rate_basis) != "mean":
            raise
        counts = None  # too many windows to profile (implausible timestamps): size on the mean
    basis = ("peak" if counts is not None else "mean") if rate_basis is None else parse_rate_basis(rate_basis)
    if basis != "mean" and counts is None:
        raise ValidationError(
            f"--rate-basis {basis}: workload {workload.name!r} has no arrival times spanning a "
            f"{rate_window_s:g} s window (a CDF, a log without a time column, or a shorter log); use "
            "--rate-basis mean, or a shorter --rate-window"
        )
    profile = rate_profile_of(counts) if counts is not None else None
    overdispersed = False
    if profile is not None and profile.windows >= 2 and math.isfinite(profile.index_of_dispersion):
        # the χ² quantile without importing scipy.stats (0.5 s); only logs with times need it
        from scipy.special import chdtri

        dof = profile.windows - 1
        overdispersed = profile.index_of_dispersion * dof > float(chdtri(dof, 0.01))
    dispersion: tuple[tuple[float, float], ...] = ()
    if basis != "mean":
        dispersion = dispersion_curve(workload, rate_window_s)
    factor = basis_factor(counts, basis) if basis != "mean" else 1.0
    return ArrivalBasis(
        basis,
        float(rate_window_s),
        float(mean_rate_per_s),
        factor,
        counts,
        profile,
        dispersion,
        overdispersed,
    )


def profile_search_path(profiles_dir: Path | None) -> tuple[Path, ...]:
    """The user's profile folder (if any) before the bundled one."""
    from fleetopt.io.data import bundled_dir

    return ((Path(profiles_dir),) if profiles_dir is not None else ()) + (bundled_dir("profiles"),)


def resolve_hardware(serving: str, gpu: str | None, dirs: Sequence[Path]) -> PoolHardware:
    """The pool hardware of a serving profile, or of its model's calibration on ``gpu``."""
    from fleetopt.io.profiles import find_serving, load_serving, pool_hardware

    if gpu is None:
        return pool_hardware(serving, dirs)
    base = load_serving(serving, dirs)
    try:  # the same model at the same tensor-parallel size, when that calibration exists
        found = find_serving(model=base.model_name, gpu=gpu, tensor_parallel=base.tensor_parallel, dirs=dirs)
    except FleetoptError:
        found = find_serving(model=base.model_name, gpu=gpu, dirs=dirs)
    return pool_hardware(found.source_file, dirs)


def resolve_pool_hardware_pair(
    serving: str, serving_long: str | None, gpu: str | None, gpu_long: str | None, dirs: Sequence[Path]
) -> tuple[PoolHardware, PoolHardware]:
    """(short, long) pool hardware: the long pool follows the short one unless told otherwise."""
    short_hardware = resolve_hardware(serving, gpu, dirs)
    if serving_long is None and gpu_long is None:
        return short_hardware, short_hardware
    return short_hardware, resolve_hardware(serving_long or serving, gpu_long, dirs)


#: The highest arrival rate a plan accepts, req/s (a hundred million: far past any fleet, and
#: every count derived from it stays exact in float64).
MAX_RATE_PER_S = 1e8


def rate_with_origin(workload: Workload, arrival_rate_per_s: float | None) -> tuple[float, str]:
    """The rate to plan at and where it came from: ``given``, ``observed`` (the log), or ``default``."""
    if arrival_rate_per_s is not None:
        rate = float(arrival_rate_per_s)
        if not (0.0 < rate <= MAX_RATE_PER_S):
            raise ValidationError(
                f"--rate: {arrival_rate_per_s:g} req/s is not allowed; it must be > 0 and at most "
                f"{MAX_RATE_PER_S:g} req/s"
            )
        return rate, "given"
    observed = observed_rate_per_s(workload)
    return (observed, "observed") if observed else (DEFAULT_RATE_PER_S, "default")


def observed_rate_per_s(workload: Workload) -> float | None:
    """The log's (or its summary's) mean arrival rate, (n − 1)/span, or None without usable times."""
    from fleetopt.core.workload_stats import observed_rate_per_s as observed

    return observed(workload)


def plan_workload(
    workload: str | Workload,
    *,
    ttft_slo_s: float,
    arrival_rate_per_s: float | None = None,
    serving: str = DEFAULT_SERVING,
    serving_long: str | None = None,
    gpu: str | None = None,
    gpu_long: str | None = None,
    long_context_tokens: int = DEFAULT_LONG_CONTEXT_TOKENS,
    b_short_candidates: Sequence[int] | None = None,
    gammas: Sequence[float] = DEFAULT_GAMMAS,
    compressibility: float = 1.0,
    service_model: str = DEFAULT_SERVICE_MODEL,
    max_utilization: float = DEFAULT_MAX_UTILIZATION,
    tpot_slo_s: float | None = None,
    max_pools: int = DEFAULT_POOL_COUNT,
    profiles_dir: Path | None = None,
    reader_options: dict[str, Any] | None = None,
    workload_label: str | None = None,
    rate_basis: str | None = None,
    rate_window_s: float = DEFAULT_RATE_WINDOW_S,
    schedule_window_s: float | None = None,
) -> PlanRun:
    """Plan the cheapest fleet for a workload (a bundled name, a path, or a loaded Workload).

    ``arrival_rate_per_s`` is the mean rate (default: the log's observed rate, else
    DEFAULT_RATE_PER_S); ``rate_basis`` what each pool is sized for: ``mean``, ``peak`` or ``pNN`` of
    the rates in windows of ``rate_window_s`` (default ``peak`` for a log with timestamps, else
    ``mean``; see :func:`arrival_basis`). ``schedule_window_s``: also the time-of-day schedule
    (:func:`fleetopt.core.schedule.build_schedule`) in windows of that length.
    """
    from fleetopt.core.planner import Planner
    from fleetopt.io.workloads import load_workload
    from fleetopt.render.plan_document import plan_document

    if isinstance(workload, Workload):
        loaded, label = workload, workload_label or workload.name
    else:
        loaded, label = load_workload(workload, **(reader_options or {})), workload_label or workload
    dirs = profile_search_path(profiles_dir)
    short_hardware, long_hardware = resolve_pool_hardware_pair(serving, serving_long, gpu, gpu_long, dirs)
    mean_rate_per_s, origin = rate_with_origin(loaded, arrival_rate_per_s)
    arrivals = arrival_basis(loaded, mean_rate_per_s, rate_basis, rate_window_s)
    if schedule_window_s is not None and arrivals.counts is None:
        raise ValidationError(
            f"--schedule: workload {label!r} has no arrival times spanning a {rate_window_s:g} s window, so "
            "it has no profile to schedule over"
        )
    sizing_rate_per_s = arrivals.sizing_rate_per_s
    if sizing_rate_per_s > MAX_RATE_PER_S:
        raise ValidationError(
            f"--rate-basis {arrivals.basis}: {mean_rate_per_s:g} req/s × {arrivals.factor:.4g} (the basis "
            f"over the mean) = {sizing_rate_per_s:g} req/s is above the most a plan takes "
            f"({MAX_RATE_PER_S:g} req/s)"
        )
    options = PlanOptions(
        arrival_rate_per_s=float(sizing_rate_per_s),
        ttft_slo_s=ttft_slo_s,
        long_context_tokens=long_context_tokens,
        b_short_candidates=tuple(int(b) for b in b_short_candidates) if b_short_candidates else None,
        gammas=tuple(float(g) for g in gammas),
        compressibility=compressibility,
        service_model=service_model,
        max_utilization=max_utilization,
        tpot_slo_s=tpot_slo_s,
        max_pools=int(max_pools),
        rate_basis=arrivals.basis,
        mean_arrival_rate_per_s=None if arrivals.basis == "mean" else float(mean_rate_per_s),
        rate_window_s=arrivals.window_s if arrivals.counts is not None else None,
        arrival_dispersion=arrivals.dispersion,
    )
    planner = Planner(loaded, short_hardware, long_hardware, options)
    plan = planner.plan()
    schedule = None
    if schedule_window_s is not None and plan.best is not None:
        from fleetopt.core.schedule import build_schedule

        schedule = build_schedule(planner, plan.best, arrivals.counts, schedule_window_s)
    document = plan_document(
        plan,
        loaded,
        {"workload": label, "arrival_rate_origin": origin, "workload_reader": reader_options},
        arrivals=arrivals,
        schedule=schedule,
    )
    return PlanRun(plan=plan, workload=loaded, document=document, arrivals=arrivals, schedule=schedule)


def plan_from_options(
    *,
    workload: str,
    slo: str,
    rate_per_s: float | None,
    b_short: str | None,
    gamma: str | None,
    tpot_slo: str | None,
    **options: Any,
) -> dict[str, Any]:
    """``fleetopt plan``'s strings → the plan document (see :func:`plan_workload`)."""
    return plan_run_from_options(
        workload=workload,
        slo=slo,
        rate_per_s=rate_per_s,
        b_short=b_short,
        gamma=gamma,
        tpot_slo=tpot_slo,
        **options,
    ).document


def plan_run_from_options(
    *,
    workload: str,
    slo: str,
    rate_per_s: float | None,
    b_short: str | None,
    gamma: str | None,
    tpot_slo: str | None,
    **options: Any,
) -> PlanRun:
    """Like :func:`plan_from_options`, returning the whole :class:`PlanRun`."""
    from fleetopt.io.units import parse_duration_s, parse_fraction, parse_number_list

    for key, flag in (("compressibility", "--compressibility"), ("max_utilization", "--max-utilization")):
        if isinstance(options.get(key), str):  # the CLI's text: 0.85 or 85%
            options[key] = parse_fraction(options[key], field=flag)
    if options.get("max_utilization") == 0:
        raise ValidationError("--max-utilization: 0 leaves no capacity; it must be in (0, 1] (e.g. 85%)")
    b_values = parse_number_list(b_short, field="--b-short", integer=True) if b_short else None
    gammas = tuple(parse_number_list(gamma, field="--gamma")) if gamma else DEFAULT_GAMMAS
    if isinstance(options.get("rate_window"), str):
        options["rate_window_s"] = parse_duration_s(options.pop("rate_window"), field="--rate-window")
    else:
        options.pop("rate_window", None)
    if isinstance(options.get("schedule"), str):
        options["schedule_window_s"] = parse_duration_s(options.pop("schedule"), field="--schedule")
    else:
        options.pop("schedule", None)
    return plan_workload(
        workload,
        ttft_slo_s=parse_duration_s(slo, field="--slo"),
        arrival_rate_per_s=rate_per_s,
        b_short_candidates=b_values,
        gammas=gammas,
        tpot_slo_s=parse_duration_s(tpot_slo, field="--tpot-slo") if tpot_slo else None,
        **options,
    )


# -- one M/G/c queue (fleetopt queue) ----------------------------------------------------------

#: Waits are in this unit when the queue is given as a load in Erlangs (no seconds).
SERVICE_TIME_UNIT = "mean service time"


def queue_report(
    servers: int,
    load: float | None,
    arrival_rate_per_s: float | None,
    service_time_s: float | None,
    service_scv: float,
    quantile: float,
    exact: bool = False,
) -> dict[str, Any]:
    """Validate the numbers, evaluate the queue and return the command's result dictionary.

    ``exact``: add ``exact`` (Erlang B and C at 50 digits, :func:`fleetopt.core.queueing.exact_erlang`)."""
    from fleetopt.core import queueing
    from fleetopt.errors import ValidationError

    if servers < 1:
        raise ValidationError(
            f"--servers: {servers} is not allowed; the number of servers must be at least 1"
        )
    if load is not None and not (math.isfinite(load) and load >= 0):
        raise ValidationError(
            f"--load: {load:g} is not allowed; the offered load (Erlangs) must be finite and ≥ 0"
        )
    if arrival_rate_per_s is not None and not (math.isfinite(arrival_rate_per_s) and arrival_rate_per_s >= 0):
        raise ValidationError(
            f"--rate: {arrival_rate_per_s:g} is not allowed; the arrival rate (req/s) must be finite and ≥ 0"
        )
    if not (math.isfinite(service_scv) and service_scv >= 0):
        raise ValidationError(
            f"--scv: {service_scv:g} is not allowed; a squared coefficient of variation is ≥ 0"
        )
    if not 0 < quantile < 1:
        raise ValidationError(f"--quantile: {quantile:g} is not allowed; it must be strictly between 0 and 1")

    in_seconds = arrival_rate_per_s is not None
    if in_seconds:
        assert service_time_s is not None
        service_rate_per_s = 1.0 / service_time_s
        lam = arrival_rate_per_s
        offered_load = arrival_rate_per_s * service_time_s
        origin = f" (--rate {arrival_rate_per_s:g} req/s × --service-time {service_time_s:g} s)"
    else:
        assert load is not None
        service_rate_per_s = 1.0  # time measured in mean service times
        lam = offered_load = load
        origin = ""
    if offered_load >= servers:
        raise ValidationError(
            f"the queue is unstable: load {offered_load:g}{origin} ≥ servers {servers} "
            f"(utilization {offered_load / servers:.4g}); waits grow without bound — "
            "add servers or lower the load"
        )

    log_c = queueing.log_erlang_c(servers, offered_load)
    unit = "s" if in_seconds else "service_times"
    data: dict[str, Any] = {
        "servers": servers,
        "offered_load_erlangs": offered_load,
    }
    if in_seconds:
        data["arrival_rate_per_s"] = arrival_rate_per_s
        data["service_time_s"] = service_time_s
    data.update(
        {
            "utilization": offered_load / servers,
            "service_scv": service_scv,
            "quantile": quantile,
            "erlang_c": queueing.erlang_c(servers, offered_load),
            "erlang_c_log10": log_c / math.log(10) if math.isfinite(log_c) else None,
            "erlang_b": queueing.erlang_b(servers, offered_load),
            "time_unit": "s" if in_seconds else SERVICE_TIME_UNIT,
            f"mean_wait_{unit}": queueing.mean_wait(servers, lam, service_rate_per_s, service_scv),
            f"wait_quantile_{unit}": queueing.wait_quantile(
                quantile, servers, lam, service_rate_per_s, service_scv
            ),
            "wait_model": "P(W > t) ≈ C·exp(−2(cμ − λ)t/(1 + Cs²)); exact for M/M/c (Cs² = 1)",
        }
    )
    if exact and offered_load > 0:
        from dataclasses import asdict

        data["exact"] = asdict(queueing.exact_erlang(servers, offered_load))
    return data


# -- KV arithmetic (fleetopt kv) -------------------------------------------------------------


def kv_report(
    *,
    model_name: str | None,
    gpu_name: str | None,
    serving_name: str | None,
    tensor_parallel: int | None,
    contexts_tokens: list[int],
    memory_utilization: float | None,
    activation_reserve_gb: float | None,
    weight_dtype: str | None,
    kv_dtype: str | None,
    kv_head_layout: str | None,
    block_tokens: int | None,
    dirs: Sequence[Path],
) -> dict[str, Any]:
    """Load the profiles, run the KV arithmetic and return the result dictionary of ``fleetopt kv``."""
    from fleetopt.core import kv
    from fleetopt.defaults import (
        DEFAULT_ACTIVATION_RESERVE_GB,
        DEFAULT_KV_BLOCK_TOKENS,
        DEFAULT_MEMORY_UTILIZATION,
    )
    from fleetopt.errors import ValidationError
    from fleetopt.io import profiles

    sources: dict[str, str] = {}

    def pick(field: str, flag: Any, from_serving: Any, default: Any) -> Any:
        if flag is not None:
            sources[field] = "flag"
            return flag
        if from_serving is not None:
            sources[field] = "serving profile"
            return from_serving
        sources[field] = "default"
        return default

    serving = None
    if serving_name is not None:
        serving, model_from_serving, gpu_from_serving = profiles.resolve_serving(serving_name, dirs)
        model = profiles.load_model(model_name, dirs) if model_name else model_from_serving
        gpu = profiles.load_gpu(gpu_name, dirs) if gpu_name else gpu_from_serving
    else:
        if model_name is None or gpu_name is None:
            raise ValidationError("give --model and --gpu, or --serving NAME")
        model = profiles.load_model(model_name, dirs)
        gpu = profiles.load_gpu(gpu_name, dirs)

    tp = pick("tensor_parallel", tensor_parallel, serving and serving.tensor_parallel, 1)
    blocks_tokens = pick(
        "kv_block_tokens", block_tokens, serving and serving.kv_block_tokens, DEFAULT_KV_BLOCK_TOKENS
    )
    layout = pick("kv_head_layout", kv_head_layout, serving and serving.kv_head_layout, "even")
    weight_dt = pick("weight_dtype", weight_dtype, serving and serving.weight_dtype, model.weight_dtype)
    kv_dt = pick("kv_dtype", kv_dtype, serving and serving.kv_dtype, model.kv_dtype)
    if sources["weight_dtype"] == "default":
        sources["weight_dtype"] = "model profile"
    if sources["kv_dtype"] == "default":
        sources["kv_dtype"] = "model profile"
    # A serving profile's block budget is used unless a flag changes the instance (then Eq. 2 applies).
    use_blocks = (
        serving is not None
        and serving.kv_blocks is not None
        and memory_utilization is None
        and activation_reserve_gb is None
        and tensor_parallel is None
        and block_tokens is None
        and model_name is None
        and gpu_name is None
    )
    if use_blocks:
        util = reserve_bytes = None
        kv_blocks = serving.kv_blocks  # type: ignore[union-attr]
    else:
        util = pick(
            "gpu_memory_utilization",
            memory_utilization,
            serving and serving.gpu_memory_utilization,
            DEFAULT_MEMORY_UTILIZATION,
        )
        reserve_serving_gb = (
            None
            if serving is None or serving.activation_reserve_bytes_per_gpu is None
            else serving.activation_reserve_bytes_per_gpu / profiles.GB_BYTES
        )
        reserve_gb = pick(
            "activation_reserve_gb_per_gpu",
            activation_reserve_gb,
            reserve_serving_gb,
            DEFAULT_ACTIVATION_RESERVE_GB,
        )
        reserve_bytes = reserve_gb * profiles.GB_BYTES
        kv_blocks = None

    sizing = profiles.kv_sizing(
        model,
        gpu,
        tensor_parallel=tp,
        kv_block_tokens=blocks_tokens,
        gpu_memory_utilization=util,
        activation_reserve_bytes_per_gpu=reserve_bytes,
        kv_blocks=kv_blocks,
        weight_dtype=weight_dt,
        kv_dtype=kv_dt,
        kv_head_layout=layout,
        context="fleetopt kv",
    )
    capacity = sizing.kv_capacity_tokens_per_instance
    max_num_seqs = serving.max_num_seqs if serving is not None else None
    rows = []
    for ctx in contexts_tokens:
        rows.append(
            {
                "context_tokens": ctx,
                "kv_bytes_per_slot_per_instance": sizing.kv_bytes_per_token_per_instance * ctx,
                "kv_bytes_per_slot_per_gpu": sizing.kv_bytes_per_token_per_gpu * ctx,
                "slots_per_instance_token_exact": kv.token_exact_slots_per_instance(capacity, ctx),
                "slots_per_instance_block_rounded": kv.block_slots_per_instance(capacity, ctx, blocks_tokens),
            }
        )
    shortest = min(rows, key=lambda r: r["context_tokens"])
    longest = max(rows, key=lambda r: r["context_tokens"])
    for row in rows:
        row["ratio_to_longest_context"] = kv.cliff_ratio(
            row["slots_per_instance_block_rounded"], longest["slots_per_instance_block_rounded"]
        )

    notes = []
    longest_ctx = longest["context_tokens"]
    if model.kv_formula == "gqa" and model.kv_heads is not None and model.kv_heads < tp and layout == "even":
        replicated = kv.kv_bytes_per_token_per_instance(
            sizing.kv_bytes_per_token_model, "gqa", tp, model.kv_heads, "replicated"
        )
        replicated_capacity = kv.kv_capacity_tokens_from_memory(
            sizing.kv_memory_bytes_per_gpu, tp, replicated
        )
        notes.append(
            f"{model.kv_heads} KV heads < TP {tp}: this splits the cache evenly over the GPUs (the paper's "
            f"arithmetic); vLLM instead replicates KV heads, {replicated // tp:,} bytes/token per GPU, "
            f"{replicated_capacity // longest_ctx:,} "
            f"token-exact slots at {longest_ctx:,} (--kv-head-layout replicated)"
        )
    if model.kv_formula == "mla" and tp > 1:
        notes.append(f"MLA: the latent cache is held whole on each of the {tp} GPUs (not split by heads)")
    if max_num_seqs is not None:
        notes.append(f"the serving profile also caps an instance at max_num_seqs = {max_num_seqs} sequences")
    notes.append("slots count sequences per instance (a TP group of GPUs), not per GPU")

    return {
        "model": model.name,
        "gpu": gpu.name,
        "serving": serving.name if serving is not None else None,
        "tensor_parallel": tp,
        "gpus_per_instance": tp,
        "kv_formula": model.kv_formula,
        "weight_dtype": sizing.weight_dtype,
        "kv_dtype": sizing.kv_dtype,
        "kv_head_layout": sizing.kv_head_layout,
        "kv_bytes_per_token_model": sizing.kv_bytes_per_token_model,
        "kv_bytes_per_token_per_instance": sizing.kv_bytes_per_token_per_instance,
        "kv_bytes_per_token_per_gpu": sizing.kv_bytes_per_token_per_gpu,
        "gpu_memory_bytes": sizing.gpu_memory_bytes,
        "gpu_memory_utilization": sizing.gpu_memory_utilization,
        "weight_bytes_per_gpu": sizing.weight_bytes_per_gpu,
        "activation_reserve_bytes_per_gpu": sizing.activation_reserve_bytes_per_gpu,
        "kv_capacity_method": sizing.kv_capacity_method,
        "kv_blocks_per_instance": kv_blocks,
        "kv_memory_bytes_per_gpu": sizing.kv_memory_bytes_per_gpu,
        "kv_memory_bytes_per_instance": sizing.kv_memory_bytes_per_gpu * tp,
        "kv_capacity_tokens_per_instance": capacity,
        "kv_block_tokens": blocks_tokens,
        "max_num_seqs": max_num_seqs,
        "contexts": rows,
        "cliff_ratio": kv.cliff_ratio(
            shortest["slots_per_instance_block_rounded"], longest["slots_per_instance_block_rounded"]
        ),
        "value_sources": sources,
        "notes": notes,
    }


# -- drift: does yesterday's plan fit today's workload? -----------------------------------------


@dataclass(frozen=True)
class DriftRun:
    """A plan checked against today's workload (``fleetopt drift``): the typed result and its inputs.

    ``rate_origin``: where today's rate came from — ``given``, ``observed`` (the log) or ``planned``.
    """

    result: Any  # fleetopt.core.drift.DriftResult
    plan: Any  # fleetopt.io.plans.PlanFile
    today: Workload
    options: PlanOptions  # the plan's options at today's rate
    tolerances: Any  # fleetopt.core.drift.Tolerances
    current: Any  # fleetopt.core.drift.WorkloadSummary of today's workload
    rate_origin: str


def check_plan_drift(
    plan_path: Path,
    workload: str,
    *,
    arrival_rate_per_s: float | None = None,
    tolerances: Any = None,
    reader_options: dict[str, Any] | None = None,
) -> DriftRun:
    """Read a plan (the one plan reader), load today's workload, pick today's rate (given, else the
    log's observed rate, else the planned one) and make the one core call,
    :func:`fleetopt.core.drift.check_drift`."""
    import dataclasses

    from fleetopt.core.drift import Tolerances, check_drift
    from fleetopt.io.plans import read_plan, workload_fingerprint, workload_summary
    from fleetopt.io.workloads import load_workload

    tolerances = Tolerances() if tolerances is None else tolerances
    if arrival_rate_per_s is not None and not (0 < arrival_rate_per_s < float("inf")):
        raise ValidationError(f"--rate: {arrival_rate_per_s:g} req/s must be positive and finite")
    plan_file = read_plan(plan_path)
    today = load_workload(workload, **(reader_options or {}))
    planned = plan_file.options
    if arrival_rate_per_s is not None:
        rate, origin = float(arrival_rate_per_s), "given"
    elif (observed := observed_rate_per_s(today)) is not None:
        rate, origin = observed, "observed"
    else:
        rate, origin = planned.mean_rate_per_s, "planned"
    fleet = plan_file.fleet
    current = workload_summary(
        workload_fingerprint(today, fleet.b_short_tokens, fleet.gamma), "today's workload"
    )
    # today on the plan's basis: today's profile when its log has one, else the plan's own factor
    factor, dispersion = planned.basis_factor, planned.arrival_dispersion
    if planned.rate_basis != "mean" and planned.rate_window_s is not None:
        from fleetopt.core.arrivals import workload_window_counts

        if workload_window_counts(today, planned.rate_window_s) is not None:
            basis = arrival_basis(today, rate, planned.rate_basis, planned.rate_window_s)
            factor, dispersion = basis.factor, basis.dispersion
    options = dataclasses.replace(
        planned,
        arrival_rate_per_s=rate * factor,
        mean_arrival_rate_per_s=None if planned.rate_basis == "mean" else rate,
        arrival_dispersion=dispersion,
    )
    result = check_drift(today, fleet, options, plan_file.summary, current, tolerances)
    return DriftRun(result, plan_file, today, options, tolerances, current, origin)


# -- cross-checking a plan by simulation -------------------------------------------------------


@dataclass(frozen=True)
class CrossCheck:
    """A plan's fleet simulated and set beside its predictions (``simulate``, ``plan --validate``).

    ``reevaluated_for_other_workload``: the simulated workload is not the one the plan was computed
    for, so the predictions were re-evaluated for it (same pools, the planner's own formulas).
    ``arrival_process``: ``poisson``, ``replay`` or ``profile``; ``mean_rate_per_s``: for a replay or
    profile, the mean rate the log was scaled to (``rate_factor`` × the log's own).
    """

    report: Any  # fleetopt.core.crosscheck.CrossCheckReport
    workload_name: str
    arrival_process: str  # "poisson", "replay" or "profile"
    reevaluated_for_other_workload: bool = False
    mean_rate_per_s: float | None = None
    rate_factor: float | None = None
    rate_window_s: float | None = None


def _arrival_process(replay: bool, arrivals: str | None) -> str:
    from fleetopt.core.arrivals import ARRIVAL_PROCESSES

    if arrivals is None:
        return "replay" if replay else "poisson"
    if arrivals not in ARRIVAL_PROCESSES:
        raise ValidationError(f"--arrivals: {arrivals!r} is not one of {', '.join(ARRIVAL_PROCESSES)}")
    if replay and arrivals != "replay":
        raise ValidationError(f"--replay and --arrivals {arrivals} contradict each other; give one of them")
    return arrivals


def crosscheck_setup_run(
    setup: Any,
    workload: Workload,
    *,
    service_model: str,
    dispatch: str = DEFAULT_DISPATCH,
    requests: int | None = None,
    seeds: int | None = None,
    warmup_fraction: float = 0.5,
    arrival_rate_per_s: float | None = None,
    replay: bool = False,
    progress: Any = None,
    reevaluated_for_other_workload: bool = False,
    arrivals: str | None = None,
    rate_window_s: float | None = None,
) -> CrossCheck:
    """Simulate a cross-check setup; re-evaluate its predictions first when the traffic or model differ.

    ``arrivals`` (or ``replay`` for ``replay``):

    * ``poisson`` (default) at ``arrival_rate_per_s``, else at the rate the plan was sized for (its
      peak on a peak basis): the analytical check, predictions re-evaluated for Poisson arrivals at
      that rate when they were made for another rate or burstier arrivals;
    * ``replay``: the log's own arrival times at ``arrival_rate_per_s`` as the mean (default: the
      plan's mean), keeping their time scale (:func:`fleetopt.core.arrivals.replay_at_rate`): the
      whole log once after a warm-up, ``requests`` (if given) cutting it to its first arrivals;
    * ``profile``: a non-homogeneous Poisson process following the log's windowed rate profile
      (windows of ``rate_window_s``) at that mean.

    ``rate_window_s`` (default 1 minute, whatever window the plan sized on — so a plan on a coarser
    window is not checked against smoother traffic): the scale whose profile a replay keeps in
    common across its copies (below it their bursts are independent) and a profile follows.

    Replay and profile keep the plan's own predictions (made at its sizing rate): the simulated
    traffic has no one rate to re-evaluate them at.

    ``seeds`` (default :data:`DEFAULT_SEEDS`): a replay or profile covers the log once per seed, so
    a pool with little traffic may measure fewer requests than a P99 interval needs; by default
    it then runs as many seeds as its rarest pool needs for that (expected from the plan's pool
    rates, with 10% margin), at most :data:`MAX_AUTO_SEEDS`.
    """
    from fleetopt.core.arrivals import ArrivalSpec, WindowCounts, workload_window_counts
    from fleetopt.core.crosscheck import (
        WARMUP_MARGIN,
        crosscheck_setup,
        longest_service_s,
        reevaluate,
        simulation_model_for,
    )
    from fleetopt.core.service import SERVICE_MODEL_REGISTRY
    from fleetopt.core.simulate import DISPATCH_POLICIES, PHYSICAL, SERVICE_MODELS

    process = _arrival_process(replay, arrivals)
    if service_model in SERVICE_MODEL_REGISTRY:
        service_model = simulation_model_for(service_model)
    if service_model not in SERVICE_MODELS:
        raise ValidationError(f"--service-model: {service_model!r} is not one of {', '.join(SERVICE_MODELS)}")
    if dispatch not in DISPATCH_POLICIES:
        raise ValidationError(f"--dispatch: {dispatch!r} is not one of {', '.join(DISPATCH_POLICIES)}")
    if seeds is not None and seeds < 1:
        raise ValidationError(f"seeds: {seeds} must be ≥ 1")
    if requests is not None and requests < 2:
        raise ValidationError(f"requests: {requests} must be ≥ 2")
    if arrival_rate_per_s is not None and not (0 < arrival_rate_per_s <= MAX_RATE_PER_S):
        raise ValidationError(
            f"--rate: {arrival_rate_per_s:g} req/s is not allowed; it must be > 0 and at most "
            f"{MAX_RATE_PER_S:g} req/s"
        )
    analytical_model = setup.analytical_model if service_model == PHYSICAL else service_model
    if process == "poisson":
        rate = setup.arrival_rate_per_s if arrival_rate_per_s is None else arrival_rate_per_s
        if (
            rate != setup.arrival_rate_per_s
            or analytical_model != setup.analytical_model
            or not setup.poisson_predictions
        ):
            setup = reevaluate(setup, workload, rate, analytical_model)
        report = crosscheck_setup(
            setup, workload, service_model=service_model, dispatch=dispatch, requests=requests,
            seeds=tuple(range(1, (seeds or DEFAULT_SEEDS) + 1)), warmup_fraction=warmup_fraction,
            arrival_rate_per_s=rate, progress=progress,
        )  # fmt: skip
        return CrossCheck(report, workload.name, process, reevaluated_for_other_workload)
    if analytical_model != setup.analytical_model:
        setup = reevaluate(setup, workload, setup.arrival_rate_per_s, analytical_model)
    mean = setup.mean_rate_per_s if arrival_rate_per_s is None else float(arrival_rate_per_s)
    warmup_s = WARMUP_MARGIN * longest_service_s(workload, setup, service_model)
    window_s = rate_window_s or DEFAULT_RATE_WINDOW_S
    times = workload.arrival_times_s
    if process == "replay":
        if times is None and workload.arrival_windows is not None:
            raise ValidationError(
                f"--replay: {workload.name!r} is a workload summary: it keeps arrivals per window, not each "
                "request's arrival time; replay the raw log, follow its windows with --arrivals profile, "
                "or drop --replay to simulate Poisson arrivals"
            )
        if times is None or times.size < 2:
            raise ValidationError(
                f"--replay: workload {workload.name!r} has no arrival times (a CDF, or a log without a "
                "time column); drop --replay to simulate Poisson arrivals"
            )
        span = float(times[-1] - times[0])
        if not span > 0:
            raise ValidationError(
                f"--replay: the {times.size:,} arrival times of {workload.name!r} span 0 s (all equal), "
                "so they give no rate to replay at; drop --replay"
            )
        factor = mean / ((times.size - 1) / span)
        spec = ArrivalSpec("replay", times_s=times, rate_factor=factor, window_s=window_s, warmup_s=warmup_s,
                           max_requests=requests)  # fmt: skip
    else:
        counts = workload_window_counts(workload, window_s)
        if counts is None or counts.counts.sum() == 0:
            raise ValidationError(
                f"--arrivals profile: workload {workload.name!r} has no arrivals spanning a {window_s:g} s "
                "window to follow; use Poisson arrivals"
            )
        assert isinstance(counts, WindowCounts)
        factor = mean / (float(counts.counts.sum()) / counts.span_s)
        spec = ArrivalSpec("profile", counts=counts, rate_factor=factor, window_s=window_s, warmup_s=warmup_s,
                           max_requests=requests)  # fmt: skip
    from fleetopt.core.simulate import MAX_REQUESTS

    expected = spec.expected_requests()
    if expected > MAX_REQUESTS:
        raise ValidationError(
            f"--arrivals {process}: the log at {mean:,.4g} req/s is about {expected:,.0f} requests per seed, "
            f"more than the simulator holds ({MAX_REQUESTS:,}); give --requests to replay its first part"
        )
    if seeds is None:
        seeds = _seeds_for_rarest_pool(setup, spec)
    report = crosscheck_setup(
        setup, workload, service_model=service_model, dispatch=dispatch,
        seeds=tuple(range(1, seeds + 1)), progress=progress, arrivals=spec,
    )  # fmt: skip
    return CrossCheck(
        report, workload.name, process, reevaluated_for_other_workload, mean_rate_per_s=mean,
        rate_factor=factor, rate_window_s=window_s,
    )  # fmt: skip


#: Seeds a cross-check runs unless told otherwise.
DEFAULT_SEEDS = 3
#: The most seeds a replay or profile runs on its own to measure its rarest pool.
MAX_AUTO_SEEDS = 10


def _seeds_for_rarest_pool(setup: Any, spec: Any) -> int:
    """Seeds for a replay or profile: 3, or as many as the rarest pool with instances needs to measure
    the requests a P99 interval needs (expected from its planned share of the sizing rate, with 10%
    margin), at most MAX_AUTO_SEEDS."""
    from fleetopt.core.crosscheck import min_requests_for_quantile

    measured = spec.expected_measured_requests()
    needed = 1.1 * min_requests_for_quantile(setup.quantile)
    seeds = DEFAULT_SEEDS
    for pool in setup.pools:
        share = pool.arrival_rate_per_s / setup.arrival_rate_per_s if setup.arrival_rate_per_s > 0 else 0.0
        if pool.simulated.instances > 0 and share > 0 and measured > 0:
            seeds = max(seeds, math.ceil(needed / (share * measured)))
    return min(seeds, MAX_AUTO_SEEDS)


def crosscheck_plan_run(
    run: PlanRun,
    *,
    requests: int | None = None,
    seeds: int | None = None,
    progress: Any = None,
    arrivals: str | None = None,
    replay: bool = False,
    dispatch: str = DEFAULT_DISPATCH,
) -> CrossCheck:
    """``fleetopt plan --validate``: a fresh plan's best fleet, simulated under its model and traffic
    (Poisson at its sizing rate, or its log replayed or followed at its mean: ``arrivals``)."""
    from fleetopt.core.crosscheck import setup_from_plan

    setup = setup_from_plan(run.plan)
    return crosscheck_setup_run(
        setup, run.workload, service_model=setup.analytical_model, requests=requests, seeds=seeds,
        progress=progress, arrivals=arrivals, replay=replay, dispatch=dispatch,
    )  # fmt: skip


def crosscheck_plan_file(
    path: Path,
    *,
    workload: str | None = None,
    service_model: str | None = None,
    dispatch: str = DEFAULT_DISPATCH,
    requests: int | None = None,
    seeds: int | None = None,
    warmup_fraction: float = 0.5,
    arrival_rate_per_s: float | None = None,
    replay: bool = False,
    progress: Any = None,
    arrivals: str | None = None,
    rate_window_s: float | None = None,
) -> CrossCheck:
    """``fleetopt simulate --plan``: a plan file's fleet simulated on its own workload (or another).

    The plan is read by the one plan reader (:func:`fleetopt.io.plans.read_plan`); its workload is
    re-read the way the plan read it; on another workload the predictions are re-evaluated first.
    Arrivals as :func:`crosscheck_setup_run` (``rate_window_s``: 1 minute unless given).
    """
    from fleetopt.core.crosscheck import reevaluate, setup_from_planned
    from fleetopt.errors import FleetoptError
    from fleetopt.io.plans import read_plan, workload_fingerprint
    from fleetopt.io.workloads import load_workload

    plan_file = read_plan(path)
    if arrival_rate_per_s is not None and not arrival_rate_per_s > 0:
        raise ValidationError(f"--rate: {arrival_rate_per_s:g} req/s must be > 0")
    if not 0.0 <= warmup_fraction < 1.0:
        raise ValidationError(f"--warmup-fraction: {warmup_fraction:g} must be in [0, 1)")
    process = _arrival_process(replay, arrivals)
    setup = setup_from_planned(plan_file.fleet, plan_file.options)
    name = workload if workload is not None else plan_file.workload
    if name is None:
        raise ValidationError(f"plan {path}: inputs.workload = None is invalid; pass --cdf")
    try:
        loaded = load_workload(name, **(plan_file.workload_reader if workload is None else {}))
    except FleetoptError as exc:
        if workload is not None:
            raise
        raise ValidationError(f"plan {path}: its workload cannot be loaded ({exc}); pass --cdf") from None
    other = workload_fingerprint(loaded, None, None)["sha256"] != plan_file.summary.digest
    if other:
        rate = setup.arrival_rate_per_s
        if process == "poisson" and arrival_rate_per_s is not None:
            rate = arrival_rate_per_s
        setup = reevaluate(setup, loaded, rate, setup.analytical_model)
    return crosscheck_setup_run(
        setup, loaded, service_model=service_model or plan_file.options.service_model,
        dispatch=dispatch, requests=requests, seeds=seeds, warmup_fraction=warmup_fraction,
        arrival_rate_per_s=arrival_rate_per_s, progress=progress, reevaluated_for_other_workload=other,
        arrivals=process, rate_window_s=rate_window_s,
    )  # fmt: skip


# -- audit -----------------------------------------------------------------------------------------
# ``fleetopt audit``'s two paths, each: the CLI's strings → typed values and defaults → one core call.

if TYPE_CHECKING:  # annotations only: the audit's modules load when an audit runs
    from fleetopt.core.audit import WorkloadAudit
    from fleetopt.core.savings import AuditResult

#: The workload audit's default P99 TTFT SLO: the papers' 500 ms (FleetOpt §7.1).
DEFAULT_AUDIT_SLO = "500ms"


def audit_numbers(
    *,
    alpha: str | None = None,
    rho: float | None = None,
    mu_short: float | None = None,
    mu_long: float | None = None,
    mu_homo: float | None = None,
    rate: float | None = None,
    slots_short: int | None = None,
    slots_long: int | None = None,
    iteration_base: str | None = None,
    iteration_per_slot: str | None = None,
    headroom_short: float | None = None,
    headroom_long: float | None = None,
    headroom_homo: float | None = None,
    whole_instances: bool = False,
    beta: str | None = None,
    compressibility: str | None = None,
    gpus_per_instance: int | None = None,
    gpu_hour_usd: float | None = None,
    current_gpus: int | None = None,
    proposed_gpus: int | None = None,
) -> AuditResult:
    """``fleetopt audit``'s numbers (α, β, p_c as ``0.8``/``80%``, durations as ``8ms``) → AuditResult.

    Defaults: p_c = 1, the papers' W = 8 ms and H = 0.65 ms, headroom 1, 1 GPU per instance,
    PAPER_GPU_HOUR_USD per GPU-hour. Raises ValidationError when α + β > 1 (β lies above B).
    """
    from fleetopt.core.savings import (
        PAPER_ITERATION_BASE_S,
        PAPER_ITERATION_PER_SLOT_S,
        AuditInputs,
        audit_savings,
    )
    from fleetopt.defaults import PAPER_GPU_HOUR_USD
    from fleetopt.io.units import parse_duration_s, parse_fraction

    short_fraction = None if alpha is None else parse_fraction(alpha, field="--alpha")
    borderline_fraction = None if beta is None else parse_fraction(beta, field="--beta")
    compressible_fraction = (
        1.0 if compressibility is None else parse_fraction(compressibility, field="--compressibility")
    )
    if short_fraction is not None and borderline_fraction is not None:
        if short_fraction + borderline_fraction > 1.0:
            raise ValidationError(
                f"--alpha {alpha} plus --beta {beta} is {short_fraction + borderline_fraction:g}; "
                "the borderline band (B, γB] lies above B, so α + β = F(γB) must be ≤ 1"
            )
    base_s = PAPER_ITERATION_BASE_S
    if iteration_base is not None:
        base_s = parse_duration_s(iteration_base, field="--iteration-base")
    per_slot_s = PAPER_ITERATION_PER_SLOT_S
    if iteration_per_slot is not None:
        per_slot_s = parse_duration_s(iteration_per_slot, field="--iteration-per-slot")
    return audit_savings(
        AuditInputs(
            short_fraction=short_fraction,
            throughput_ratio=rho,
            arrival_rate_per_s=rate,
            short_throughput_per_s=mu_short,
            long_throughput_per_s=mu_long,
            homogeneous_throughput_per_s=mu_homo,
            short_slots=slots_short,
            long_slots=slots_long,
            iteration_base_s=base_s,
            iteration_per_slot_s=per_slot_s,
            headroom_short=1.0 if headroom_short is None else headroom_short,
            headroom_long=1.0 if headroom_long is None else headroom_long,
            headroom_homogeneous=1.0 if headroom_homo is None else headroom_homo,
            round_up=whole_instances,
            borderline_fraction=borderline_fraction,
            compressible_fraction=compressible_fraction,
            gpus_per_instance=1 if gpus_per_instance is None else gpus_per_instance,
            gpu_hour_usd=PAPER_GPU_HOUR_USD if gpu_hour_usd is None else gpu_hour_usd,
            current_gpus=current_gpus,
            proposed_gpus=proposed_gpus,
        )
    )


@dataclass(frozen=True)
class WorkloadAuditRun:
    """A finished workload audit with where its rate came from (``given``/``observed``/``default``)."""

    audit: WorkloadAudit
    arrival_rate_origin: str
    split_assumed: bool = False


def audit_workload_from_options(
    *,
    cdf: str,
    slo: str | None = None,
    rate: float | None = None,
    serving: str | None = None,
    serving_long: str | None = None,
    gpu: str | None = None,
    gpu_long: str | None = None,
    long_context: int | None = None,
    service_model: str | None = None,
    max_utilization: float | None = None,
    compressibility: str | None = None,
    b_short: str | None = None,
    at_b_short: int | None = None,
    gamma: float | None = None,
    rates: str | None = None,
    current_gpus: int | None = None,
    current_context: int | None = None,
    reader_options: dict[str, Any] | None = None,
    profiles_dir: Path | None = None,
) -> WorkloadAuditRun:
    """``fleetopt audit --cdf``'s strings → load the workload and profiles → ``audit_workload``.

    Defaults: SLO DEFAULT_AUDIT_SLO, the rate of ``fleetopt plan`` (observed, else
    DEFAULT_RATE_PER_S), PAPER_SERVING (the audit is the papers' estimates, on their calibration),
    DEFAULT_LONG_CONTEXT_TOKENS, the lockstep service model,
    DEFAULT_MAX_UTILIZATION, p_c = 1.
    """
    from fleetopt.core.audit import HomogeneousInfeasible, WorkloadAuditOptions, audit_workload
    from fleetopt.defaults import DEFAULT_MAX_UTILIZATION
    from fleetopt.io.units import parse_duration_s, parse_fraction, parse_number_list
    from fleetopt.io.workloads import load_workload

    ttft_slo_s = parse_duration_s(slo or DEFAULT_AUDIT_SLO, field="--slo")
    p_c = 1.0 if compressibility is None else parse_fraction(compressibility, field="--compressibility")
    b_values = tuple(parse_number_list(b_short, field="--b-short", integer=True)) if b_short else None
    rate_values = tuple(parse_number_list(rates, field="--rates")) if rates else None
    workload = load_workload(cdf, **(reader_options or {}))
    dirs = profile_search_path(profiles_dir)
    short_hardware, long_hardware = resolve_pool_hardware_pair(
        serving or PAPER_SERVING, serving_long, gpu, gpu_long, dirs
    )
    rate, origin = rate_with_origin(workload, rate)
    plan_options = PlanOptions(
        arrival_rate_per_s=float(rate),
        ttft_slo_s=ttft_slo_s,
        long_context_tokens=DEFAULT_LONG_CONTEXT_TOKENS if long_context is None else long_context,
        b_short_candidates=b_values,
        compressibility=p_c,
        service_model=service_model or "lockstep",
        max_utilization=DEFAULT_MAX_UTILIZATION if max_utilization is None else max_utilization,
    )
    options = WorkloadAuditOptions(
        plan=plan_options,
        b_short_tokens=at_b_short,
        gamma=gamma,
        current_gpus=None if current_gpus is None else float(current_gpus),
        current_context_tokens=current_context,
        rates_per_s=rate_values,
    )
    try:
        return WorkloadAuditRun(
            audit_workload(workload, short_hardware, long_hardware, options), origin, workload.split_assumed
        )
    except HomogeneousInfeasible as exc:
        from fleetopt.render.words import fleet_reason

        raise ValidationError(
            f"the homogeneous fleet is infeasible ({fleet_reason(exc.fleet) or 'infeasible'}): the audit "
            "needs it as its baseline; relax --slo or --max-utilization"
        ) from None


# -- calibrating a serving profile from measurements (``fleetopt calibrate``) ------------------


@dataclass(frozen=True)
class CalibrationRun:
    """A fitted calibration: the measurements, the fit, its leave-one-out errors (None when too few
    concurrencies remain without a row), and the profile written (``output``) or None."""

    measurements: Any  # fleetopt.io.measurements.Measurements
    fit: Any  # fleetopt.core.calibrate.Fit
    leave_one_out: tuple[Any, Any] | None
    profile_yaml: str
    output: str | None


@dataclass(frozen=True)
class CalibrationCheck:
    """A serving profile's predictions against measurements, row by row (seconds)."""

    measurements: Any
    profile: str
    predicted_tpot_s: Any
    predicted_ttft_s: Any


def calibrate_from_files(
    files: Sequence[str],
    *,
    row_filter: Any = None,
    prefill_chunk_tokens: int = 8192,
    model: str | None = None,
    gpu: str | None = None,
    tensor_parallel: int | None = None,
    max_num_seqs: int | None = None,
    weight_dtype: str | None = None,
    output: Path | None = None,
    profiles_dir: Path | None = None,
) -> CalibrationRun:
    """Fit (W, H, τ, T0) to measured results (:mod:`fleetopt.core.calibrate`) and build the serving
    profile; with ``output`` write it (after checking that it loads)."""
    import datetime
    import tempfile

    from fleetopt.core.calibrate import fit_iteration_model, leave_one_out_errors
    from fleetopt.io.measurements import measured_profile_yaml, read_measurements
    from fleetopt.io.plans import write_document_atomically
    from fleetopt.io.profiles import load_gpu, load_model, load_serving

    if prefill_chunk_tokens < 1:
        raise ValidationError(f"--chunk: {prefill_chunk_tokens} must be ≥ 1 token")
    measurements = read_measurements(files, row_filter)
    fit = fit_iteration_model(measurements.benchmark, prefill_chunk_tokens)
    leave_one_out = leave_one_out_errors(measurements.benchmark, prefill_chunk_tokens)
    dirs = profile_search_path(profiles_dir)
    if output is not None:
        from fleetopt.io.plans import refuse_overwriting_input

        refuse_overwriting_input(Path(output), [str(f) for f in files])
        needed = (("--model-profile", model), ("--gpu-profile", gpu), ("--tp", tensor_parallel))
        missing = [flag for flag, value in needed if value is None]
        if missing:
            raise ValidationError(f"--output: a serving profile needs {', '.join(missing)}")
        load_model(model, dirs)
        load_gpu(gpu, dirs)
    description = f"{', '.join(sorted(set(measurements.formats)))}; {measurements.row_filter.describe()}"
    text = measured_profile_yaml(
        title="A serving profile measured with fleetopt calibrate.",
        model=model or "MODEL", gpu=gpu or "GPU", tensor_parallel=tensor_parallel or 1, fit=fit,
        leave_one_out=leave_one_out, measurements=measurements, description=description,
        date=datetime.date.today().isoformat(), max_num_seqs=max_num_seqs, weight_dtype=weight_dtype,
    )  # fmt: skip
    if output is not None:
        with tempfile.TemporaryDirectory() as folder:
            candidate = Path(folder) / Path(output).name
            candidate.write_text(text, encoding="utf-8")
            load_serving(candidate, dirs)  # the profile must load as written
        write_document_atomically(Path(output), text)
    return CalibrationRun(measurements, fit, leave_one_out, text, None if output is None else str(output))


def check_calibration(
    files: Sequence[str], *, profile: str, row_filter: Any = None, profiles_dir: Path | None = None
) -> CalibrationCheck:
    """A serving profile's predicted TTFT and TPOT for every measured row (its W, H, τ, κ, T0 and
    chunk; the benchmark's prefill overlap from its ``fit`` block when it has one, else 0)."""
    import numpy as np

    from fleetopt.core.calibrate import predict
    from fleetopt.io.measurements import read_measurements
    from fleetopt.io.profiles import load_serving

    serving = load_serving(profile, profile_search_path(profiles_dir))
    measurements = read_measurements(files, row_filter)
    overlap_us = (serving.fit or {}).get("benchmark_prefill_overlap_us", 0.0)
    theta = np.array(
        [
            serving.iteration_base_s, serving.iteration_per_slot_s, serving.prefill_per_token_s,
            serving.iteration_per_kv_token_s, serving.ttft_overhead_s, float(overlap_us) / 1e6,
        ]
    )  # fmt: skip
    tpot, ttft = predict(theta, measurements.benchmark, serving.prefill_chunk_tokens)
    return CalibrationCheck(measurements, serving.name, tpot, ttft)


# -- workload summaries (fleetopt workload summarize / merge / sql) ------------------------------


def summarize_logs(
    logs: Sequence[str], *, window_s: float = 1.0, reader_options: dict[str, Any] | None = None
) -> Any:
    """The summary of one or more logs (paths, globs, URLs, bundled names or summaries), merged:
    each is aggregated where it is read (DuckDB), then the counts add up.
    Returns a :class:`fleetopt.core.summary.LogSummary`."""
    from fleetopt.core.summary import merge_summaries
    from fleetopt.core.workload import window_microseconds
    from fleetopt.io.workloads import summarize_source

    if not logs:
        raise ValidationError("workload summarize: give at least one log")
    window_us = window_microseconds(window_s, field="--window")
    options = {k: v for k, v in (reader_options or {}).items() if k != "split"}
    parts = [summarize_source(log, window_us, **options) for log in logs]
    return parts[0] if len(parts) == 1 else merge_summaries(parts, list(logs))


def merge_summary_files(paths: Sequence[str]) -> Any:
    """Read summaries (files, globs or URLs) and add them into one (:func:`merge_summaries`)."""
    from fleetopt.core.summary import merge_summaries
    from fleetopt.io.workloads import read_summary_source

    if len(paths) < 1:
        raise ValidationError("workload merge: give the summaries to merge")
    return merge_summaries([read_summary_source(p) for p in paths], list(paths))


def workload_summary_sql(
    *,
    dialect: str,
    log_format: str | None,
    table: str,
    window_s: float = 1.0,
    input_column: str | None = None,
    output_column: str | None = None,
    time_column: str | None = None,
    time_unit: str | None = None,
    time_type: str | None = None,
    no_time: bool = False,
    where: str | None = None,
) -> str:
    """``fleetopt workload sql``: the summary query of a warehouse table, in ``dialect``."""
    from fleetopt.core.workload import window_microseconds
    from fleetopt.io.log_formats import log_format as preset_named
    from fleetopt.io.log_formats import time_unit_seconds
    from fleetopt.io.warehouse import warehouse_sql

    return warehouse_sql(
        dialect.strip().lower(), preset=preset_named(log_format), table=table,
        window_us=window_microseconds(window_s, field="--window"), input_column=input_column,
        output_column=output_column,
        time_column=time_column, time_unit_s=time_unit_seconds(time_unit), time_type=time_type,
        no_time=no_time, where=where,
    )  # fmt: skip


# -- export: a plan as vLLM commands, a router file, Kubernetes and KEDA manifests, markdown -----

#: ``fleetopt export --to`` targets, in the order their files are written and printed.
EXPORT_TARGETS = ("vllm", "router", "kubernetes", "markdown")
_RESOURCE_NAME = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


@dataclass(frozen=True)
class ExportRun:
    """A plan exported (``fleetopt export``): file name → text, in target order, and what the
    operator should know (e.g. a ScaledObject floor without a schedule)."""

    files: dict[str, str]
    notes: list[str]

    def text(self) -> str:
        """Every file, one after the other (what ``fleetopt export`` prints without --output-dir)."""
        return "\n".join(self.files.values())


def _check_resource_name(value: str, option: str, longest: int) -> None:
    if not _RESOURCE_NAME.match(value) or len(value) > longest:
        raise ValidationError(
            f"{option}: {value!r} is not a Kubernetes name: lowercase letters, digits and '-', starting "
            f"with a letter, at most {longest} characters"
        )


def export_context(
    plan_file: Any, *, profiles_dir: Path | None = None, model_id: str | None = None,
    name_prefix: str = "fleetopt", plan_label: str | None = None,
) -> Any:  # fmt: skip
    """Everything the export targets need from a plan (:class:`~fleetopt.io.plans.PlanFile`): its pools
    with the vLLM settings of their serving profiles (looked up by name on the profile path)."""
    from fleetopt.io.deploy import engine_settings
    from fleetopt.render.deploy import DeployPool, ExportContext

    dirs = profile_search_path(profiles_dir)
    pools_doc = plan_file.document["best"]["pools"]
    settings: dict[str, Any] = {}
    pools = []
    for pool in plan_file.fleet.pools:
        hardware = pool.hardware
        if hardware.serving_name not in settings:
            settings[hardware.serving_name] = engine_settings(
                hardware, dirs, model_id=model_id, source=plan_file.source
            )
        document = pools_doc[pool.name]

        def number(key: str, document: dict[str, Any] = document) -> float | None:
            value = document.get(key)
            return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None

        pools.append(
            DeployPool(
                name=pool.name,
                resource=f"{name_prefix}-{pool.name}",
                instances=pool.instances,
                gpus_per_instance=hardware.gpus_per_instance,
                context_tokens=pool.context_tokens,
                slots_per_instance=pool.slots_per_instance,
                engine=settings[hardware.serving_name],
                serving_profile=hardware.serving_name,
                gpu=hardware.gpu_name,
                arrival_rate_per_s=number("arrival_rate_per_s"),
                mean_service_s=number("mean_service_s"),
                p99_ttft_s=number("p99_ttft_s"),
                p99_wait_s=number("p99_wait_s"),
            )
        )
    return ExportContext(
        plan_label=plan_label or plan_file.source.removeprefix("plan "),
        ttft_slo_s=plan_file.options.ttft_slo_s,
        routing=plan_file.fleet.routing,
        pools=tuple(pools),
        workload_sha256=plan_file.summary.digest,
        schedule=plan_file.schedule,
    )


def export_plan(
    plan_file: Any,
    targets: Sequence[str],
    *,
    options: Any = None,
    keda: bool = False,
    profiles_dir: Path | None = None,
    model_id: str | None = None,
    plan_label: str | None = None,
) -> ExportRun:
    """The files of each export target for a plan read by :func:`fleetopt.io.plans.read_plan` (or
    built by ``fleetopt plan``): ``vllm-<pool>.sh``, ``router.yaml``, ``kubernetes.yaml`` (and
    ``keda.yaml`` with ``keda``), ``plan.md``. ``options``: a
    :class:`fleetopt.render.deploy.ExportOptions`."""
    from fleetopt.render import deploy

    options = options or deploy.ExportOptions()
    unknown = [t for t in targets if t not in EXPORT_TARGETS]
    if unknown or not targets:
        raise ValidationError(
            f"--to: {', '.join(unknown) or 'nothing'} is not a target; use {', '.join(EXPORT_TARGETS)}"
        )
    if keda and "kubernetes" not in targets:
        raise ValidationError("--keda: ScaledObjects scale the Kubernetes Deployments; add --to kubernetes")
    if not (0 <= options.burst_headroom <= 10):
        raise ValidationError(f"--burst-headroom: {options.burst_headroom:.0%} must be between 0% and 1000%")
    _check_resource_name(options.name_prefix, "--name-prefix", 63 - len("-pool-8"))
    if options.namespace is not None:
        _check_resource_name(options.namespace, "--namespace", 63)
    label = plan_label or plan_file.source.removeprefix("plan ")
    files: dict[str, str] = {}
    notes: list[str] = []
    context = None
    if any(t != "markdown" for t in targets):
        context = export_context(
            plan_file, profiles_dir=profiles_dir, model_id=model_id, name_prefix=options.name_prefix,
            plan_label=label,
        )  # fmt: skip
    for target in EXPORT_TARGETS:
        if target not in targets:
            continue
        if target == "vllm":
            for pool in context.pools:
                files[f"vllm-{pool.name}.sh"] = deploy.vllm_script(context, pool, options)
        elif target == "router":
            files["router.yaml"] = deploy.router_yaml(context, options)
        elif target == "kubernetes":
            header = [
                f"fleetopt {__version__} export --to kubernetes: {label}",
                "One Deployment (replicas = the planned instances, GPUs = tensor parallelism) and one",
                "Service per pool; validated against the Kubernetes apps/v1 and v1 schemas (docs/deploy.md).",
            ] + [
                f"note: {pool.name}: {note}"
                for pool in context.pools
                for note in deploy.pool_notes(context, pool)
            ]
            files["kubernetes.yaml"] = deploy.manifests_yaml(
                deploy.kubernetes_manifests(context, options), header
            )
            amd = sorted({p.gpu for p in context.pools if deploy.gpu_resource(p.gpu) == "amd.com/gpu"})
            if amd and options.image == deploy.DEFAULT_VLLM_IMAGE:
                notes.append(
                    f"{', '.join(amd)}: {deploy.DEFAULT_VLLM_IMAGE} is vLLM's CUDA image; give a ROCm "
                    "build of vLLM with --image"
                )
            if keda:
                try:
                    scaled, keda_notes = deploy.keda_manifests(context, options)
                except ValueError as exc:
                    raise ValidationError(f"{plan_file.source}: schedule: {exc}") from None
                header = [
                    f"fleetopt export --to kubernetes --keda: {label}",
                    "KEDA ScaledObjects (keda.sh/v1alpha1): cron floors from the plan's schedule, a",
                    "vllm:num_requests_waiting trigger for bursts (docs/deploy.md#autoscaling-with-keda).",
                ] + [f"note: {note}" for note in keda_notes]
                files["keda.yaml"] = deploy.manifests_yaml(scaled, header)
                notes += keda_notes
        else:
            try:
                files["plan.md"] = deploy.plan_markdown(plan_file.document, label)
            except (KeyError, TypeError, AttributeError) as exc:
                # the summary echoes parts of the document that read_plan does not need to check
                raise ValidationError(
                    f"plan {label}: the markdown summary needs a field the plan lacks or mangles "
                    f"({type(exc).__name__}: {exc}); re-plan with fleetopt plan --output"
                ) from None
    return ExportRun(files=files, notes=notes)
