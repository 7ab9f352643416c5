"""``fleetopt simulate --plan``: cross-check a plan's predictions against a simulation of its fleet.

Parse → :func:`fleetopt.api.crosscheck_plan_file` → render."""

from __future__ import annotations

from pathlib import Path

import typer

from fleetopt.cli.common import FORMAT_OPTION, progress_bar
from fleetopt.defaults import DEFAULT_DISPATCH
from fleetopt.render.output import OutputFormat


def register(app: typer.Typer) -> None:
    """Add ``simulate`` to ``app``."""
    app.command("simulate")(simulate)


def simulate(
    plan: Path = typer.Option(..., "--plan", help="A plan file written by fleetopt plan --output."),
    cdf: str | None = typer.Option(
        None, "--cdf", help="Simulate this workload instead of the plan's (bundled name or path)."
    ),
    requests: int | None = typer.Option(
        None,
        "--requests",
        help="Poisson: requests per seed, warm-up included (default: enough for the warm-up to outlast "
        "the longest service, at least 100,000; a pool measured on fewer than 60,000 per seed is then "
        "simulated again on its own stream). Replay/profile: replay only the log's first N arrivals "
        "(default: all of it, once).",
    ),
    seeds: int | None = typer.Option(
        None,
        "--seeds",
        help="Independent replications (seeds 1…K); CIs over them. Default: 3; a replay or profile runs "
        "more (at most 10) when its rarest pool needs them to measure the 368 requests a P99 interval needs.",
    ),
    service_model: str | None = typer.Option(
        None, "--service-model", help="lockstep, fleet-sim or physical (default: the plan's)."
    ),
    dispatch: str = typer.Option(
        DEFAULT_DISPATCH,
        "--dispatch",
        help="least-loaded (the default: each request to the instance with the fewest outstanding), "
        "round-robin, pooled (one queue per pool, the M/G/c assumption), and with the physical engine "
        "least-kv (lowest KV-cache usage), least-waiting (fewest waiting requests), least-tokens (fewest "
        "prompt tokens outstanding) or random.",
    ),
    scheduler: str | None = typer.Option(
        None,
        "--scheduler",
        help="The physical engine's scheduler: vllm (the default: vLLM V1's shared token budget, KV "
        "blocks and preemption) or slots (the engine before it: a KV slot per request, each prompt its "
        "own chunk).",
    ),
    replay: bool = typer.Option(
        False,
        "--replay",
        help="Replay the log's own arrival times at the plan's mean rate, on their own time scale "
        "(--arrivals replay).",
    ),
    arrivals: str | None = typer.Option(
        None,
        "--arrivals",
        help="poisson (at the rate the plan was sized for), replay (the log's arrival times at the plan's "
        "mean, keeping their minute-scale profile and bursts) or profile (Poisson following the log's "
        "windowed rate profile). Default: poisson.",
    ),
    rate: float | None = typer.Option(
        None,
        "--rate",
        help="Poisson: the arrival rate (default: the rate the plan was sized for). Replay/profile: the "
        "mean the log is scaled to (default: the plan's mean), req/s.",
    ),
    rate_window: str | None = typer.Option(
        None,
        "--rate-window",
        help="Replay/profile: the scale whose rate profile is kept (a replay's copies share it, their "
        "bursts below it are independent) or followed. Default: 1min, whatever the plan sized on.",
    ),
    warmup_fraction: float = typer.Option(
        0.5,
        "--warmup-fraction",
        help="Poisson: share of each seed's first arrivals discarded, in [0, 1) (a replay or profile warms "
        "up on the end of the log instead).",
    ),
    strict: bool = typer.Option(
        False,
        "--strict",
        help="Exit 1 on FAIL (a pool breaks the SLO) and on INCONCLUSIVE (too few requests, or a P99 "
        "interval straddling the SLO); the report is printed first.",
    ),
    gateway: bool = typer.Option(
        False,
        "--gateway",
        help="Also route through a gateway that estimates prompt tokens from bytes (pool-routing Algorithm "
        "1, spillover on): misrouted, rejected and spilled requests and each pool's P99 against exact "
        "routing (docs/gateway.md).",
    ),
    fmt: OutputFormat = FORMAT_OPTION,
) -> None:
    """Simulate a plan's fleet and compare utilization, TTFT, wait and TPOT with its predictions."""
    if gateway:
        from fleetopt.api import simulate_gateway_effect
        from fleetopt.render.gateway import gateway_effect_document, gateway_effect_text
        from fleetopt.render.output import emit

        effect = simulate_gateway_effect(plan, requests=requests or 50_000, seeds=seeds or 2)
        emit(gateway_effect_document(effect, str(plan)), fmt, lambda console, data: console.print(
            gateway_effect_text(data), highlight=False, markup=False, soft_wrap=True
        ))  # fmt: skip
        return
    from fleetopt.api import crosscheck_plan_file
    from fleetopt.io.units import parse_duration_s
    from fleetopt.render.output import emit
    from fleetopt.render.simulate import draw_crosscheck, strict_failure

    window_s = None if rate_window is None else parse_duration_s(rate_window, field="--rate-window")
    with progress_bar(fmt) as progress:
        check = crosscheck_plan_file(
            plan, workload=cdf, service_model=service_model, dispatch=dispatch, requests=requests,
            seeds=seeds, warmup_fraction=warmup_fraction, mean_rate_per_s=rate, replay=replay,
            progress=progress, arrivals=arrivals, rate_window_s=window_s, scheduler=scheduler,
        )  # fmt: skip
    data = check.document(str(plan))
    emit(data, fmt, draw_crosscheck)
    if strict and (error := strict_failure(data)) is not None:
        raise error
