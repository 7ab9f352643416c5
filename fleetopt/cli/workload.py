"""`fleetopt workload show`: exact statistics of a request log or a CDF (bundled name or path)."""

from __future__ import annotations

import typer

from fleetopt.cli.common import FORMAT_OPTION
from fleetopt.render.output import OutputFormat, emit
from fleetopt.render.workload import draw_workload

workload_app = typer.Typer(
    name="workload",
    help="Inspect workloads: request logs and token-length CDFs.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)


@workload_app.command("show")
def show(
    workload: str = typer.Argument(
        ..., metavar="WORKLOAD", help="A bundled workload name, or a path to a request log or CDF file."
    ),
    b_short: int = typer.Option(
        4096, "--b-short", min=1, help="Short-pool boundary B_short (tokens) for α, β and the archetype."
    ),
    fmt: OutputFormat = FORMAT_OPTION,
    input_format: str | None = typer.Option(
        None, "--input-format", help="Override detection: azure, csv, jsonl, cdf-json or cdf-csv."
    ),
    input_column: str | None = typer.Option(None, "--input-column", help="Column of prompt tokens."),
    output_column: str | None = typer.Option(None, "--output-column", help="Column of generated tokens."),
    time_column: str | None = typer.Option(
        None,
        "--time-column",
        help="Column of arrival times (date-times, or numbers; unit from a _s/_ms/_us suffix).",
    ),
    rate_window: str = typer.Option(
        "1min", "--rate-window", help="Window of the arrival-rate profile, e.g. 1min, 5min, 1h."
    ),
    plot: bool = typer.Option(
        False,
        "--plot",
        help="Also a small plot of the windowed arrival rate over time (a log with timestamps).",
    ),
    split: str | None = typer.Option(
        None,
        "--split",
        help="CDF input/output split: fleet-sim, input-fraction:F or output-tokens:N. Default: the "
        "file's mean_input_tokens/mean_output_tokens, else fleet-sim's 80/20 (with a warning).",
    ),
) -> None:
    """Token-length statistics, F at the usual boundaries, arrivals and the archetype at B_short."""
    from fleetopt.core.workload_stats import summarize_workload
    from fleetopt.io.units import parse_duration_s
    from fleetopt.io.workloads import load_workload

    window_s = parse_duration_s(rate_window, field="--rate-window")

    loaded = load_workload(
        workload,
        input_format=input_format,
        input_column=input_column,
        output_column=output_column,
        time_column=time_column,
        split=split,
    )
    data = summarize_workload(loaded, b_short_tokens=b_short, rate_window_s=window_s)
    if plot:
        from fleetopt.core.workload_stats import workload_window_counts
        from fleetopt.errors import ValidationError

        try:
            counts = workload_window_counts(loaded, window_s)
        except ValidationError:
            counts = None
        data["rate_series"] = (
            None
            if counts is None
            else {"window_s": counts.window_s, "rates_per_s": (counts.counts / counts.window_s).tolist()}
        )
    emit(data, fmt, draw_workload)


def register(app: typer.Typer) -> None:
    """Add the ``workload`` sub-app (command ``show``) to ``app``."""
    app.add_typer(workload_app, name="workload")
