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
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fleetopt.core.planner import FleetPlan, PlanOptions
from fleetopt.core.service import PoolHardware
from fleetopt.core.workload import Workload
from fleetopt.defaults import (
    DEFAULT_COMPRESSIBILITY,
    DEFAULT_GAMMAS,
    DEFAULT_LONG_CONTEXT_TOKENS,
    DEFAULT_MAX_CUT_FRACTION,
    DEFAULT_MAX_UTILIZATION,
    DEFAULT_POOL_COUNT,
    DEFAULT_RATE_PER_S,
    DEFAULT_SERVICE_MODEL,
    DEFAULT_SERVING,
)
from fleetopt.errors import FleetoptError, ValidationError
from fleetopt.io.data import profile_search_path


@dataclass(frozen=True)
class PlanRun:
    """A finished plan with what it was computed from (``document``: the plan document as written,
    plain data of :class:`fleetopt.io.documents.plan.PlanDocument`; ``arrivals``: the rate basis it
    was sized on; ``schedule``: the time-of-day schedule when one was asked for)."""

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

    ``basis``: ``mean``, ``peak`` or ``pNN``; ``factor``: sizing rate / mean rate (≥ 1), read from
    the profile with its Poisson counting noise taken out (``sizing_counts``,
    :func:`fleetopt.core.arrivals.denoised_counts`); ``observed_factor``: the same basis of the
    profile as observed, noise included. ``counts`` and ``profile``: the
    log's window counts and rate profile (None for a CDF or a log without timestamps);
    ``dispersion``: the within-window index of dispersion curve used for each pool's C_a² (empty on
    the mean basis: Poisson); ``overdispersed``: the window counts fail Fisher's index-of-dispersion
    test for Poisson at the 1% level (the log is bursty at the window scale, which a mean-rate plan
    ignores).
    """

    basis: str
    window_s: float
    mean_rate_per_s: float
    factor: float
    counts: Any  # fleetopt.core.arrivals.WindowCounts | None
    profile: Any  # fleetopt.core.arrivals.RateProfile | None
    dispersion: tuple[tuple[float, float], ...]
    overdispersed: bool
    observed_factor: float = 1.0
    sizing_counts: Any = None  # fleetopt.core.arrivals.WindowCounts | None: the denoised profile

    @property
    def sizing_rate_per_s(self) -> float:
        return self.mean_rate_per_s * self.factor

    @property
    def counting_noise_factor(self) -> float:
        """How much of the observed basis over the mean was Poisson counting noise, left out:
        observed factor − factor (0 on the mean basis)."""
        return max(0.0, self.observed_factor - self.factor)


def arrival_basis(
    workload: Workload, mean_rate_per_s: float, rate_basis: str | None, rate_window_s: float
) -> ArrivalBasis:
    """The basis a plan sizes on: ``rate_basis`` (default: ``peak`` for a log whose timestamps span
    at least one window, else ``mean``), its factor over the mean from the windowed profile, and
    the dispersion curve behind each pool's C_a² (only off the mean basis)."""
    from fleetopt.core.arrivals import (
        basis_factor,
        denoised_counts,
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
    sizing_counts = denoised_counts(counts) if counts is not None else None
    factor = basis_factor(sizing_counts, basis) if basis != "mean" else 1.0
    observed = basis_factor(counts, basis) if basis != "mean" else 1.0
    return ArrivalBasis(
        basis,
        float(rate_window_s),
        float(mean_rate_per_s),
        factor,
        counts,
        profile,
        dispersion,
        overdispersed,
        observed_factor=observed,
        sizing_counts=sizing_counts,
    )


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


def resolve_pool_hardware(
    serving: str, serving_long: str | None, gpu: str | None, gpu_long: str | None, dirs: Sequence[Path]
) -> tuple[PoolHardware, ...]:
    """The planner's per-pool hardware (:class:`fleetopt.core.planner.Planner`): one profile for
    every pool, or (short, long) when the long pool is told otherwise."""
    short_hardware = resolve_hardware(serving, gpu, dirs)
    if serving_long is None and gpu_long is None:
        return (short_hardware,)
    return short_hardware, resolve_hardware(serving_long or serving, gpu_long, dirs)


#: The highest arrival rate a plan accepts, req/s (a hundred million: far past any fleet, and
#: every count derived from it stays exact in float64).
MAX_RATE_PER_S = 1e8


def rate_with_origin(workload: Workload, mean_rate_per_s: float | None) -> tuple[float, str]:
    """The rate to plan at and where it came from: ``given``, ``observed`` (the log), or ``default``."""
    if mean_rate_per_s is not None:
        rate = float(mean_rate_per_s)
        if not (0.0 < rate <= MAX_RATE_PER_S):
            raise ValidationError(
                f"--rate: {mean_rate_per_s:g} req/s is not allowed; it must be > 0 and at most "
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
    mean_rate_per_s: float | None = None,
    serving: str = DEFAULT_SERVING,
    serving_long: str | None = None,
    gpu: str | None = None,
    gpu_long: str | None = None,
    long_context_tokens: int = DEFAULT_LONG_CONTEXT_TOKENS,
    b_short_candidates: Sequence[int] | None = None,
    gammas: Sequence[float] = DEFAULT_GAMMAS,
    compressibility: float = DEFAULT_COMPRESSIBILITY,
    max_cut_fraction: float = DEFAULT_MAX_CUT_FRACTION,
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
    spare_instances: int = 0,
    ttft_headroom_fraction: float = 0.0,
    refine: int | None = None,
    dispatch: str | None = None,
    hardware: str | Sequence[str] | None = None,
    prices_usd_per_gpu_hour: dict[str, float] | None = None,
    max_gpus: dict[str, int] | None = None,
) -> PlanRun:
    """Plan the cheapest fleet for a workload (a bundled name, a path, or a loaded Workload).

    ``spare_instances``: each pool gets that many instances more than meeting the SLO takes, so it
    still meets it with them lost (``--spare``). ``ttft_headroom_fraction``: size the pools to the
    SLO less that fraction of it (``--ttft-headroom``).

    ``mean_rate_per_s`` is the mean rate (default: the log's observed rate, else
    DEFAULT_RATE_PER_S); ``rate_basis`` what each pool is sized for: ``mean``, ``peak`` or ``pNN`` of
    the rates in windows of ``rate_window_s`` (default ``peak`` for a log with timestamps, else
    ``mean``; see :func:`arrival_basis`). ``schedule_window_s``: also the time-of-day schedule
    (:func:`fleetopt.core.schedule.build_schedule`) in windows of that length. ``refine`` = K: the K
    cheapest fleets re-sized by simulation under ``dispatch`` (the policy the plan states; default
    :data:`~fleetopt.defaults.DEFAULT_DISPATCH`), the cheapest passing one the answer
    (:mod:`fleetopt.core.refine`). ``hardware``: ``auto`` or serving profiles every pool chooses
    among (:mod:`fleetopt.api.hardware`), with ``prices_usd_per_gpu_hour`` and ``max_gpus`` by GPU
    type.
    """
    from fleetopt.core.planner import Planner
    from fleetopt.io.documents.build_plan import plan_document
    from fleetopt.io.documents.typed import to_document
    from fleetopt.io.workloads import load_workload

    if isinstance(workload, Workload):
        loaded, label = workload, workload_label or workload.name
    else:
        loaded, label = load_workload(workload, **(reader_options or {})), workload_label or workload
    dirs = profile_search_path(profiles_dir)
    if hardware is not None:
        from fleetopt.api.hardware import hardware_catalog

        if serving_long is not None or gpu is not None or gpu_long is not None:
            raise ValidationError(
                "--hardware chooses every pool's profile: drop --serving-long, --gpu, --gpu-long"
            )
        catalog = hardware_catalog(hardware, serving, dirs, prices_usd_per_gpu_hour)
        pool_profiles = catalog[:1]
    else:
        if max_gpus:
            raise ValidationError("--max-gpus needs --hardware (an inventory limits the hardware search)")
        from fleetopt.core.hardware_search import priced

        catalog = None
        pool_profiles = resolve_pool_hardware(serving, serving_long, gpu, gpu_long, dirs)
        if prices_usd_per_gpu_hour:
            from fleetopt.api.hardware import check_prices

            check_prices(prices_usd_per_gpu_hour, pool_profiles)
            pool_profiles = tuple(priced(h, prices_usd_per_gpu_hour) for h in pool_profiles)
    mean_rate_per_s, origin = rate_with_origin(loaded, mean_rate_per_s)
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
        sizing_rate_per_s=float(sizing_rate_per_s),
        ttft_slo_s=ttft_slo_s,
        long_context_tokens=long_context_tokens,
        b_short_candidates=tuple(int(b) for b in b_short_candidates) if b_short_candidates else None,
        gammas=tuple(float(g) for g in gammas),
        compressibility=compressibility,
        max_cut_fraction=max_cut_fraction,
        service_model=service_model,
        max_utilization=max_utilization,
        tpot_slo_s=tpot_slo_s,
        max_pools=int(max_pools),
        rate_basis=arrivals.basis,
        mean_rate_per_s=None if arrivals.basis == "mean" else float(mean_rate_per_s),
        rate_window_s=arrivals.window_s if arrivals.counts is not None else None,
        arrival_dispersion=arrivals.dispersion,
        spare_instances=spare_instances,
        ttft_headroom_fraction=ttft_headroom_fraction,
    )
    dispatch = _plan_dispatch(dispatch, refine)
    if refine is not None and catalog is not None:
        raise ValidationError(
            "--refine with --hardware: a hardware search is not refined by simulation yet; plan with "
            "--hardware, then re-plan on the profiles it chose (--serving, --serving-long) with --refine"
        )
    from fleetopt.core.hardware_search import (
        HardwareSearchPlanner,
        fleet_planner,
        fleet_token_costs,
        search_hardware,
    )

    search = None
    if catalog is not None:
        if max_gpus:
            from fleetopt.api.hardware import check_inventory

            check_inventory(max_gpus, catalog)
        planner = HardwareSearchPlanner(loaded, catalog, options)
        plan, search = search_hardware(planner, prices_usd_per_gpu_hour, max_gpus)
    else:
        planner = Planner(loaded, pool_profiles, options)
        plan = planner.plan()
    refinement = None
    if refine is not None and plan.best is not None:
        plan, refinement = _refined(planner, plan, refine, dispatch)
    interval, fits = None, None
    if catalog is None and plan.best is not None and gpu is None and gpu_long is None:
        from fleetopt.io.profiles import load_serving  # measured profiles' fit records

        names = (serving,) if len(pool_profiles) == 1 else (serving, serving_long or serving)
        fits = tuple(load_serving(name, dirs).fit or {} for name in names)
        if any(key.endswith("_p10_p90") for fit in fits for key in fit):
            from fleetopt.api.calibrate import calibration_interval

            interval = calibration_interval(loaded, options, plan.best.routing, fits, pool_profiles)
    schedule = None
    if schedule_window_s is not None and plan.best is not None:
        from fleetopt.core.schedule import build_schedule

        schedule = build_schedule(
            fleet_planner(planner, plan.best), plan.best, arrivals.sizing_counts, schedule_window_s
        )
    document = to_document(
        plan_document(
            plan,
            loaded,
            {"workload": label, "arrival_rate_origin": origin, "workload_reader": reader_options},
            arrivals=arrivals,
            schedule=schedule,
            calibration_interval=interval,
            profile_fits=fits,
            dispatch=dispatch,
            refinement=refinement,
            token_costs=lambda fleet: fleet_token_costs(planner, fleet),
            search=search,
        )
    )
    return PlanRun(plan=plan, workload=loaded, document=document, arrivals=arrivals, schedule=schedule)


def _plan_dispatch(dispatch: str | None, refine: int | None) -> str:
    """The dispatch policy a plan states (checked), and ``refine`` checked: K ≥ 1."""
    from fleetopt.core.simulate import DISPATCH_POLICIES
    from fleetopt.defaults import DEFAULT_DISPATCH

    if refine is not None and (isinstance(refine, bool) or not 1 <= refine <= MAX_REFINE_CANDIDATES):
        raise ValidationError(
            f"--refine: {refine!r} must be a whole number of fleets from 1 to {MAX_REFINE_CANDIDATES}"
        )
    dispatch = DEFAULT_DISPATCH if dispatch is None else dispatch
    if dispatch not in DISPATCH_POLICIES:
        raise ValidationError(f"--dispatch: {dispatch!r} is not one of {', '.join(DISPATCH_POLICIES)}")
    return dispatch


#: The most fleets ``--refine`` re-sizes by simulation.
MAX_REFINE_CANDIDATES = 50


def _refined(planner: Any, plan: FleetPlan, count: int, dispatch: str) -> tuple[Any, Any]:
    """The plan with its best fleet re-sized by simulation (:func:`fleetopt.core.refine.refine_plan`),
    and the refinement; raises when no refined fleet meets the SLO."""
    from dataclasses import replace

    from fleetopt.core.refine import RefineSettings, refine_plan

    refinement = refine_plan(planner, plan, RefineSettings(candidates=count, dispatch=dispatch))
    if refinement.best is None:
        worst = [
            (fleet, pool)
            for fleet in refinement.fleets
            for pool in fleet.pools
            if pool.outcome == "unreachable"
        ]
        fleet, pool = min(worst, key=lambda item: item[1].p99_ttft_s)
        bound = f"{pool.best_instances} instances" if pool.best_instances else "its bound"
        bounds = list(fleet.analytic.routing.boundaries_tokens) or "none"
        raise FleetoptError(
            f"--refine {count}: no fleet of the {len(refinement.fleets)} cheapest meets the "
            f"{plan.options.ttft_slo_s * 1e3:g} ms SLO in simulation ({dispatch} dispatch); the closest, "
            f"pool {pool.name!r} of the fleet at boundaries {bounds}, "
            f"reached a P99 TTFT of {pool.p99_ttft_s * 1e3:.1f} ms{_upper(pool)} with {bound} (up to "
            f"{refinement.settings.max_instance_factor:g}× its analytic {pool.analytic_instances} + "
            f"{refinement.settings.max_extra_instances} were tried); try more candidates, a looser --slo or "
            "another --dispatch"
        )
    return replace(plan, best=replace(refinement.best.fleet, label="best")), refinement


def _upper(pool: Any) -> str:
    """The upper end of a pool's P99 interval, where it is what failed the SLO."""
    high = pool.p99_ttft_high_s
    return (
        f" (95% interval up to {high * 1e3:.1f} ms)" if math.isfinite(high) and high > pool.p99_ttft_s else ""
    )


def plan_from_options(
    *,
    workload: str,
    slo: str,
    mean_rate_per_s: float | None,
    b_short: str | None,
    gamma: str | None,
    tpot_slo: str | None,
    **options: Any,
) -> dict[str, Any]:
    """``fleetopt plan``'s strings → the plan document (see :func:`plan_workload`)."""
    return plan_run_from_options(
        workload=workload,
        slo=slo,
        mean_rate_per_s=mean_rate_per_s,
        b_short=b_short,
        gamma=gamma,
        tpot_slo=tpot_slo,
        **options,
    ).document


def plan_run_from_options(
    *,
    workload: str,
    slo: str,
    mean_rate_per_s: float | None,
    b_short: str | None,
    gamma: str | None,
    tpot_slo: str | None,
    **options: Any,
) -> PlanRun:
    """Like :func:`plan_from_options`, returning the whole :class:`PlanRun`."""
    from fleetopt.io.units import parse_duration_s, parse_fraction, parse_number_list

    fractions = ("compressibility", "--compressibility"), ("max_utilization", "--max-utilization")
    for key, flag in (*fractions, ("max_cut_fraction", "--max-cut")):
        if isinstance(options.get(key), str):  # the CLI's text: 0.85 or 85%
            options[key] = parse_fraction(options[key], field=flag)
    if options.get("max_cut_fraction") == 0:
        raise ValidationError(
            "--max-cut: 0 cuts nothing; it must be in (0, 1] (no compression: --compressibility 0)"
        )
    if options.get("max_utilization") == 0:
        raise ValidationError("--max-utilization: 0 leaves no capacity; it must be in (0, 1] (e.g. 85%)")
    if isinstance(options.get("ttft_headroom"), str):
        options["ttft_headroom_fraction"] = parse_fraction(
            options.pop("ttft_headroom"), field="--ttft-headroom"
        )
        if options["ttft_headroom_fraction"] >= 1:
            raise ValidationError(
                "--ttft-headroom: 100% leaves no time for a first token; it must be below 100%"
            )
    else:
        options.pop("ttft_headroom", None)
    b_values = parse_number_list(b_short, field="--b-short", integer=True) if b_short else None
    gammas = tuple(parse_number_list(gamma, field="--gamma")) if gamma else DEFAULT_GAMMAS
    if isinstance(options.get("rate_window"), str):
        options["rate_window_s"] = parse_duration_s(options.pop("rate_window"), field="--rate-window")
    else:
        options.pop("rate_window", None)
    for key, flag, integer, target in (
        ("price", "--price", False, "prices_usd_per_gpu_hour"),
        ("max_gpus_per_type", "--max-gpus", True, "max_gpus"),
    ):
        texts = options.pop(key, None)
        if texts:  # the CLI's TYPE=VALUE texts
            from fleetopt.api.hardware import parse_type_values

            options[target] = parse_type_values(texts, flag, integer=integer)
    if isinstance(options.get("schedule"), str):
        options["schedule_window_s"] = parse_duration_s(options.pop("schedule"), field="--schedule")
    else:
        options.pop("schedule", None)
    caching = options.pop("prefix_caching", None)
    prefix_options = {k: options.pop(k) for k in ("prefix_dispatch", "block_size_tokens") if k in options}
    arguments = dict(
        ttft_slo_s=parse_duration_s(slo, field="--slo"),
        mean_rate_per_s=mean_rate_per_s,
        b_short_candidates=b_values,
        gammas=gammas,
        tpot_slo_s=parse_duration_s(tpot_slo, field="--tpot-slo") if tpot_slo else None,
        **options,
    )
    if caching is None or str(caching).strip().lower() == "off":  # today's plan, by the same call
        return plan_workload(workload, **arguments)
    from fleetopt.api.prefix import parse_prefix_caching, plan_with_prefix_caching

    return plan_with_prefix_caching(workload, parse_prefix_caching(caching), **prefix_options, **arguments)


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
    cached_column: str | None = None,
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
        no_time=no_time, where=where, cached_column=cached_column,
    )  # fmt: skip


# -- the other commands' API, in submodules loaded on first use ------------------------------------
# ``from fleetopt.api import check_plan_drift`` works as before; a plan does not pay for importing
# (and building the dataclasses of) drift, simulation, audit, calibration and export.

_LAZY: dict[str, str] = {
    "DriftRun": "drift",
    "check_plan_drift": "drift",
    "CrossCheck": "crosscheck",
    "crosscheck_setup_run": "crosscheck",
    "DEFAULT_SEEDS": "crosscheck",
    "MAX_AUTO_SEEDS": "crosscheck",
    "crosscheck_plan_run": "crosscheck",
    "crosscheck_plan_file": "crosscheck",
    "DEFAULT_AUDIT_SLO": "audit",
    "audit_numbers": "audit",
    "WorkloadAuditRun": "audit",
    "audit_workload_from_options": "audit",
    "CalibrationRun": "calibrate",
    "CalibrationCheck": "calibrate",
    "calibrate_from_files": "calibrate",
    "check_calibration": "calibrate",
    "ObserveRun": "observe",
    "observe_prometheus": "observe",
    "observe_scrape": "observe",
    "LiveDriftRun": "observe",
    "check_plan_drift_live": "observe",
    "ProductionCalibration": "observe",
    "calibrate_from_prometheus": "observe",
    "GatewayEffect": "gateway",
    "simulate_gateway_effect": "gateway",
}


def __getattr__(name: str) -> Any:
    """PEP 562: a name of a command's API, imported from its submodule on first use."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
