"""``fleetopt queue``: Erlang B/C, utilization and waits of one M/G/c queue (FleetOpt Eq. 5–6).

Either ``--load`` (offered load a = λ/μ in Erlangs; waits come out in units of the mean
service time) or ``--rate`` with ``--service-time`` (waits in seconds). Giving both, or
neither, is a usage error (exit 2). See docs/queueing.md.
"""

from __future__ import annotations

import typer

from fleetopt.cli.common import FORMAT_OPTION
from fleetopt.render.output import OutputFormat


def register(app: typer.Typer) -> None:
    """Add ``queue`` to ``app``."""
    app.command("queue")(queue)


def queue(
    ctx: typer.Context,
    servers: int = typer.Option(..., "--servers", "-c", help="Servers c (KV slots of the whole pool)."),
    load: float | None = typer.Option(
        None,
        "--load",
        "-a",
        help="Offered load a = λ/μ in Erlangs (waits in units of the mean service time).",
    ),
    rate: float | None = typer.Option(None, "--rate", help="Arrival rate λ, req/s (needs --service-time)."),
    service_time: str | None = typer.Option(
        None, "--service-time", help="Mean service time 1/μ per request, e.g. 1s or 850ms (with --rate)."
    ),
    scv: float = typer.Option(
        1.0, "--scv", help="Squared coefficient of variation of the service time, ≥ 0."
    ),
    quantile: float = typer.Option(0.99, "--quantile", "-q", help="Wait quantile to report, in (0, 1)."),
    exact: bool = typer.Option(
        False, "--exact", help="Also compute Erlang B and C with mpmath at 50 digits and show the difference."
    ),
    fmt: OutputFormat = FORMAT_OPTION,
) -> None:
    """Erlang C (probability of waiting), Erlang B, utilization, mean and quantile wait of an M/G/c queue."""
    from fleetopt.api import queue_report
    from fleetopt.render.output import emit
    from fleetopt.render.queue import draw_queue

    if load is not None and (rate is not None or service_time is not None):
        raise typer.BadParameter(
            "cannot be combined with --rate/--service-time; "
            "give the load in Erlangs, or the rate and the service time",
            ctx=ctx,
            param_hint="'--load'",
        )
    if load is None and rate is None:
        raise typer.BadParameter(
            "missing; give --load (Erlangs), or --rate (req/s) with --service-time",
            ctx=ctx,
            param_hint="'--load'",
        )
    if rate is not None and service_time is None:
        raise typer.BadParameter(
            "needs --service-time (e.g. --service-time 1s)", ctx=ctx, param_hint="'--rate'"
        )
    service_time_s = None
    if service_time is not None:
        from fleetopt.errors import ValidationError
        from fleetopt.io.units import parse_duration_s

        try:
            service_time_s = parse_duration_s(service_time, field="--service-time")
        except ValidationError as exc:
            message = str(exc).removeprefix("--service-time: ")
            if "is not a duration" not in message:
                raise  # a duration, but a bad one (≤ 0): exit 1 like every bad number
            raise typer.BadParameter(message, ctx=ctx, param_hint="'--service-time'") from None
    emit(queue_report(servers, load, rate, service_time_s, scv, quantile, exact), fmt, draw_queue)
