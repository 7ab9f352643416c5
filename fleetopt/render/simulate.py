"""The validation report for people (``fleetopt simulate``, ``fleetopt plan --validate``).

Drawn from the same dictionary ``--format json|yaml`` prints
(:func:`fleetopt.core.validation.report_document`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from fleetopt.render.output import fmt_num, fmt_seconds

_LABELS = {
    "utilization": "utilization",
    "p50_ttft_s": "P50 TTFT",
    "p99_ttft_s": "P99 TTFT",
    "p99_wait_s": "P99 wait",
    "tpot_s": "TPOT (mean)",
}


def _value(key: str, value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:.4f}" if key == "utilization" else fmt_seconds(value)


def _half_width(key: str, value: float | None) -> str:
    if value is None:
        return ""
    return f" ± {value:.4f}" if key == "utilization" else f" ± {fmt_seconds(value)}"


def _error(value: float | None) -> str:
    return "–" if value is None else f"{value:+.2f}%"


def draw_validation(console: Console, data: Mapping[str, Any]) -> None:
    """Per pool: analytical vs simulated (± 95% CI) with the error %, then the verdict and notes."""
    routing = (
        f"B = {data['b_short_tokens']:,}, γ = {data['gamma']:g}, p_c = {data['compressibility']:g}"
        if data["b_short_tokens"] is not None
        else "one pool"
    )
    console.print(
        f"[bold]Simulation[/bold] of the plan ({routing}) at {fmt_num(data['arrival_rate_per_s'])} req/s: "
        f"{data['service_model']} service, {data['dispatch']} dispatch, {data['requests']:,} requests × "
        f"{len(data['seeds'])} seeds, warm-up {data['warmup_fraction']:.0%} "
        f"({fmt_seconds(min(data['warmup_s']))}) discarded."
    )
    console.print(
        f"Analytical model: {data['analytical_model']} ({data['analytical_source']}); "
        "error % = (analytical − simulated) / simulated; CIs are Student-t 95% over seeds."
    )
    slo = data["ttft_slo_s"]
    for name, pool in data["pools"].items():
        table = Table(
            title=(
                f"{name} pool: {pool['instances']:,} × {pool['slots_per_instance']} slots, "
                f"{pool['requests_measured']:,} requests measured"
                + ("" if pool["warmed_up"] else " — NOT WARMED UP")
            ),
            title_justify="left",
        )
        table.add_column("metric")
        table.add_column("analytical", justify="right")
        table.add_column("simulated ± 95% CI", justify="right")
        table.add_column("error", justify="right")
        for key, label in _LABELS.items():
            row = pool[key]
            table.add_row(
                label,
                _value(key, row["analytical"]),
                _value(key, row["simulated"]) + _half_width(key, row["ci95_half_width"]),
                _error(row["error_pct"]),
            )
        console.print(table)
        p99 = pool["p99_ttft_s"]["simulated"]
        mark = "[green]meets[/green]" if pool["slo_met"] else "[bold red]EXCEEDS[/bold red]"
        console.print(f"  simulated P99 TTFT {fmt_seconds(p99)} {mark} the {fmt_seconds(slo)} SLO")
    style = "bold green" if data["verdict"].startswith("PASS") else "bold red"
    console.print(f"[{style}]{data['verdict']}[/{style}]")
    for note in data["notes"]:
        console.print(f"  • {escape(note)}")
