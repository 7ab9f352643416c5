"""The cross-check report (``fleetopt simulate``, ``fleetopt plan --validate``): its words, its
document (what ``--format json|yaml`` prints) and its table, drawn from that same document.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from fleetopt.api import CrossCheck
from fleetopt.core.crosscheck import METRICS, CrossCheckReport, Finding, FindingKind, Verdict
from fleetopt.render.output import NOT_APPLICABLE, fmt_num, fmt_seconds

if TYPE_CHECKING:  # rich is imported when a table is drawn, not for --format json|yaml
    from rich.console import Console

_VERDICTS = {
    Verdict.FAIL: "FAIL: a simulated P99 TTFT exceeds the SLO",
    Verdict.PASS_OPTIMISTIC: (
        "PASS with a caveat: every pool meets the SLO, but the analytical P99 TTFT is optimistic"
    ),
    Verdict.PASS: "PASS: every pool meets the SLO in simulation",
}


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
    for row in report.pools:
        pool = row.prediction.simulated
        entry: dict[str, Any] = {
            "instances": pool.instances,
            "slots_per_instance": pool.slots_per_instance,
            "servers": pool.servers,
            "context_tokens": pool.context_tokens,
            "arrival_rate_per_s": row.prediction.arrival_rate_per_s,
            "requests_measured": row.requests_measured,
            "warmed_up": row.warmed_up,
            "longest_sojourn_s": row.longest_sojourn_s,
        }
        for key in METRICS:
            c = row.metrics[key]
            entry[key] = {
                "analytical": c.analytical,
                "simulated": c.simulated,
                "ci95_half_width": c.ci95_half_width,
                "error_pct": c.error_pct,
            }
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
        "warmed_up": report.warmed_up,
        "slo_met": report.slo_met,
        "verdict": verdict,
        "pools": pools,
        "notes": [finding_sentence(f) for f in report.findings],
    }


def crosscheck_run_document(check: CrossCheck, plan_path: str | None = None) -> dict[str, Any]:
    """A cross-check of a plan (``simulate``, ``plan --validate``) as the document it prints."""
    document = crosscheck_document(check.report)
    document["arrival_process"] = check.arrival_process
    document["workload"] = check.workload_name
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
        table = FitTable(
            title=(
                f"{name} pool: {pool['instances']:,} × {pool['slots_per_instance']} slots, "
                f"{pool['requests_measured']:,} requests measured"
                + ("" if pool["warmed_up"] else " — NOT WARMED UP")
            ),
        )
        table.add_column("metric", justify="left", wrap=True)
        table.add_column("analytical")
        table.add_column("simulated ± 95% CI")
        table.add_column("error")
        for key, label in _LABELS.items():
            row = pool[key]
            table.add_row(
                label,
                _value(key, row["analytical"]),
                _value(key, row["simulated"]) + _half_width(key, row["ci95_half_width"], row["simulated"]),
                _error(row["error_pct"]),
            )
        console.print(table)
        p99 = pool["p99_ttft_s"]["simulated"]
        if not _finite(p99):
            console.print("  no request was measured in this pool: no simulated TTFT to compare")
            continue
        mark = "[green]meets[/green]" if pool["slo_met"] else "[bold red]EXCEEDS[/bold red]"
        console.print(f"  simulated P99 TTFT {fmt_seconds(p99)} {mark} the {fmt_seconds(slo)} SLO")
    style = "bold green" if data["verdict"].startswith("PASS") else "bold red"
    console.print(f"[{style}]{data['verdict']}[/{style}]")
    if data["notes"]:
        console.print(bullets(data["notes"], marker="  • "))
