"""The ``fleetopt queue`` report for people (drawn from the dictionary ``--format json|yaml`` prints)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # rich is imported when a table is drawn, not for --format json|yaml
    from rich.console import Console


def _probability(value: float, log10_value: float | None) -> str:
    from fleetopt.io.units import fmt_num

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


def draw_queue(console: Console, data: Mapping[str, Any]) -> None:
    """Erlang B and C, utilization and the waits (and the 50-digit check with --exact)."""
    from fleetopt.io.units import fmt_num, fmt_seconds
    from fleetopt.render.layout import FitTable

    in_seconds = data["time_unit"] == "s"
    unit = "s" if in_seconds else "service_times"

    def wait(value: float) -> str:
        return fmt_seconds(value) if in_seconds else f"{fmt_num(value, 6)} × mean service time"

    table = FitTable(title=f"M/G/{data['servers']} queue", show_header=False)
    table.add_column(justify="left", wrap=True)
    table.add_column()
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
        table.add_row(label, value)
    console.print(table)
    if not in_seconds:
        console.print(
            "Waits are in units of the mean service time (1/μ); give --rate and --service-time for seconds.",
            markup=False,
        )
    console.print(f"Wait model: {data['wait_model']}.", markup=False)
