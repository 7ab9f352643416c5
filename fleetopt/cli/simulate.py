"""``fleetopt simulate --plan``: check a plan's analytical predictions against a simulation of its fleet."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from fleetopt.cli.common import FORMAT_OPTION
from fleetopt.render.output import OutputFormat

if TYPE_CHECKING:
    from fleetopt.api import PlanRun
    from fleetopt.core.validation import ValidationSetup
    from fleetopt.core.workload import Workload

SIM_SERVICE_MODELS = ("lockstep", "fleet-sim", "physical")
DISPATCH_POLICIES = ("pooled", "round-robin", "least-loaded")


def register(app: typer.Typer) -> None:
    """Add ``simulate`` to ``app``."""
    app.command("simulate")(simulate)


@contextmanager
def _progress(fmt: OutputFormat) -> Iterator[Callable[[int, int], None] | None]:
    """A transient rich progress bar for people at a terminal; nothing otherwise."""
    if fmt is not OutputFormat.table or not sys.stdout.isatty():
        yield None
        return
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(
        TextColumn("simulating"), BarColumn(), TextColumn("{task.percentage:>5.1f}%"), TimeRemainingColumn(),
        transient=True,
    ) as bar:  # fmt: skip
        task = bar.add_task("simulate", total=None)

        def advance(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield advance


def _choice(value: str, allowed: tuple[str, ...], option: str) -> str:
    from fleetopt.errors import ValidationError

    if value not in allowed:
        raise ValidationError(f"{option}: {value!r} is not one of {', '.join(allowed)}")
    return value


def run_validation(
    setup: ValidationSetup,
    workload: Workload,
    *,
    service_model: str,
    dispatch: str,
    requests: int | None,
    seeds: int,
    warmup_fraction: float,
    arrival_rate_per_s: float | None,
    replay: bool,
    fmt: OutputFormat,
) -> dict[str, Any]:
    """Simulate a setup (re-evaluating its predictions if the traffic or model differ) → report dict."""
    from fleetopt.core.validation import reevaluate, report_document, validate_setup
    from fleetopt.errors import ValidationError

    if seeds < 1:
        raise ValidationError(f"seeds: {seeds} must be ≥ 1")
    if requests is not None and requests < 2:
        raise ValidationError(f"requests: {requests} must be ≥ 2")
    times = None
    rate = arrival_rate_per_s
    if replay:
        times = workload.arrival_times_s
        if times is None or times.size < 2:
            raise ValidationError(
                f"--replay: workload {workload.name!r} has no arrival times (a CDF, or a log without a "
                "time column); drop --replay to simulate Poisson arrivals"
            )
        if rate is None:
            rate = (times.size - 1) / float(times[-1] - times[0])
    elif rate is None:
        rate = setup.arrival_rate_per_s
    analytical_model = service_model if service_model != "physical" else setup.analytical_model
    if rate != setup.arrival_rate_per_s or analytical_model != setup.analytical_model:
        setup = reevaluate(setup, workload, rate, analytical_model)
    with _progress(fmt) as progress:
        report = validate_setup(
            setup,
            workload,
            service_model=service_model,
            dispatch=dispatch,
            requests=requests,
            seeds=tuple(range(1, seeds + 1)),
            warmup_fraction=warmup_fraction,
            arrival_rate_per_s=rate if not replay or arrival_rate_per_s is not None else None,
            arrival_times_s=times,
            progress=progress,
        )
    document = report_document(report)
    document["arrival_process"] = "replay" if replay else "poisson"
    document["workload"] = workload.name
    return document


def validation_of_plan_run(run: PlanRun, *, requests: int | None, seeds: int, fmt: OutputFormat) -> dict:
    """``fleetopt plan --validate``: the fresh plan's best fleet, simulated under its model and traffic."""
    from fleetopt.core.validation import setup_from_plan

    setup = setup_from_plan(run.plan)
    return run_validation(
        setup,
        run.workload,
        service_model=setup.analytical_model,
        dispatch="pooled",
        requests=requests,
        seeds=seeds,
        warmup_fraction=0.5,
        arrival_rate_per_s=None,
        replay=False,
        fmt=fmt,
    )


def simulate(
    plan: Path = typer.Option(..., "--plan", help="A plan file written by fleetopt plan --output."),
    cdf: str | None = typer.Option(
        None, "--cdf", help="Simulate this workload instead of the plan's (bundled name or path)."
    ),
    requests: int | None = typer.Option(
        None,
        "--requests",
        help="Requests per seed, warm-up included. Default: enough for the warm-up to outlast the "
        "longest service (at least 100,000).",
    ),
    seeds: int = typer.Option(3, "--seeds", help="Independent replications (seeds 1…K); CIs over them."),
    service_model: str | None = typer.Option(
        None, "--service-model", help="lockstep, fleet-sim or physical (default: the plan's)."
    ),
    dispatch: str = typer.Option("pooled", "--dispatch", help="pooled, round-robin or least-loaded."),
    replay: bool = typer.Option(
        False, "--replay", help="Replay the log's own arrival times (scaled to --rate if given)."
    ),
    rate: float | None = typer.Option(None, "--rate", help="Arrival rate, req/s (default: the plan's)."),
    warmup_fraction: float = typer.Option(
        0.5, "--warmup-fraction", help="Share of each seed's first arrivals discarded, in [0, 1)."
    ),
    strict: bool = typer.Option(
        False, "--strict", help="Exit 1 when a simulated P99 TTFT exceeds the SLO (the report is printed)."
    ),
    fmt: OutputFormat = FORMAT_OPTION,
) -> None:
    """Simulate a plan's fleet and compare utilization, TTFT, wait and TPOT with its predictions."""
    from fleetopt.core.validation import setup_from_planned
    from fleetopt.errors import FleetoptError, ValidationError
    from fleetopt.io.plans import read_plan, workload_fingerprint
    from fleetopt.io.workloads import load_workload
    from fleetopt.render.output import emit
    from fleetopt.render.simulate import draw_validation

    plan_file = read_plan(plan)
    model = _choice(service_model or plan_file.options.service_model, SIM_SERVICE_MODELS, "--service-model")
    _choice(dispatch, DISPATCH_POLICIES, "--dispatch")
    if rate is not None and not rate > 0:
        raise ValidationError(f"--rate: {rate:g} req/s must be > 0")
    if not 0.0 <= warmup_fraction < 1.0:
        raise ValidationError(f"--warmup-fraction: {warmup_fraction:g} must be in [0, 1)")
    setup = setup_from_planned(plan_file.fleet, plan_file.options)
    name = cdf if cdf is not None else plan_file.workload
    if name is None:
        raise ValidationError(f"plan {plan}: inputs.workload = None is invalid; pass --cdf")
    reader = plan_file.workload_reader if cdf is None else {}  # read the plan's workload as the plan did
    try:
        workload = load_workload(name, **reader)
    except FleetoptError as exc:
        if cdf is not None:
            raise
        raise ValidationError(f"plan {plan}: its workload cannot be loaded ({exc}); pass --cdf") from None
    notes = []
    planned_digest = plan_file.summary.digest
    if workload_fingerprint(workload, None, None)["sha256"] != planned_digest:
        from fleetopt.core.validation import reevaluate

        setup = reevaluate(setup, workload, rate or setup.arrival_rate_per_s, setup.analytical_model)
        notes.append(
            f"the workload {name!r} differs from the one the plan was computed for: the predictions "
            "were re-evaluated for it"
        )
    data = run_validation(
        setup,
        workload,
        service_model=model,
        dispatch=dispatch,
        requests=requests,
        seeds=seeds,
        warmup_fraction=warmup_fraction,
        arrival_rate_per_s=rate,
        replay=replay,
        fmt=fmt,
    )
    data = {"plan": str(plan), **data, "notes": notes + data["notes"]}
    emit(data, fmt, draw_validation)
    if strict and not data["slo_met"]:
        breached = ", ".join(name for name, pool in data["pools"].items() if not pool["slo_met"])
        raise FleetoptError(f"--strict: the simulated P99 TTFT exceeds the SLO in the {breached} pool(s)")
