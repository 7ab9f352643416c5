"""The ``fleetopt workload show`` report for people (drawn from the dictionary of ``--format json``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from fleetopt.render.output import fmt_num

if TYPE_CHECKING:  # rich is imported when a table is drawn, not for --format json|yaml
    from rich.console import Console


def draw_workload(console: Console, data: Mapping[str, Any]) -> None:
    """Token quantiles, F at key lengths, arrivals and the archetype of a workload."""
    from fleetopt.render.layout import FitTable

    count = data["request_count"]
    kind = f"{count:,} requests" if count is not None else f"CDF, split {data['split_model']}"
    console.print(f"{data['name']} ({kind}; {data['atom_count']:,} distinct atoms)")
    if data.get("split_assumed"):
        from fleetopt.render.words import SPLIT_ASSUMED_NOTE

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
        table.add_row("inter-arrival CV", fmt_num(arrivals["interarrival_cv"], 4))
        table.add_row("inter-arrival SCV", fmt_num(arrivals["interarrival_scv"], 4))
        table.add_row("peak per minute", f"{arrivals['peak_requests_per_min']:,} req")
        table.add_row("peak / mean rate", fmt_num(arrivals["peak_to_mean_ratio"], 4))
        console.print(table)
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
        table.add_row("peak / mean", fmt_num(profile["peak_to_mean_ratio"], 4))
        table.add_row("index of dispersion Var/E of counts", fmt_num(profile["index_of_dispersion"], 4))
        console.print(table)
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
