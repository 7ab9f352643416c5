"""Building the cross-check report (``fleetopt simulate``, ``fleetopt plan --validate``): core's
:class:`~fleetopt.core.crosscheck.CrossCheckReport` as the document ``--format json|yaml`` prints
(and ``render/simulate.py`` draws). Its verdict and findings are worded by
:mod:`fleetopt.io.documents.words`.
"""

from __future__ import annotations

from typing import Any

from fleetopt.core.crosscheck import METRICS, CrossCheckReport, Verdict, min_requests_for_quantile
from fleetopt.io.documents.typed import finite_or_none
from fleetopt.io.documents.words import VERDICT_SENTENCES, finding_sentence


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
            "longest_sojourn_s": finite_or_none(row.longest_sojourn_s),
        }
        for key in METRICS:
            c = row.metrics[key]
            entry[key] = {
                "analytical": c.analytical,
                "simulated": finite_or_none(c.simulated),
                "ci95_half_width": finite_or_none(c.ci95_half_width),
                "error_pct": c.error_pct,
            }
            if c.analytical_rate_per_s is not None:  # a replay or profile: the rate it is predicted at
                entry[key]["analytical_rate_per_s"] = c.analytical_rate_per_s
        low, high = row.p99_ttft_interval_s
        entry["p99_ttft_interval_s"] = [finite_or_none(low), finite_or_none(high)]
        entry["verdict"] = row.verdict.value
        entry["slo_met"] = row.slo_met
        entry["optimistic_p99_ttft_s"] = row.optimistic_p99_ttft_s
        pools[row.prediction.name] = entry
    verdict = VERDICT_SENTENCES[report.verdict.value]
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


def crosscheck_run_document(
    report: CrossCheckReport,
    *,
    workload_name: str,
    arrival_process: str,
    reevaluated_for_other_workload: bool = False,
    mean_rate_per_s: float | None = None,
    rate_factor: float | None = None,
    rate_window_s: float | None = None,
    plan_path: str | None = None,
) -> dict[str, Any]:
    """A cross-check of a plan (``simulate``, ``plan --validate``) as the document it prints: the
    report, the arrivals simulated (``arrival_process``; a replay's or profile's mean rate, its factor
    over the log's own and its window) and the workload (``reevaluated_for_other_workload``: not the
    plan's own, so the predictions were re-evaluated for it)."""
    document = crosscheck_document(report)
    document["arrival_process"] = arrival_process
    document["workload"] = workload_name
    setup = report.setup
    document["rate_basis"] = setup.rate_basis
    document["plan_mean_rate_per_s"] = setup.mean_rate_per_s
    document["plan_sizing_rate_per_s"] = setup.arrival_rate_per_s
    if arrival_process != "poisson":
        document["replay"] = {
            "mean_rate_per_s": mean_rate_per_s,
            "rate_factor": rate_factor,
            "window_s": rate_window_s,
        }
        document["notes"].append(
            f"arrivals: the log's {'arrival times' if arrival_process == 'replay' else 'rate profile'} "
            f"at {rate_factor:.4g} × its own rate (mean {mean_rate_per_s:,.4g} req/s), on its "
            "own time scale; analytical utilization and TPOT are the pools re-evaluated window by window "
            "over that profile and averaged (time averages, at its mean rate), the P99s the plan's "
            f"predictions at the rate it was sized for ({setup.arrival_rate_per_s:,.4g} req/s: the busiest "
            "stretches set them)"
        )
    if reevaluated_for_other_workload:
        document["notes"].insert(
            0,
            f"the workload {workload_name!r} differs from the one the plan was computed for: the "
            "predictions were re-evaluated for it",
        )
    return document if plan_path is None else {"plan": plan_path, **document}
