"""``fleetopt drift``: does a written plan still fit today's workload? (exit 0 fits, 1 drift, 2 bad input)."""

from __future__ import annotations

import enum
from pathlib import Path

import typer

from fleetopt.cli.common import (
    INPUT_COLUMN_OPTION,
    INPUT_FORMAT_OPTION,
    LOG_FORMAT_OPTION,
    OUTPUT_COLUMN_OPTION,
    SPLIT_OPTION,
    TIME_COLUMN_OPTION,
    TIME_UNIT_OPTION,
    reader_options,
)
from fleetopt.cli.observe import (
    CA_FILE_OPTION,
    END_OPTION,
    NAME_PREFIX_OPTION,
    POOL_LABEL_OPTION,
    SELECTOR_OPTION,
    SINCE_OPTION,
    TIMEOUT_OPTION,
    TOKEN_ENV_OPTION,
    TOKEN_FILE_OPTION,
)


class DriftFormat(str, enum.Enum):
    """``--format`` of ``fleetopt drift``: the common three plus a pull-request comment."""

    table = "table"
    json = "json"
    yaml = "yaml"
    markdown = "markdown"


#: Exit statuses (docs/ci.md).
EXIT_FITS, EXIT_DRIFT, EXIT_BAD_INPUT = 0, 1, 2


def register(app: typer.Typer) -> None:
    """Add ``drift`` to ``app``."""
    app.command("drift")(drift)


def drift(
    plan: Path = typer.Option(
        ..., "--plan", help="A plan written by fleetopt plan --output (.yaml/.yml/.json)."
    ),
    cdf: str | None = typer.Option(
        None, "--cdf", help="Today's workload: a bundled name or a request log / CDF file."
    ),
    prometheus: str | None = typer.Option(
        None,
        "--prometheus",
        help="Instead of --cdf: today's workload, rate and latencies from Prometheus (fleetopt observe).",
    ),
    since: str = SINCE_OPTION,
    end: str | None = END_OPTION,
    selector: str | None = SELECTOR_OPTION,
    pool_label: str | None = POOL_LABEL_OPTION,
    name_prefix: str = NAME_PREFIX_OPTION,
    min_load: str = typer.Option(
        "50%",
        "--min-load",
        help="With --prometheus: drift when a pool runs under this share of its planned rate.",
    ),
    token_env: str | None = TOKEN_ENV_OPTION,
    token_file: Path | None = TOKEN_FILE_OPTION,
    ca_file: str | None = CA_FILE_OPTION,
    timeout: str = TIMEOUT_OPTION,
    rate: float | None = typer.Option(
        None,
        "--rate",
        help="Today's arrival rate, req/s. Default: the log's observed rate, else the planned rate.",
    ),
    max_cost_change: str = typer.Option(
        "10%",
        "--max-cost-change",
        help="Drift when re-planning today changes the cost by more than this (relative, e.g. 10%).",
    ),
    max_ks: str = typer.Option(
        "0.1",
        "--max-ks",
        help="Drift when the KS distance of total tokens surely exceeds this (0–1; resolution ±0.01).",
    ),
    min_headroom: str = typer.Option(
        "0%",
        "--min-headroom",
        help="Drift unless the planned fleet also fits at this much more traffic (e.g. 10%).",
    ),
    input_format: str | None = INPUT_FORMAT_OPTION,
    log_format: str | None = LOG_FORMAT_OPTION,
    input_column: str | None = INPUT_COLUMN_OPTION,
    output_column: str | None = OUTPUT_COLUMN_OPTION,
    time_column: str | None = TIME_COLUMN_OPTION,
    time_unit: str | None = TIME_UNIT_OPTION,
    split: str | None = SPLIT_OPTION,
    fmt: DriftFormat = typer.Option(
        DriftFormat.table,
        "--format",
        "-f",
        help="table for people; json or yaml for pipelines; markdown for a pull-request comment.",
    ),
) -> None:
    """Check a planned fleet against today's workload: fit, re-plan, distribution shift.

    Exit 0: the fleet fits within tolerance; 1: drift (every reason listed); 2: bad usage or
    an unreadable plan or workload. With --prometheus the workload and rate are the live ones, and
    a pool that misses its SLO now or runs well below its plan is drift too.
    """
    from fleetopt.api import check_plan_drift
    from fleetopt.core.drift import Tolerances
    from fleetopt.errors import FleetoptError, ValidationError
    from fleetopt.io.units import parse_fraction
    from fleetopt.render.drift import draw_drift, drift_markdown
    from fleetopt.render.output import emit

    try:
        tolerances = Tolerances(
            max_cost_change=parse_fraction(max_cost_change, field="--max-cost-change", allow_above_one=True),
            max_ks=parse_fraction(max_ks, field="--max-ks"),
            min_headroom=parse_fraction(min_headroom, field="--min-headroom", allow_above_one=True),
        )
        if (cdf is None) == (prometheus is None):
            raise ValidationError("give either --cdf (a workload) or --prometheus URL (live metrics)")
        if prometheus is not None:
            from fleetopt.api.observe import check_plan_drift_live
            from fleetopt.cli.observe import parse_end
            from fleetopt.io.units import parse_duration_s

            run = check_plan_drift_live(
                plan, prometheus, since_s=parse_duration_s(since, field="--since"), end_s=parse_end(end),
                selector=selector,
                pool_label=pool_label, name_prefix=name_prefix, tolerances=tolerances,
                min_load=parse_fraction(min_load, field="--min-load"), mean_rate_per_s=rate,
                token_env=token_env, token_file=token_file, ca_file=ca_file,
                timeout_s=parse_duration_s(timeout, field="--timeout"),
            )  # fmt: skip
        else:
            reader = reader_options(
                input_format, log_format, input_column, output_column, time_column, time_unit, split
            )
            run = check_plan_drift(
                plan, cdf, mean_rate_per_s=rate, tolerances=tolerances, reader_options=reader
            )
    except FleetoptError as exc:
        from fleetopt.cli import error_text

        typer.echo(f"Error: {error_text(exc)}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT) from None

    data = run.document(str(plan), "live metrics" if cdf is None else cdf)
    if fmt is DriftFormat.markdown:
        typer.echo(drift_markdown(data), nl=False)
    else:
        emit(data, fmt.value, draw_drift)
    if data["verdict"] == "drift":
        raise typer.Exit(EXIT_DRIFT)
