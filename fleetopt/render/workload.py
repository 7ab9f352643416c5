"""The ``fleetopt workload show`` report for people (drawn from the dictionary of ``--format json``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from fleetopt.io.units import fmt_num

if TYPE_CHECKING:  # rich is imported when a table is drawn, not for --format json|yaml
    from rich.console import Console

_BLOCKS = " ▁▂▃▄▅▆▇█"


def rate_plot_lines(rates: Sequence[float], window_s: float, width: int = 72, height: int = 8) -> list[str]:
    """A small text plot of the windowed rates over time: at most ``width`` columns (each the busiest
    of the windows it covers, so the peak always shows), ``height`` rows of eighth-blocks, the top
    row labelled with the peak."""
    import numpy as np

    values = np.asarray(rates, dtype=np.float64)
    if values.size == 0:
        return []
    per_column = max(1, -(-values.size // width))
    columns = np.array([values[k : k + per_column].max() for k in range(0, values.size, per_column)])
    top = float(columns.max())
    scaled = np.zeros_like(columns) if top <= 0 else columns / top * height * 8
    rows = []
    for row in range(height, 0, -1):
        level = np.clip(scaled - (row - 1) * 8, 0, 8).round().astype(int)
        rows.append("".join(_BLOCKS[v] for v in level))
    span = values.size * window_s
    label = fmt_num(top, 4)
    gutter = max(len(label), 1)
    lines = [f"arrival rate per {fmt_num(window_s)} s window (req/s; a column is the busiest of "
             f"{per_column} window(s)), over {fmt_num(span)} s:"]  # fmt: skip
    for index, text in enumerate(rows):
        lines.append(f"{(label if index == 0 else '0' if index == height - 1 else ''):>{gutter}} │{text}")
    lines.append(f"{'':>{gutter}} └{'─' * len(columns)}")
    return lines


def draw_workload(console: Console, data: Mapping[str, Any]) -> None:
    """Token quantiles, F at key lengths, arrivals and the archetype of a workload."""
    from fleetopt.render.layout import FitTable

    count = data["request_count"]
    kind = f"{count:,} requests" if count is not None else f"CDF, split {data['split_model']}"
    console.print(f"{data['name']} ({kind}; {data['atom_count']:,} distinct atoms)")
    if data.get("split_assumed"):
        from fleetopt.io.documents.words import SPLIT_ASSUMED_NOTE

        console.print(f"note: {SPLIT_ASSUMED_NOTE}")
    tokens = FitTable(title=f"Tokens (quantiles: {data['quantile_method']})")
    tokens.add_column("", justify="left")
    for label in ("mean", "p50", "p90", "p99", "max"):
        tokens.add_column(label)
    for column in ("input", "output", "total"):
        row = data["tokens"][column]
        tokens.add_row(column, *(fmt_num(row[label], 6) for label in ("mean", "p50", "p90", "p99", "max")))
    console.print(tokens)
    cdf = FitTable(title="F(tokens): share of requests with total ≤ tokens", key_columns=0)
    for tokens_label in data["cdf_at_tokens"]:
        cdf.add_column(f"{int(tokens_label):,}")
    cdf.add_row(*(f"{value:.4f}" for value in data["cdf_at_tokens"].values()))
    console.print(cdf)
    arrivals = data["arrivals"]
    if arrivals is not None:
        table = FitTable(title="Arrivals")
        table.add_column("statistic", justify="left", wrap=True)
        table.add_column("value")
        table.add_row("span", f"{fmt_num(arrivals['span_s'], 6)} s")
        table.add_row("mean rate (n−1)/span", f"{fmt_num(arrivals['mean_rate_per_s'], 4)} req/s")
        if arrivals["interarrival_scv"] is not None:  # a summary has no gaps and no sliding peak
            table.add_row("inter-arrival CV", fmt_num(arrivals["interarrival_cv"], 4))
            table.add_row("inter-arrival SCV", fmt_num(arrivals["interarrival_scv"], 4))
            table.add_row("busiest 60 s from any arrival", f"{arrivals['peak_requests_per_min']:,} req")
            table.add_row("busiest 60 s / mean rate", fmt_num(arrivals["peak_to_mean_ratio"], 4))
        console.print(table)
        if arrivals["interarrival_scv"] is None:
            console.print(
                "note: a summary keeps arrivals per window, not each arrival: the inter-arrival CV and "
                "the sliding-minute peak need the raw log (the rate profile below is exact)"
            )
    profile = data.get("rate_profile")
    if profile is not None:
        table = FitTable(
            title=f"Rate profile ({profile['windows']:,} windows of {fmt_num(profile['window_s'])} s)"
        )
        table.add_column("statistic", justify="left", wrap=True)
        table.add_column("value")
        for label, key in (
            ("mean rate", "mean_rate_per_s"), ("p50 window", "rate_p50_per_s"),
            ("p90 window", "rate_p90_per_s"), ("p99 window", "rate_p99_per_s"),
            ("peak window", "peak_rate_per_s"),
        ):  # fmt: skip
            table.add_row(label, f"{fmt_num(profile[key], 4)} req/s")
        table.add_row("peak window / mean", fmt_num(profile["peak_to_mean_ratio"], 4))
        if profile.get("sizing_peak_to_mean_ratio") is not None:
            table.add_row(
                "peak / mean without counting noise (a peak plan's factor)",
                fmt_num(profile["sizing_peak_to_mean_ratio"], 4),
            )
        table.add_row("index of dispersion Var/E of counts", fmt_num(profile["index_of_dispersion"], 4))
        curve = dict((round(t, 6), d) for t, d in profile.get("within_window_dispersion") or [])
        for scale in sorted(curve, reverse=True)[::3]:
            table.add_row(f"dispersion within windows at {fmt_num(scale)} s", fmt_num(curve[scale], 4))
        console.print(table)
        if arrivals is not None and arrivals.get("peak_to_mean_ratio") is not None:
            console.print(
                f"note: two peaks — the busiest 60 s starting at any arrival "
                f"({fmt_num(arrivals['peak_to_mean_ratio'], 4)} × the mean) and the busiest of the profile's "
                f"{fmt_num(profile['window_s'])} s windows on the clock "
                f"({fmt_num(profile['peak_to_mean_ratio'], 4)} ×); "
                "a plan on the peak basis sizes for the latter with its Poisson counting noise taken out"
                + (
                    f" ({fmt_num(profile['sizing_peak_to_mean_ratio'], 4)} ×)"
                    if profile.get("sizing_peak_to_mean_ratio") is not None
                    else ""
                )
                + " and covers bursts within windows through each pool's C_a²"
            )
    if "rate_series" in data:
        series = data["rate_series"]
        if series is None:
            console.print("rate plot: the workload has no arrival times spanning a window (nothing to plot)")
        else:
            for line in rate_plot_lines(series["rates_per_s"], series["window_s"]):
                console.print(line, highlight=False)
    archetype = data["archetype"]
    if archetype is not None:
        table = FitTable(title=f"Archetype at B_short = {archetype['b_short_tokens']:,} (FleetOpt §2.4)")
        table.add_column("γ")
        table.add_column("β = F(γB) − F(B)")
        table.add_column("borderline share of above-B")
        for gamma, row in archetype["borderline"].items():
            share = row["share_of_above_threshold"]
            table.add_row(gamma, f"{row['beta']:.4f}", "–" if share is None else f"{share:.4f}")
        console.print(table)
        console.print(
            f"α = F(B) = {archetype['alpha']:.4f} → archetype {archetype['archetype']} ({archetype['rule']})"
        )
    if data.get("reported_cache"):
        from fleetopt.render.prefix import draw_reported_cache

        draw_reported_cache(console, data["reported_cache"])
    if data.get("prefix_cache"):
        from fleetopt.render.prefix import draw_cache_report

        draw_cache_report(console, data["prefix_cache"])


def summary_report(summary: Any, output: str | None) -> dict[str, Any]:
    """What ``workload summarize``/``merge`` made: the parts, counts, window and span (a document)."""
    import os

    from fleetopt.core.summary import utc_iso

    span = summary.span
    size = os.path.getsize(output) if output and os.path.isfile(output) else None
    return {
        "output": output,
        "output_bytes": size,
        "requests": summary.request_count,
        "distinct_pairs": _distinct_pairs(summary),
        "window_s": None if summary.window_us is None else summary.window_us / 1e6,
        "windows": int(summary.window_counts.size),
        "clock": None if span is None else ("utc" if span.utc else "relative"),
        "first_arrival_us": None if span is None else span.first_us,
        "last_arrival_us": None if span is None else span.last_us,
        "first_arrival_utc": utc_iso(span.first_us) if span is not None and span.utc else None,
        "span_s": None if span is None else span.span_s,
        "sources": [
            {"source": s.source, "requests": s.requests, "first_us": s.first_us, "last_us": s.last_us}
            for s in summary.sources
        ],
        **_reported_cache(summary),
    }


def _distinct_pairs(summary: Any) -> int:
    """Distinct (input, output) pairs of a summary (its rows, less the ones a third key, cached
    tokens, splits: the rows are sorted by input, output, cached)."""
    if summary.cached_tokens is None or summary.counts.size < 2:
        return int(summary.counts.size)
    inputs, outputs = summary.input_tokens, summary.output_tokens
    return 1 + int(((inputs[1:] != inputs[:-1]) | (outputs[1:] != outputs[:-1])).sum())


def _reported_cache(summary: Any) -> dict[str, Any]:
    """The hit rate a summary's log reports (``reported_cache_hit_rate``, over all prompt tokens;
    ``reporting_requests``), for a summary with cached tokens."""
    from fleetopt.core.summary import reported_cache

    reported = reported_cache(
        summary.input_tokens, summary.output_tokens, summary.cached_tokens, summary.counts
    )
    if reported is None:
        return {}
    return {"reported_cache_hit_rate": reported.hit_rate, "reporting_requests": reported.reporting_requests}


def draw_summary_report(console: Console, data: Mapping[str, Any]) -> None:
    """The summary written: one line per source, then the totals."""
    from rich.table import Table

    table = Table(title="Workload summary")
    table.add_column("source")
    table.add_column("requests", justify="right")
    for source in data["sources"]:
        table.add_row(source["source"], f"{source['requests']:,}")
    console.print(table)
    window = "no arrival times" if data["window_s"] is None else (
        f"{data['windows']:,} windows of {fmt_num(data['window_s'])} s over {fmt_num(data['span_s'], 6)} s"
        + (f" from {data['first_arrival_utc']}" if data["first_arrival_utc"] else " (the log's own clock)")
    )  # fmt: skip
    console.print(
        f"{data['requests']:,} requests, {data['distinct_pairs']:,} distinct (input, output) pairs; {window}"
    )
    if data.get("reported_cache_hit_rate") is not None:
        console.print(
            f"cached prompt tokens the log reports: {data['reported_cache_hit_rate']:.1%} of prompt tokens "
            f"({data['reporting_requests']:,} requests report them)"
        )
    if data["output"]:
        size = f" ({data['output_bytes']:,} bytes)" if data["output_bytes"] is not None else ""
        console.print(f"summary written to {data['output']}{size}")
