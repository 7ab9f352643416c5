"""``fleetopt queue``: Erlang B/C, utilization and waits of one M/G/c queue (FleetOpt Eq. 5–6).

Either ``--load`` (offered load a = λ/μ in Erlangs; waits come out in units of the mean
service time) or ``--rate`` with ``--service-time`` (waits in seconds). Giving both, or
neither, is a usage error (exit 2). See docs/queueing.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import typer

from fleetopt.cli.common import FORMAT_OPTION
from fleetopt.render.output import OutputFormat

SERVICE_TIME_UNIT = "mean service time"


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
    from fleetopt.render.output import emit

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
    emit(queue_report(servers, load, rate, service_time_s, scv, quantile, exact), fmt, _draw)


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


def _probability(value: float, log10_value: float | None) -> str:
    from fleetopt.render.output import fmt_num

    if value == 0.0 and log10_value is not None:  # underflows double precision; show it from its log
        exponent = math.floor(log10_value)
        return f"{10 ** (log10_value - exponent):.4g}e{exponent}"
    return fmt_num(value, 6)


def _leading_digits(decimal: str, digits: int) -> str:
    """A decimal string cut to about ``digits`` significant digits, its exponent kept."""
    mantissa, _, exponent = decimal.partition("e")
    significant = 0
    cut = len(mantissa)
    for position, character in enumerate(mantissa):
        if character.isdigit() and (significant or character != "0"):
            significant += 1
            if significant == digits:
                cut = position + 1
                break
    return mantissa[:cut] + ("…" if cut < len(mantissa) else "") + (f"e{exponent}" if exponent else "")


def _draw(console, data: Mapping[str, Any]) -> None:
    from rich.table import Table
    from rich.text import Text

    from fleetopt.render.output import fmt_num, fmt_seconds

    in_seconds = data["time_unit"] == "s"
    unit = "s" if in_seconds else "service_times"

    def wait(value: float) -> str:
        return fmt_seconds(value) if in_seconds else f"{fmt_num(value, 6)} × mean service time"

    table = Table(title=f"M/G/{data['servers']} queue", title_justify="left", show_header=False)
    table.add_column(no_wrap=True)
    table.add_column(justify="right")
    rows = [("servers c", fmt_num(data["servers"]))]
    if in_seconds:
        rows += [
            ("arrival rate λ", f"{fmt_num(data['arrival_rate_per_s'])} req/s"),
            ("mean service time 1/μ", fmt_seconds(data["service_time_s"])),
        ]
    rows += [
        ("offered load a = λ/μ", f"{fmt_num(data['offered_load_erlangs'], 6)} Erlangs"),
        ("utilization ρ = a/c", f"{data['utilization']:.2%}"),
        ("service-time SCV", fmt_num(data["service_scv"])),
        ("P(wait), Erlang C", _probability(data["erlang_c"], data["erlang_c_log10"])),
        ("Erlang B (loss system)", fmt_num(data["erlang_b"], 6)),
        ("mean wait", wait(data[f"mean_wait_{unit}"])),
        (f"P{data['quantile'] * 100:g} wait", wait(data[f"wait_quantile_{unit}"])),
    ]
    exact = data.get("exact")
    if exact is not None:
        rows += [
            (f"P(wait), mpmath {exact['digits']} digits", _leading_digits(exact["erlang_c"], 20)),
            ("Erlang B, mpmath", _leading_digits(exact["erlang_b"], 20)),
            ("fast vs exact, relative difference", f"{exact['relative_difference_erlang_c']:.1e}"),
        ]
    for label, value in rows:
        table.add_row(Text(label), Text(value))
    console.print(table)
    if not in_seconds:
        console.print(
            "Waits are in units of the mean service time (1/μ); give --rate and --service-time for seconds.",
            markup=False,
        )
    console.print(f"Wait model: {data['wait_model']}.", markup=False)
