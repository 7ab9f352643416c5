"""``fleetopt simulate`` / ``plan --validate``'s API: a plan's fleet simulated beside its predictions."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fleetopt.api import (
    DEFAULT_RATE_WINDOW_S,
    MAX_RATE_PER_S,
    PlanRun,
)
from fleetopt.core.workload import Workload
from fleetopt.defaults import DEFAULT_DISPATCH
from fleetopt.errors import FleetoptError, ValidationError

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

    def document(self, plan_path: str | None = None) -> dict[str, Any]:
        """The report as plain data (what ``--format json|yaml`` prints; the table is drawn from it),
        led by ``plan`` = ``plan_path`` when given."""
        from fleetopt.io.documents.build_crosscheck import crosscheck_run_document

        return crosscheck_run_document(
            self.report, workload_name=self.workload_name, arrival_process=self.arrival_process,
            reevaluated_for_other_workload=self.reevaluated_for_other_workload,
            mean_rate_per_s=self.mean_rate_per_s, rate_factor=self.rate_factor,
            rate_window_s=self.rate_window_s, plan_path=plan_path,
        )  # fmt: skip


def with_model_attention(setup: Any, dirs: Any = None) -> Any:
    """A cross-check setup whose pools charge prompt chunks their attention over the cached context:
    from each pool's hardware, or, for hardware written without its model's attention geometry (plans
    before it), the model looked up by name among the profiles (``dirs``: the bundled ones by
    default; a model not found keeps prompt tokens at τ, whatever the context)."""
    from fleetopt.core.crosscheck import with_attention

    missing = [p.hardware for p in setup.pools if p.hardware.attention_flops_per_token_pair is None]
    return with_attention(setup, model_attention_flops(missing, dirs)) if missing else setup


def model_attention_flops(hardware: Any, dirs: Any = None) -> dict[str, float | None]:
    """Each pool model's attention FLOPs per token pair, by model name (``hardware``: the pools'
    :class:`~fleetopt.core.service.PoolHardware`), looked up among the profiles (``dirs``: the
    bundled ones by default); None for a model not found."""
    from fleetopt.api import profile_search_path
    from fleetopt.io.profiles import load_model

    flops: dict[str, float | None] = {}
    for pool in hardware:
        name = pool.model_name
        if name not in flops:
            try:
                flops[name] = load_model(
                    name, dirs or profile_search_path(None)
                ).attention_flops_per_token_pair()
            except FleetoptError:
                flops[name] = None
    return flops


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
    mean_rate_per_s: float | None = None,
    replay: bool = False,
    progress: Any = None,
    reevaluated_for_other_workload: bool = False,
    arrivals: str | None = None,
    rate_window_s: float | None = None,
    scheduler: str | None = None,
) -> CrossCheck:
    """Simulate a cross-check setup; re-evaluate its predictions first when the traffic or model differ.

    ``arrivals`` (or ``replay`` for ``replay``):

    * ``poisson`` (default) at ``mean_rate_per_s``, else at the rate the plan was sized for (its
      peak on a peak basis): the analytical check, predictions re-evaluated for Poisson arrivals at
      that rate when they were made for another rate or burstier arrivals;
    * ``replay``: the log's own arrival times at ``mean_rate_per_s`` as the mean (default: the
      plan's mean), keeping their time scale (:func:`fleetopt.core.arrivals.replay_at_rate`): the
      whole log once after a warm-up, ``requests`` (if given) cutting it to its first arrivals;
    * ``profile``: a non-homogeneous Poisson process following the log's windowed rate profile
      (windows of ``rate_window_s``) at that mean.

    ``rate_window_s`` (default 1 minute, whatever window the plan sized on — so a plan on a coarser
    window is not checked against smoother traffic): the scale whose profile a replay keeps in
    common across its copies (below it their bursts are independent) and a profile follows.

    Replay and profile swing around their mean, so each figure is compared with a prediction at a
    like rate: utilization and mean TPOT (time averages) with the pools re-evaluated at the simulated
    mean (Poisson), the P99 TTFT and wait (set by the busiest stretches) with the plan's own
    predictions at the rate it was sized for; the report says which rate each is for.

    ``seeds`` (default :data:`DEFAULT_SEEDS`): a replay or profile covers the log once per seed, so
    a pool with little traffic may measure fewer requests than a P99 interval needs; by default
    it then runs as many seeds as its rarest pool needs for that (expected from the plan's pool
    rates, with 10% margin), at most :data:`MAX_AUTO_SEEDS`.
    """
    import numpy as np

    from fleetopt.core.arrivals import ArrivalSpec, WindowCounts, workload_window_counts
    from fleetopt.core.crosscheck import (
        WARMUP_MARGIN,
        crosscheck_setup,
        longest_service_s,
        reevaluate,
        reevaluate_over_profile,
        simulation_model_for,
    )
    from fleetopt.core.service import SERVICE_MODEL_REGISTRY
    from fleetopt.core.simulate import (
        DEFAULT_SCHEDULER,
        DISPATCH_POLICIES,
        PHYSICAL,
        REQUEST_LEVEL_DISPATCH,
        SCHEDULERS,
        SERVICE_MODELS,
    )

    process = _arrival_process(replay, arrivals)
    if service_model in SERVICE_MODEL_REGISTRY:
        service_model = simulation_model_for(service_model)
    if service_model not in SERVICE_MODELS:
        raise ValidationError(f"--service-model: {service_model!r} is not one of {', '.join(SERVICE_MODELS)}")
    if dispatch not in DISPATCH_POLICIES:
        raise ValidationError(f"--dispatch: {dispatch!r} is not one of {', '.join(DISPATCH_POLICIES)}")
    if service_model != PHYSICAL and dispatch not in REQUEST_LEVEL_DISPATCH:
        raise ValidationError(
            f"--dispatch: {dispatch} reads an engine's KV cache or waiting queue, which the {service_model} "
            f"model does not simulate; use --service-model {PHYSICAL} or one of "
            f"{', '.join(REQUEST_LEVEL_DISPATCH)}"
        )
    if scheduler is not None and scheduler not in SCHEDULERS:
        raise ValidationError(f"--scheduler: {scheduler!r} is not one of {', '.join(SCHEDULERS)}")
    if scheduler is not None and service_model != PHYSICAL:
        raise ValidationError(f"--scheduler: only the {PHYSICAL} service model schedules iterations")
    scheduler = scheduler or DEFAULT_SCHEDULER
    if seeds is not None and seeds < 1:
        raise ValidationError(f"seeds: {seeds} must be ≥ 1")
    if requests is not None and requests < 2:
        raise ValidationError(f"requests: {requests} must be ≥ 2")
    if mean_rate_per_s is not None and not (0 < mean_rate_per_s <= MAX_RATE_PER_S):
        raise ValidationError(
            f"--rate: {mean_rate_per_s:g} req/s is not allowed; it must be > 0 and at most "
            f"{MAX_RATE_PER_S:g} req/s"
        )
    if service_model == PHYSICAL:
        setup = with_model_attention(setup)
    analytical_model = setup.analytical_model if service_model == PHYSICAL else service_model
    if process == "poisson":
        rate = setup.arrival_rate_per_s if mean_rate_per_s is None else mean_rate_per_s
        if (
            rate != setup.arrival_rate_per_s
            or analytical_model != setup.analytical_model
            or not setup.poisson_predictions
        ):
            setup = reevaluate(setup, workload, rate, analytical_model)
        report = crosscheck_setup(
            setup, workload, service_model=service_model, dispatch=dispatch, requests=requests,
            seeds=tuple(range(1, (seeds or DEFAULT_SEEDS) + 1)), warmup_fraction=warmup_fraction,
            arrival_rate_per_s=rate, progress=progress, scheduler=scheduler,
        )  # fmt: skip
        return CrossCheck(report, workload.name, process, reevaluated_for_other_workload)
    if analytical_model != setup.analytical_model:
        setup = reevaluate(setup, workload, setup.arrival_rate_per_s, analytical_model)
    mean = setup.mean_rate_per_s if mean_rate_per_s is None else float(mean_rate_per_s)
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
    # the time averages' like prediction: over the simulated rate profile, window by window
    profile = workload_window_counts(workload, window_s) if spec.kind == "replay" else spec.counts
    if profile is None or not profile.counts.sum() > 0:
        mean_setup = reevaluate(setup, workload, mean, analytical_model)
    else:
        expected = factor * np.asarray(profile.counts, dtype=np.float64)
        if requests is not None:  # only the windows the first ``requests`` arrivals cover
            expected = expected[: int(np.searchsorted(np.cumsum(expected), requests)) + 1]
        mean_setup = reevaluate_over_profile(setup, workload, expected / profile.window_s, analytical_model)
    report = crosscheck_setup(
        setup, workload, service_model=service_model, dispatch=dispatch,
        seeds=tuple(range(1, seeds + 1)), progress=progress, arrivals=spec, mean_setup=mean_setup,
        scheduler=scheduler,
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
    dispatch: str | None = None,
) -> CrossCheck:
    """``fleetopt plan --validate``: a fresh plan's best fleet, simulated under its model and traffic
    (Poisson at its sizing rate, or its log replayed or followed at its mean: ``arrivals``) and the
    dispatch policy the plan states unless ``dispatch`` is given."""
    from fleetopt.core.crosscheck import setup_from_plan

    setup = setup_from_plan(run.plan)
    dispatch = dispatch or run.document.get("dispatch") or DEFAULT_DISPATCH
    return crosscheck_setup_run(
        setup, run.workload, service_model=setup.analytical_model, requests=requests, seeds=seeds,
        progress=progress, arrivals=arrivals, replay=replay, dispatch=dispatch,
    )  # fmt: skip


def crosscheck_plan_file(
    path: Path,
    *,
    workload: str | None = None,
    service_model: str | None = None,
    dispatch: str | None = None,
    requests: int | None = None,
    seeds: int | None = None,
    warmup_fraction: float = 0.5,
    mean_rate_per_s: float | None = None,
    replay: bool = False,
    progress: Any = None,
    arrivals: str | None = None,
    rate_window_s: float | None = None,
    scheduler: str | None = None,
) -> CrossCheck:
    """``fleetopt simulate --plan``: a plan file's fleet simulated on its own workload (or another).

    The plan is read by the one plan reader (:func:`fleetopt.io.plans.read_plan`); its workload is
    re-read the way the plan read it; on another workload the predictions are re-evaluated first.
    Arrivals as :func:`crosscheck_setup_run` (``rate_window_s``: 1 minute unless given);
    ``dispatch``: the plan's stated policy unless given (``least-loaded`` for plans before it).
    """
    from fleetopt.core.crosscheck import reevaluate, setup_from_planned
    from fleetopt.io.plans import read_plan, workload_fingerprint
    from fleetopt.io.workloads import load_workload

    plan_file = read_plan(path)
    if mean_rate_per_s is not None and not mean_rate_per_s > 0:
        raise ValidationError(f"--rate: {mean_rate_per_s:g} req/s must be > 0")
    if not 0.0 <= warmup_fraction < 1.0:
        raise ValidationError(f"--warmup-fraction: {warmup_fraction:g} must be in [0, 1)")
    process = _arrival_process(replay, arrivals)
    if dispatch is None:
        stated = plan_file.plan_document.dispatch if plan_file.plan_document is not None else None
        dispatch = stated or DEFAULT_DISPATCH
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
    other = workload_fingerprint(loaded, None, None).sha256 != plan_file.summary.digest
    if plan_file.document.get("prefix_caching"):  # each request charged what the plan charged it
        from fleetopt.api.prefix import replayed_caching

        loaded = replayed_caching(loaded, name, plan_file.document, plan_file.fleet)
    if other:
        rate = setup.arrival_rate_per_s
        if process == "poisson" and mean_rate_per_s is not None:
            rate = mean_rate_per_s
        setup = reevaluate(setup, loaded, rate, setup.analytical_model)
    return crosscheck_setup_run(
        setup, loaded, service_model=service_model or plan_file.options.service_model,
        dispatch=dispatch, requests=requests, seeds=seeds, warmup_fraction=warmup_fraction,
        mean_rate_per_s=mean_rate_per_s, progress=progress, reevaluated_for_other_workload=other,
        arrivals=process, rate_window_s=rate_window_s, scheduler=scheduler,
    )  # fmt: skip
