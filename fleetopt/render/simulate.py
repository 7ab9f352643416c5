"""The cross-check report (``fleetopt simulate``, ``fleetopt plan --validate``) for people: its
table, drawn from its document (what ``--format json|yaml`` prints, built below the API by
:mod:`fleetopt.io.documents.build_crosscheck`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from fleetopt.io.units import NOT_APPLICABLE, fmt_num, fmt_seconds

if TYPE_CHECKING:  # rich is imported when a table is drawn, not for --format json|yaml
    from rich.console import Console

_LABELS = {
    "utilization": "utilization",
    "p50_ttft_s": "P50 TTFT",
    "p99_ttft_s": "P99 TTFT",
    "p99_wait_s": "P99 wait",
    "tpot_s": "TPOT (mean)",
}


def strict_failure(data: Mapping[str, Any]) -> Exception | None:
    """What ``--strict`` exits 1 with for a cross-check document: FAIL (the breaching pools) or
    INCONCLUSIVE (the pools that cannot be told); None for a PASS."""
    from fleetopt.errors import FleetoptError

    code = data.get("verdict_code")
    pools = data["pools"]
    if code == "fail":
        breached = ", ".join(name for name, pool in pools.items() if pool.get("verdict") == "breach")
        return FleetoptError(
            f"--strict: FAIL: the simulated P99 TTFT exceeds the SLO in the {breached} pool(s)"
        )
    if code == "inconclusive":
        unknown = ", ".join(name for name, pool in pools.items() if pool.get("verdict") == "inconclusive")
        return FleetoptError(
            f"--strict: INCONCLUSIVE: the simulation cannot tell whether the {unknown} pool(s) meet the SLO "
            "(too few requests, or a P99 interval straddling the SLO); simulate more requests or seeds"
        )
    return None


def pool_verdict_sentence(pool: Mapping[str, Any], slo_s: float) -> str:
    """One pool's verdict in words: met / EXCEEDS / INCONCLUSIVE / no traffic, with the 95% interval."""
    verdict = pool.get("verdict", "met" if pool["slo_met"] else "breach")
    p99 = pool["p99_ttft_s"]["simulated"]
    low, high = pool.get("p99_ttft_interval_s") or (None, None)
    interval = ""
    if low is not None or high is not None:
        interval = (
            f" (95% interval {fmt_seconds(low)} – {'unbounded' if high is None else fmt_seconds(high)})"
        )
    if verdict == "no_traffic":
        return "no traffic reached this pool (it was planned for none): nothing to check"
    if pool["requests_measured"] < pool.get("requests_needed", 0):
        return (
            f"[bold yellow]INCONCLUSIVE[/bold yellow]: {pool['requests_measured']:,} requests measured, "
            f"fewer than the {pool['requests_needed']:,} a P99 interval needs"
        )
    if verdict == "inconclusive":
        return (
            f"[bold yellow]INCONCLUSIVE[/bold yellow]: simulated P99 TTFT {fmt_seconds(p99)}{interval} "
            f"straddles the {fmt_seconds(slo_s)} SLO"
        )
    mark = "[green]meets[/green]" if verdict == "met" else "[bold red]EXCEEDS[/bold red]"
    return f"simulated P99 TTFT {fmt_seconds(p99)}{interval} {mark} the {fmt_seconds(slo_s)} SLO"


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def _value(key: str, value: float | None) -> str:
    if not _finite(value):
        return NOT_APPLICABLE
    return f"{value:.4f}" if key == "utilization" else fmt_seconds(value)


def _half_width(key: str, value: float | None, simulated: float | None) -> str:
    """`` ± half-width`` of a simulated value; nothing when there is no value or (one seed) no interval."""
    if not (_finite(value) and _finite(simulated)):
        return ""
    return f" ± {value:.4f}" if key == "utilization" else f" ± {fmt_seconds(value)}"


def _error(value: float | None) -> str:
    return NOT_APPLICABLE if not _finite(value) else f"{value:+.2f}%"


def draw_crosscheck(console: Console, data: Mapping[str, Any]) -> None:
    """Per pool: analytical vs simulated (± 95% CI) with the error %, then the verdict and notes."""
    from fleetopt.render.layout import FitTable, bullets

    routing = (
        f"B = {data['b_short_tokens']:,}, γ = {data['gamma']:g}, p_c = {data['compressibility']:g}"
        if data["b_short_tokens"] is not None
        else "one pool"
    )
    process = data.get("arrival_process", "poisson")
    if process == "poisson":
        traffic = f"Poisson arrivals at {fmt_num(data['arrival_rate_per_s'])} req/s"
    else:
        replay = data["replay"]
        what = (
            "the log's arrival times replayed" if process == "replay" else "the log's rate profile followed"
        )
        traffic = (
            f"{what} at a mean of {fmt_num(replay['mean_rate_per_s'])} req/s "
            f"({replay['rate_factor']:.4g} × its own rate, on its own time scale)"
        )
    console.print(
        f"[bold]Simulation[/bold] of the plan ({routing}): {traffic}; "
        f"{data['service_model']} service, {data['dispatch']} dispatch, {data['requests']:,} requests × "
        f"{len(data['seeds'])} seeds, warm-up {data['warmup_fraction']:.0%} "
        f"({fmt_seconds(min(data['warmup_s']))}) discarded."
    )
    if data.get("rate_basis") and data["rate_basis"] != "mean":
        console.print(
            f"The plan: a mean of {fmt_num(data['plan_mean_rate_per_s'])} req/s, sized for "
            f"{fmt_num(data['plan_sizing_rate_per_s'])} req/s (its {data['rate_basis']} basis, "
            f"{data['plan_sizing_rate_per_s'] / data['plan_mean_rate_per_s']:.3g} × the mean)."
        )
    console.print(
        f"Analytical model: {data['analytical_model']} ({data['analytical_source']}); "
        "error % = (analytical − simulated) / simulated; CIs are Student-t 95% over seeds "
        "(with one seed, the order-statistic interval of the P99)."
    )
    slo = data["ttft_slo_s"]
    for name, pool in data["pools"].items():
        table = FitTable(
            title=(
                f"{name} pool: {pool['instances']:,} × {pool['slots_per_instance']} slots, "
                f"{pool['requests_measured']:,} requests measured"
                + (
                    ""
                    if pool.get("fleet_requests_measured") is None
                    else f" on its own stream at its rate (the fleet run measured "
                    f"{pool['fleet_requests_measured']:,})"
                )
                + ("" if pool["warmed_up"] else " — NOT WARMED UP")
            ),
        )
        table.add_column("metric", justify="left", wrap=True)
        table.add_column("analytical")
        table.add_column("simulated ± 95% CI")
        table.add_column("error")
        for key, label in _LABELS.items():
            row = pool[key]
            at = row.get("analytical_rate_per_s")
            table.add_row(
                label if at is None or row["analytical"] is None else f"{label} (at {fmt_num(at)} req/s)",
                _value(key, row["analytical"]),
                _value(key, row["simulated"]) + _half_width(key, row["ci95_half_width"], row["simulated"]),
                _error(row["error_pct"]),
            )
        console.print(table)
        console.print("  " + pool_verdict_sentence(pool, slo))
    style = (
        "bold green"
        if data["verdict"].startswith("PASS")
        else ("bold yellow" if data["verdict"].startswith("INCONCLUSIVE") else "bold red")
    )
    console.print(f"[{style}]{data['verdict']}[/{style}]")
    if data["notes"]:
        console.print(bullets(data["notes"], marker="  • "))
