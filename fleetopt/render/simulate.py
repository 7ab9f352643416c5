"""The cross-check report (``fleetopt simulate``, ``fleetopt plan --validate``): its words, its
document (what ``--format json|yaml`` prints) and its table, drawn from that same document.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from fleetopt.api import CrossCheck
from fleetopt.core.crosscheck import (
    METRICS,
    CrossCheckReport,
    Finding,
    FindingKind,
    Verdict,
    min_requests_for_quantile,
)
from fleetopt.render.output import NOT_APPLICABLE, fmt_num, fmt_seconds

if TYPE_CHECKING:  # rich is imported when a table is drawn, not for --format json|yaml
    from rich.console import Console

_VERDICTS = {
    Verdict.FAIL: "FAIL: a simulated P99 TTFT exceeds the SLO",
    Verdict.INCONCLUSIVE: (
        "INCONCLUSIVE: no pool breaks the SLO for certain, but some pool's P99 TTFT cannot be told "
        "from it (too few requests, or a 95% interval that straddles the SLO)"
    ),
    Verdict.PASS_OPTIMISTIC: (
        "PASS with a caveat: every pool meets the SLO, but the analytical P99 TTFT is optimistic"
    ),
    Verdict.PASS: "PASS: every pool meets the SLO in simulation",
}


def _measured(value: float | None) -> float | None:
    """A measured figure for a document: None when there is none (never NaN or ∞)."""
    return value if value is not None and math.isfinite(value) else None


def finding_sentence(finding: Finding) -> str:
    """One finding in words."""
    name = finding.pool
    if finding.kind is FindingKind.SLO_BREACH:
        return (
            f"SLO BREACH in the {name} pool: simulated P99 TTFT {finding.simulated:.4g} s "
            f"(± {finding.half_width:.2g}) exceeds the SLO of {finding.limit:.4g} s by "
            f"{finding.simulated - finding.limit:.4g} s"
        )
    if finding.kind is FindingKind.OPTIMISTIC:
        gap, predicted = finding.simulated - finding.predicted, finding.predicted
        share = f" ({100 * gap / predicted:.1f}%)" if predicted > 0 else ""
        return (
            f"{name} pool: the analytical model is optimistic — simulated P99 TTFT "
            f"{finding.simulated:.4g} s is {gap:.4g} s{share} above the predicted {predicted:.4g} s"
        )
    if finding.kind is FindingKind.TOO_FEW_REQUESTS:
        return (
            f"{name} pool is INCONCLUSIVE: {int(finding.simulated):,} requests measured, fewer than the "
            f"{int(finding.limit):,} a 95% interval of a P99 needs; simulate more requests or seeds"
        )
    if finding.kind is FindingKind.STRADDLES_SLO:
        high = "unbounded" if not math.isfinite(finding.high) else f"{finding.high:.4g} s"
        return (
            f"{name} pool is INCONCLUSIVE: its simulated P99 TTFT {finding.simulated:.4g} s has a 95% "
            f"interval [{finding.low:.4g} s, {high}] that straddles the SLO of {finding.limit:.4g} s; "
            "simulate more seeds"
        )
    if finding.kind is FindingKind.NOT_WARMED_UP:
        return (
            f"{name} pool is NOT warmed up: its longest sojourn ({finding.simulated:.4g} s) "
            f"outlasts the warm-up ({finding.limit:.4g} s), so the utilization reads low; "
            "simulate more requests"
        )
    return (
        f"{name} pool is OVERLOADED in simulation (utilization {finding.simulated:.3f}, "
        f"predicted {finding.predicted:.3f}): the analytical model under-counts its work"
    )


def crosscheck_document(report: CrossCheckReport) -> dict[str, Any]:
    """The report as plain data (what ``--format json|yaml`` prints; the table is drawn from it)."""
    result, setup = report.result, report.setup
    pools: dict[str, Any] = {}
    for index, row in enumerate(report.pools):
        pool = row.prediction.simulated
        entry: dict[str, Any] = {
            "instances": pool.instances,
            "slots_per_instance": pool.slots_per_instance,
            "servers": pool.servers,
            "context_tokens": pool.context_tokens,
            "arrival_rate_per_s": row.prediction.arrival_rate_per_s,
            "arrival_scv": setup.arrival_scvs[index] if index < len(setup.arrival_scvs) else 1.0,
            "requests_measured": row.requests_measured,
            "fleet_requests_measured": row.fleet_requests_measured,
            "requests_needed": min_requests_for_quantile(setup.quantile),
            "warmed_up": row.warmed_up,
            "longest_sojourn_s": _measured(row.longest_sojourn_s),
        }
        for key in METRICS:
            c = row.metrics[key]
            entry[key] = {
                "analytical": c.analytical,
                "simulated": _measured(c.simulated),
                "ci95_half_width": _measured(c.ci95_half_width),
                "error_pct": c.error_pct,
            }
            if c.analytical_rate_per_s is not None:  # a replay or profile: the rate it is predicted at
                entry[key]["analytical_rate_per_s"] = c.analytical_rate_per_s
        low, high = row.p99_ttft_interval_s
        entry["p99_ttft_interval_s"] = [_measured(low), _measured(high)]
        entry["verdict"] = row.verdict.value
        entry["slo_met"] = row.slo_met
        entry["optimistic_p99_ttft_s"] = row.optimistic_p99_ttft_s
        pools[row.prediction.name] = entry
    verdict = _VERDICTS[report.verdict]
    if not report.warmed_up:
        verdict += " (some pool is not warmed up: simulate more requests)"
    routing = setup.routing
    return {
        "kind": "fleetopt-validation",
        "service_model": result.service_model,
        "analytical_model": setup.analytical_model,
        "analytical_source": setup.analytical_source,
        "dispatch": result.dispatch,
        "arrival_rate_per_s": result.arrival_rate_per_s,
        "ttft_slo_s": setup.ttft_slo_s,
        "b_short_tokens": routing.b_short_tokens,
        "boundaries_tokens": list(routing.boundaries_tokens),
        "gamma": routing.gamma,
        "compressibility": routing.compressibility,
        "requests": result.requests,
        "seeds": list(result.seeds),
        "warmup_fraction": result.warmup_fraction,
        "warmup_s": list(result.warmup_s),
        "window_s": list(result.window_s),
        "requests_per_seed": list(result.requests_per_seed),
        "warmed_up": report.warmed_up,
        "slo_met": report.slo_met,
        "verdict_code": report.verdict.value,
        "conclusive": report.verdict is not Verdict.INCONCLUSIVE,
        "verdict": verdict,
        "pools": pools,
        "notes": [finding_sentence(f) for f in report.findings],
    }


def crosscheck_run_document(check: CrossCheck, plan_path: str | None = None) -> dict[str, Any]:
    """A cross-check of a plan (``simulate``, ``plan --validate``) as the document it prints."""
    document = crosscheck_document(check.report)
    document["arrival_process"] = check.arrival_process
    document["workload"] = check.workload_name
    setup = check.report.setup
    document["rate_basis"] = setup.rate_basis
    document["plan_mean_rate_per_s"] = setup.mean_rate_per_s
    document["plan_sizing_rate_per_s"] = setup.arrival_rate_per_s
    if check.arrival_process != "poisson":
        document["replay"] = {
            "mean_rate_per_s": check.mean_rate_per_s,
            "rate_factor": check.rate_factor,
            "window_s": check.rate_window_s,
        }
        document["notes"].append(
            f"arrivals: the log's {'arrival times' if check.arrival_process == 'replay' else 'rate profile'} "
            f"at {check.rate_factor:.4g} × its own rate (mean {check.mean_rate_per_s:,.4g} req/s), on its "
            "own time scale; analytical utilization and TPOT are the pools re-evaluated window by window "
            "over that profile and averaged (time averages, at its mean rate), the P99s the plan's "
            f"predictions at the rate it was sized for ({setup.arrival_rate_per_s:,.4g} req/s: the busiest "
            "stretches set them)"
        )
    if check.reevaluated_for_other_workload:
        document["notes"].insert(
            0,
            f"the workload {check.workload_name!r} differs from the one the plan was computed for: the "
            "predictions were re-evaluated for it",
        )
    return document if plan_path is None else {"plan": plan_path, **document}


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
