"""`fleetopt workload`: inspect a workload (``show``), summarize request logs into exact, mergeable
aggregates (``summarize``, ``merge``), and print the same aggregation as SQL for a warehouse
(``sql``)."""

from __future__ import annotations

from pathlib import Path

import typer

from fleetopt.cli.common import (
    FORMAT_OPTION,
    INPUT_COLUMN_OPTION,
    INPUT_FORMAT_OPTION,
    LOG_FORMAT_OPTION,
    OUTPUT_COLUMN_OPTION,
    SPLIT_OPTION,
    TIME_COLUMN_OPTION,
    TIME_UNIT_OPTION,
    reader_options,
)
from fleetopt.cli.prefix import cache as prefix_cache
from fleetopt.render.output import OutputFormat, emit

workload_app = typer.Typer(
    name="workload",
    help="Inspect workloads (request logs, summaries, CDFs); summarize and merge logs; SQL for a warehouse.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)

WINDOW_OPTION = typer.Option(
    "1s",
    "--window",
    help="Arrival-count window of the summary (any whole multiple of it re-bins exactly), e.g. 1s, 1min.",
)


@workload_app.command("show")
def show(
    workload: str = typer.Argument(
        ...,
        metavar="WORKLOAD",
        help="A bundled workload name, or a path, glob or URL of a request log, summary or CDF file.",
    ),
    b_short: int = typer.Option(
        4096, "--b-short", min=1, help="Short-pool boundary B_short (tokens) for α, β and the archetype."
    ),
    fmt: OutputFormat = FORMAT_OPTION,
    input_format: str | None = INPUT_FORMAT_OPTION,
    log_format: str | None = LOG_FORMAT_OPTION,
    input_column: str | None = INPUT_COLUMN_OPTION,
    output_column: str | None = OUTPUT_COLUMN_OPTION,
    time_column: str | None = TIME_COLUMN_OPTION,
    time_unit: str | None = TIME_UNIT_OPTION,
    rate_window: str = typer.Option(
        "1min", "--rate-window", help="Window of the arrival-rate profile, e.g. 1min, 5min, 1h."
    ),
    plot: bool = typer.Option(
        False,
        "--plot",
        help="Also a small plot of the windowed arrival rate over time (a log with timestamps).",
    ),
    split: str | None = SPLIT_OPTION,
) -> None:
    """Token-length statistics, F at the usual boundaries, arrivals and the archetype at B_short."""
    from fleetopt.core.workload_stats import summarize_workload
    from fleetopt.io.units import parse_duration_s
    from fleetopt.io.workloads import load_workload
    from fleetopt.render.workload import draw_workload

    window_s = parse_duration_s(rate_window, field="--rate-window")
    loaded = load_workload(
        workload,
        **reader_options(
            input_format, log_format, input_column, output_column, time_column, time_unit, split
        ),
    )
    data = summarize_workload(loaded, b_short_tokens=b_short, rate_window_s=window_s)
    from fleetopt.core.arrivals import basis_factor, denoised_counts, dispersion_curve, workload_window_counts
    from fleetopt.errors import ValidationError

    if data.get("rate_profile") is not None:  # burstiness below the window, at the scales a queue sees
        curve = dispersion_curve(loaded, window_s)
        data["rate_profile"]["within_window_dispersion"] = [list(point) for point in curve]
        counts = workload_window_counts(loaded, window_s)
        if counts is not None:  # the peak a plan sizes for: its counting noise taken out
            data["rate_profile"]["sizing_peak_to_mean_ratio"] = basis_factor(denoised_counts(counts), "peak")
    if plot:
        try:
            counts = workload_window_counts(loaded, window_s)
        except ValidationError:
            counts = None
        data["rate_series"] = (
            None
            if counts is None
            else {"window_s": counts.window_s, "rates_per_s": (counts.counts / counts.window_s).tolist()}
        )
    from fleetopt.api.prefix import prefix_evidence, reported_cache_report

    reported, partial = reported_cache_report(loaded)  # a log that reports cached tokens: its hit rate
    if reported is not None:
        data["reported_cache"] = reported
    if partial is not None:
        typer.echo(f"warning: {partial}", err=True)
    data["prefix_cache"], warning = prefix_evidence(workload)  # a log with block hashes: its hit rates
    if warning is not None:
        typer.echo(f"warning: {warning}", err=True)
    if data["prefix_cache"] is None:
        del data["prefix_cache"]
    emit(data, fmt, draw_workload)


@workload_app.command("summarize")
def summarize(
    logs: list[str] = typer.Argument(
        ...,
        metavar="LOG...",
        help="Request logs: paths, globs (quoted: 'logs/*.csv.gz'), s3:// or https:// URLs, bundled "
        "names, or summaries to fold in. Each is aggregated where it is read; the counts add up.",
    ),
    output: Path | None = typer.Option(
        None, "--output", "-o", help="Write the summary (.parquet, .json or .csv) atomically."
    ),
    window: str = WINDOW_OPTION,
    input_format: str | None = INPUT_FORMAT_OPTION,
    log_format: str | None = LOG_FORMAT_OPTION,
    input_column: str | None = INPUT_COLUMN_OPTION,
    output_column: str | None = OUTPUT_COLUMN_OPTION,
    time_column: str | None = TIME_COLUMN_OPTION,
    time_unit: str | None = TIME_UNIT_OPTION,
    fmt: OutputFormat = FORMAT_OPTION,
) -> None:
    """Summarize request logs: the exact (input, output) histogram, arrivals per window and their
    sources — what the planner needs, accepted wherever a workload is."""
    from fleetopt.api import summarize_logs
    from fleetopt.io.summaries import summary_format_for, write_summary
    from fleetopt.io.units import parse_duration_s
    from fleetopt.render.workload import draw_summary_report, summary_report

    if output is not None:
        summary_format_for(output)  # refuse a bad suffix before any work
    summary = summarize_logs(
        logs,
        window_s=parse_duration_s(window, field="--window"),
        reader_options=reader_options(
            input_format, log_format, input_column, output_column, time_column, time_unit, None
        ),
    )
    if output is not None:
        write_summary(summary, output, list(logs))
    emit(summary_report(summary, None if output is None else str(output)), fmt, draw_summary_report)


@workload_app.command("merge")
def merge(
    summaries: list[str] = typer.Argument(
        ..., metavar="SUMMARY...", help="Summaries to add together (paths, globs or URLs)."
    ),
    output: Path = typer.Option(
        ..., "--output", "-o", help="Write the merged summary (.parquet, .json or .csv)."
    ),
    fmt: OutputFormat = FORMAT_OPTION,
) -> None:
    """Merge workload summaries: counts add (same window length and clock required; the same log
    twice is refused)."""
    from fleetopt.api import merge_summary_files
    from fleetopt.io.summaries import summary_format_for, write_summary
    from fleetopt.render.workload import draw_summary_report, summary_report

    summary_format_for(output)
    merged = merge_summary_files(summaries)
    write_summary(merged, output, list(summaries))
    emit(summary_report(merged, str(output)), fmt, draw_summary_report)


@workload_app.command("sql")
def sql(
    dialect: str = typer.Option(
        "duckdb", "--dialect", help="SQL dialect: duckdb, spark, bigquery, trino, snowflake or postgres."
    ),
    log_format: str | None = LOG_FORMAT_OPTION,
    table: str = typer.Option(
        "requests", "--table", help="The table (or view) of request rows, e.g. logs.spend."
    ),
    window: str = WINDOW_OPTION,
    input_column: str | None = INPUT_COLUMN_OPTION,
    output_column: str | None = OUTPUT_COLUMN_OPTION,
    time_column: str | None = TIME_COLUMN_OPTION,
    time_unit: str | None = TIME_UNIT_OPTION,
    time_type: str | None = typer.Option(
        None,
        "--time-type",
        help="How the time column is stored: timestamp or number (default: the preset's; timestamp).",
    ),
    no_time: bool = typer.Option(
        False, "--no-time", help="The table has no arrival times (no windows, no rate)."
    ),
    where: str | None = typer.Option(
        None,
        "--where",
        help="An extra row filter (SQL), e.g. \"startTime >= '2024-05-01'\"; added to the preset's.",
    ),
    cached_column: str | None = typer.Option(
        None,
        "--cached-column",
        help="The column of each request's cached prompt tokens (default: the preset's fields), or none "
        "for a table without them.",
    ),
) -> None:
    """Print the summary query for a warehouse: run it where the logs live, save the result as
    CSV or Parquet, and plan from that file (only the aggregate moves)."""
    from fleetopt.api import workload_summary_sql
    from fleetopt.io.units import parse_duration_s

    window_s = parse_duration_s(window, field="--window")
    text = workload_summary_sql(
        dialect=dialect, log_format=log_format, table=table, window_s=window_s,
        input_column=input_column, output_column=output_column, time_column=time_column,
        time_unit=time_unit, time_type=time_type, no_time=no_time, where=where, cached_column=cached_column,
    )  # fmt: skip
    typer.echo(text.rstrip() + ";")


workload_app.command("cache")(prefix_cache)


def register(app: typer.Typer) -> None:
    """Add the ``workload`` sub-app (``show``, ``summarize``, ``merge``, ``sql``, ``cache``) to ``app``."""
    app.add_typer(workload_app, name="workload")
