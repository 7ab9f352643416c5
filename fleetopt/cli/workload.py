"""`fleetopt workload show`: exact statistics of a request log or a CDF (bundled name or path)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import typer

from fleetopt.cli.common import FORMAT_OPTION
from fleetopt.render.output import OutputFormat, emit, fmt_num

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
    split: str = typer.Option(
        "fleet-sim",
        "--split",
        help="CDF input/output split: fleet-sim, input-fraction:F or output-tokens:N.",
    ),
) -> None:
    """Token-length statistics, F at the usual boundaries, arrivals and the archetype at B_short."""
    from fleetopt.core.workload_stats import summarize_workload
    from fleetopt.io.workloads import load_workload

    loaded = load_workload(
        workload,
        input_format=input_format,
        input_column=input_column,
        output_column=output_column,
        time_column=time_column,
        split=split,
    )
    emit(summarize_workload(loaded, b_short_tokens=b_short), fmt, _draw)


def _draw(console, data: Mapping[str, Any]) -> None:
    from rich.table import Table

    count = data["request_count"]
    kind = f"{count:,} requests" if count is not None else f"CDF, split {data['split_model']}"
    console.print(f"{data['name']} ({kind}; {data['atom_count']:,} distinct atoms)")
    tokens = Table(title=f"Tokens (quantiles: {data['quantile_method']})")
    tokens.add_column("")
    for label in ("mean", "p50", "p90", "p99", "max"):
        tokens.add_column(label, justify="right")
    for column in ("input", "output", "total"):
        row = data["tokens"][column]
        tokens.add_row(column, *(fmt_num(row[label], 6) for label in ("mean", "p50", "p90", "p99", "max")))
    console.print(tokens)
    cdf = Table(title="F(tokens): share of requests with total ≤ tokens")
    for tokens_label in data["cdf_at_tokens"]:
        cdf.add_column(f"{int(tokens_label):,}", justify="right")
    cdf.add_row(*(f"{value:.4f}" for value in data["cdf_at_tokens"].values()))
    console.print(cdf)
    arrivals = data["arrivals"]
    if arrivals is not None:
        table = Table(title="Arrivals")
        table.add_column("statistic")
        table.add_column("value", justify="right")
        table.add_row("span", f"{fmt_num(arrivals['span_s'], 6)} s")
        table.add_row("mean rate (n−1)/span", f"{fmt_num(arrivals['mean_rate_per_s'], 4)} req/s")
        table.add_row("inter-arrival CV", fmt_num(arrivals["interarrival_cv"], 4))
        table.add_row("inter-arrival SCV", fmt_num(arrivals["interarrival_scv"], 4))
        table.add_row("peak per minute", f"{arrivals['peak_requests_per_min']:,} req")
        table.add_row("peak / mean rate", fmt_num(arrivals["peak_to_mean_ratio"], 4))
        console.print(table)
    archetype = data["archetype"]
    if archetype is not None:
        table = Table(title=f"Archetype at B_short = {archetype['b_short_tokens']:,} (FleetOpt §2.4)")
        table.add_column("γ", justify="right")
        table.add_column("β = F(γB) − F(B)", justify="right")
        table.add_column("borderline share of above-B", justify="right")
        for gamma, row in archetype["borderline"].items():
            share = row["share_of_above_threshold"]
            table.add_row(gamma, f"{row['beta']:.4f}", "–" if share is None else f"{share:.4f}")
        console.print(table)
        console.print(
            f"α = F(B) = {archetype['alpha']:.4f} → archetype {archetype['archetype']} ({archetype['rule']})"
        )


def register(app: typer.Typer) -> None:
    """Add the ``workload`` sub-app (command ``show``) to ``app``."""
    app.add_typer(workload_app, name="workload")
