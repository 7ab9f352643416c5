"""``fleetopt observe``: what the running fleet does now, from Prometheus or engines' /metrics.

    fleetopt observe --prometheus URL --since 7d [--selector '{namespace="llm"}']
        [--plan plan.yaml | --slo 500ms] [--output summary.parquet]
    fleetopt observe --scrape [POOL=]URL ... [--scrape-interval 60s]

Exit 0: figures reported (warnings name what was missing); 2: bad usage, or nothing usable came
back (unreachable server, refused credentials, no vLLM metrics).
"""

from __future__ import annotations

from pathlib import Path

import typer

from fleetopt.cli.common import FORMAT_OPTION
from fleetopt.render.output import OutputFormat

#: Exit status when nothing usable came back (as ``fleetopt drift``'s unusable input).
EXIT_UNUSABLE = 2

PROMETHEUS_OPTION = typer.Option(
    None, "--prometheus", help="Prometheus server base URL (e.g. http://prometheus:9090)."
)
SINCE_OPTION = typer.Option("1d", "--since", help="How far back to read, e.g. 6h, 7d.")
SELECTOR_OPTION = typer.Option(
    None, "--selector", help="Label matchers every series must match, e.g. '{namespace=\"llm\"}'."
)
POOL_LABEL_OPTION = typer.Option(
    None,
    "--pool-label",
    help="The series label whose value is the pool name (default: pods named <prefix>-<pool>-…, as "
    "fleetopt export names them).",
)
NAME_PREFIX_OPTION = typer.Option("fleetopt", "--name-prefix", help="The --name-prefix of fleetopt export.")
TOKEN_ENV_OPTION = typer.Option(
    None,
    "--token-env",
    help="Environment variable holding a bearer token (default: PROMETHEUS_TOKEN when set).",
)
TOKEN_FILE_OPTION = typer.Option(None, "--token-file", help="File holding a bearer token.", dir_okay=False)
CA_FILE_OPTION = typer.Option(None, "--ca-file", help="CA bundle to verify the server's TLS certificate.")
TIMEOUT_OPTION = typer.Option("30s", "--timeout", help="Timeout of each request and query.")
STEP_OPTION = typer.Option(
    "15s", "--step", help="Query step: at most the scrape interval, so every counter reset is seen."
)
END_OPTION = typer.Option(None, "--end", help="End of the span: Unix seconds or ISO 8601 UTC (default: now).")
WINDOW_OPTION = typer.Option("60s", "--window", help="Rate-profile window (a multiple of --step).")


def whole_seconds(text: str, field: str) -> int:
    """A duration that must be a whole number of seconds (PromQL steps and windows)."""
    from fleetopt.errors import ValidationError
    from fleetopt.io.units import parse_duration_s

    value = parse_duration_s(text, field=field)
    if abs(value - round(value)) > 1e-9:
        raise ValidationError(f"{field}: {text!r} must be a whole number of seconds")
    return int(round(value))


def parse_end(text: str | None) -> float | None:
    """``--end``: Unix seconds or an ISO 8601 UTC instant (None: now)."""
    if text is None:
        return None
    from fleetopt.errors import ValidationError

    try:
        return float(text)
    except ValueError:
        pass
    import numpy as np

    try:
        return float(np.datetime64(text.strip().removesuffix("Z"), "s").astype("int64"))
    except ValueError:
        raise ValidationError(f"--end: {text!r} is neither Unix seconds nor an ISO 8601 instant") from None


def register(app: typer.Typer) -> None:
    """Add ``observe`` to ``app``."""
    app.command("observe")(observe)


def observe(
    prometheus: str | None = PROMETHEUS_OPTION,
    scrape: list[str] | None = typer.Option(
        None, "--scrape", help="An engine's /metrics URL, as [POOL=]URL (repeat for each engine)."
    ),
    since: str = SINCE_OPTION,
    end: str | None = END_OPTION,
    selector: str | None = SELECTOR_OPTION,
    plan: Path | None = typer.Option(
        None, "--plan", help="A plan: its pools, SLO and contexts (pods as fleetopt export names them)."
    ),
    slo: str | None = typer.Option(None, "--slo", help="P99 TTFT SLO for attainment (default: the plan's)."),
    tpot_slo: str | None = typer.Option(None, "--tpot-slo", help="TPOT cap for attainment and goodput."),
    pool_label: str | None = POOL_LABEL_OPTION,
    name_prefix: str = NAME_PREFIX_OPTION,
    max_model_len: int | None = typer.Option(
        None, "--max-model-len", min=1, help="vLLM's --max-model-len (the top of the token histograms)."
    ),
    output: Path | None = typer.Option(
        None, "--output", "-o", help="Write the workload summary (.parquet, .json or .csv)."
    ),
    scrape_interval: str | None = typer.Option(
        None, "--scrape-interval", help="With --scrape: scrape twice this far apart (default: lifetimes)."
    ),
    step: str = STEP_OPTION,
    window: str = WINDOW_OPTION,
    token_env: str | None = TOKEN_ENV_OPTION,
    token_file: Path | None = TOKEN_FILE_OPTION,
    ca_file: str | None = CA_FILE_OPTION,
    timeout: str = TIMEOUT_OPTION,
    fmt: OutputFormat = FORMAT_OPTION,
) -> None:
    """Read a running fleet's vLLM metrics: load, P99 TTFT/TPOT, SLO attainment, goodput, workload.

    From Prometheus (--prometheus, over --since) or engines' /metrics pages (--scrape). Exit 0:
    reported (warnings name what was missing); 2: nothing usable came back, or bad usage.
    """
    from fleetopt.errors import FleetoptError, ValidationError
    from fleetopt.io.units import parse_duration_s
    from fleetopt.render.observe import draw_observe
    from fleetopt.render.output import emit

    try:
        if (prometheus is None) == (not scrape):
            raise ValidationError("give either --prometheus URL or --scrape URL … (one of the two)")
        common = {
            "plan_path": plan,
            "ttft_slo_s": None if slo is None else parse_duration_s(slo, field="--slo"),
            "tpot_slo_s": None if tpot_slo is None else parse_duration_s(tpot_slo, field="--tpot-slo"),
            "pool_label": pool_label,
            "name_prefix": name_prefix,
            "max_model_len": max_model_len,
            "token_env": token_env,
            "token_file": token_file,
            "ca_file": ca_file,
            "timeout_s": parse_duration_s(timeout, field="--timeout"),
        }
        if output is not None:
            from fleetopt.io.summaries import summary_format_for

            summary_format_for(output)
        if prometheus is not None:
            from fleetopt.api.observe import observe_prometheus

            run = observe_prometheus(
                prometheus, since_s=parse_duration_s(since, field="--since"), end_s=parse_end(end),
                selector=selector,
                step_s=whole_seconds(step, "--step"), window_s=whole_seconds(window, "--window"), **common,
            )  # fmt: skip
        else:
            from fleetopt.api.observe import observe_scrape

            interval = (
                0.0
                if scrape_interval is None
                else parse_duration_s(scrape_interval, field="--scrape-interval")
            )
            run = observe_scrape(scrape, interval_s=interval, **common)
        if output is not None:
            if run.summary is None:
                raise ValidationError("--output: no workload summary (the token histograms are missing)")
            from fleetopt.io.summaries import write_summary

            write_summary(run.summary, output)
    except FleetoptError as exc:
        typer.echo(f"Error: {exc}", err=True)
        raise typer.Exit(EXIT_UNUSABLE) from None
    emit(run.document(None if output is None else str(output)), fmt, draw_observe)
