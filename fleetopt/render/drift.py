"""The ``fleetopt drift`` report: one dictionary (JSON/YAML), a table for people, a markdown PR comment."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from fleetopt.core.drift import (
    DriftCheck,
    DriftReason,
    DriftResult,
    FitProblem,
    FleetFit,
    PlannedFleet,
    Tolerances,
    WorkloadSummary,
    relative_change,
)
from fleetopt.core.planner import FleetCandidate, PlanOptions
from fleetopt.core.sizing import PoolSizing
from fleetopt.defaults import HOURS_PER_YEAR
from fleetopt.render.markdown import md_bullets, md_table
from fleetopt.render.output import fmt_num, fmt_pct, fmt_seconds, fmt_usd

if TYPE_CHECKING:  # rich is imported when a table is drawn, not for --format json|yaml
    from rich.console import Console

DRIFT_KIND = "fleetopt-drift"


def _change(planned: float | None, today: float | None) -> dict[str, float | None]:
    return {"planned": planned, "today": today, "change": relative_change(today, planned)}


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def problem_sentence(problem: FitProblem, pool: PoolSizing, options: PlanOptions) -> str:
    """What breaks in one evaluated pool, in words (from its figures and the plan's options)."""
    if problem is FitProblem.NO_INSTANCES:
        return f"receives {pool.arrival_rate_per_s:.4g} req/s but has no instances"
    if problem is FitProblem.SLOTS_OVER_KV:
        return (
            f"{pool.slots_per_instance} slots exceed the KV limit {pool.kv_slot_limit} "
            f"at {pool.context_tokens:,} tokens"
        )
    if problem is FitProblem.UNSTABLE:
        return (
            f"utilization {pool.utilization:.3f} > 1: the pool cannot keep up "
            "(its queue and P99 TTFT grow without bound)"
        )
    if problem is FitProblem.OVER_CAP:
        return f"utilization {pool.utilization:.3f} > cap {options.max_utilization:.3f}"
    if problem is FitProblem.TTFT_OVER_SLO:
        return f"P99 TTFT {pool.p99_ttft_s * 1e3:.1f} ms > SLO {options.ttft_slo_s * 1e3:.1f} ms"
    return f"iteration time {pool.iteration_s * 1e3:.1f} ms > TPOT SLO {options.tpot_slo_s * 1e3:.1f} ms"


def reason_sentence(
    reason: DriftReason, result: DriftResult, options: PlanOptions, tolerances: Tolerances
) -> str:
    """One reason for a drift verdict, in words, with the numbers behind it."""
    check = reason.check
    if check is DriftCheck.CONTEXT:
        return (
            f"{result.beyond_long_context_fraction:.4%} of today's requests are longer than the long pool's "
            f"context {options.long_context_tokens:,} tokens (longest {result.longest_request_tokens:,}): "
            "the fleet cannot serve them"
        )
    if check in (DriftCheck.FIT, DriftCheck.HEADROOM):
        fit = result.fit if check is DriftCheck.FIT else result.headroom_fit
        pool = next(p for p in fit.pools if p.name == reason.pool)
        where = f"{reason.pool} pool" + (
            f" at +{tolerances.min_headroom:.0%} traffic" if check is DriftCheck.HEADROOM else ""
        )
        return f"{where}: {problem_sentence(reason.problem, pool.sizing, options)}"
    if check is DriftCheck.REPLAN:
        return "no fleet meets the SLO and the utilization cap on today's workload"
    if check is DriftCheck.COST:
        return (
            f"re-planning today changes the cost by {result.cost_change:+.1%} ({result.gpu_change:+d} GPUs), "
            f"beyond ±{tolerances.max_cost_change:.1%}"
        )
    ks = result.ks
    return (
        f"the total-token distribution moved: KS distance ≥ {ks.lower:.3f} "
        f"(estimate {ks.estimate:.4f} ± {ks.resolution / 2:.4f}) > {tolerances.max_ks:g}"
    )


def _reason_document(
    reason: DriftReason, result: DriftResult, options: PlanOptions, tolerances: Tolerances
) -> dict[str, Any]:
    message = reason_sentence(reason, result, options, tolerances)
    return {"check": reason.check.value, "pool": reason.pool, "message": message}


def _fit_document(fit: FleetFit, planned_pools: Mapping[str, Any], options: PlanOptions) -> dict[str, Any]:
    pools = {}
    for pool in fit.pools:
        s = pool.sizing
        planned = planned_pools.get(pool.name, {})
        unstable = s.arrival_rate_per_s > 0 and (s.instances < 1 or not s.utilization < 1.0)
        pools[pool.name] = {
            "instances": s.instances,
            "slots_per_instance": s.slots_per_instance,
            "gpus": s.gpus,
            "context_tokens": s.context_tokens,
            "arrival_rate_per_s": s.arrival_rate_per_s,
            "planned_arrival_rate_per_s": planned.get("arrival_rate_per_s"),
            "utilization": _finite(s.utilization),
            "planned_utilization": planned.get("utilization"),
            "max_utilization": options.max_utilization,
            "utilization_headroom": _finite(pool.utilization_headroom),
            "rate_headroom": _finite(pool.rate_headroom),
            "p99_ttft_s": None if unstable else _finite(s.p99_ttft_s),
            "planned_p99_ttft_s": planned.get("p99_ttft_s"),
            "ttft_slo_s": options.ttft_slo_s,
            "ttft_headroom_s": None if unstable else _finite(pool.ttft_headroom_s),
            "unstable": unstable,
            "fits": pool.fits,
            "problems": [problem_sentence(problem, s, options) for problem in pool.problems],
        }
    return {
        "fits": fit.fits,
        "arrival_rate_per_s": fit.arrival_rate_per_s,
        "alpha": fit.alpha,
        "beta": fit.beta,
        "short_traffic_fraction": fit.short_traffic_fraction,
        "pools": pools,
    }


def _replan_document(replan: FleetCandidate | None, result: DriftResult) -> dict[str, Any]:
    if replan is None:
        return {"feasible": False}
    pools = dict(zip(replan.pool_names, replan.pools, strict=True))
    return {
        "feasible": True,
        "b_short_tokens": replan.b_short_tokens,
        "boundaries_tokens": list(replan.routing.boundaries_tokens),
        "gamma": replan.gamma if replan.b_short_tokens is not None else None,
        "total_gpus": replan.total_gpus,
        "cost_per_year_usd": replan.cost_per_year_usd,
        "gpu_change": result.gpu_change,
        "cost_change": result.cost_change,
        "pools": {
            name: {"instances": p.instances, "slots_per_instance": p.slots_per_instance, "gpus": p.gpus}
            for name, p in pools.items()
        },
    }


def drift_document(
    result: DriftResult,
    *,
    document: Mapping[str, Any],
    plan_path: str,
    today_label: str,
    today_requests: int | None,
    rate_origin: str,
    options: PlanOptions,
    tolerances: Tolerances,
    planned: WorkloadSummary,
    current: WorkloadSummary,
    fleet: PlannedFleet,
) -> dict[str, Any]:
    """The drift report as one plain dictionary (schema in docs/ci.md). ``fleet``: the plan's best
    fleet as its reader checked it (routing and GPUs come from there, not the raw document)."""
    inputs, best = document["inputs"], document["best"]
    homogeneous = fleet.routing.pool_count == 1
    tokens: dict[str, Any] = {}
    for column in ("total", "input", "output"):
        before, after = planned.token_quantiles.get(column), current.token_quantiles.get(column)
        if before is None or after is None:
            continue
        tokens[column] = {
            label: _change(b, a) for label, b, a in zip(("p50", "p90", "p99"), before, after, strict=True)
        }
    ks = result.ks
    return {
        "kind": DRIFT_KIND,
        "verdict": "drift" if result.drifted else "fits",
        "exit_code": 1 if result.drifted else 0,
        "reasons": [
            {
                "check": r.check.value,
                "pool": r.pool,
                "message": reason_sentence(r, result, options, tolerances),
            }
            for r in result.reasons
        ],
        "plan": {
            "file": plan_path,
            "workload": inputs.get("workload"),
            "fleetopt_version": document.get("fleetopt_version"),
            "arrival_rate_per_s": inputs["arrival_rate_per_s"],
            "sizing_rate_per_s": inputs.get("sizing_rate_per_s", inputs["arrival_rate_per_s"]),
            "rate_basis": options.rate_basis,
            "ttft_slo_s": options.ttft_slo_s,
            "max_utilization": options.max_utilization,
            "service_model": options.service_model,
            "compressibility": options.compressibility,
            "b_short_tokens": None if homogeneous else fleet.b_short_tokens,
            "gamma": None if homogeneous else fleet.gamma,
            "total_gpus": fleet.total_gpus,
            "cost_per_year_usd": fleet.cost_per_hour_usd * HOURS_PER_YEAR,
        },
        "today": {
            "workload": today_label,
            "requests": today_requests,
            "arrival_rate_per_s": options.mean_rate_per_s,
            "arrival_rate_origin": rate_origin,
            "sizing_rate_per_s": result.arrival_rate_per_s,
            "longest_request_tokens": result.longest_request_tokens,
            "beyond_long_context_fraction": result.beyond_long_context_fraction,
        },
        "tolerances": {
            "max_cost_change": tolerances.max_cost_change,
            "max_ks": tolerances.max_ks,
            "min_headroom": tolerances.min_headroom,
        },
        "fit": None if result.fit is None else _fit_document(result.fit, best["pools"], options),
        "headroom_check": None
        if result.headroom_fit is None
        else {
            "rate_factor": 1.0 + tolerances.min_headroom,
            **_fit_document(result.headroom_fit, {}, options),
        },
        "replan": None if result.fit is None else _replan_document(result.replan, result),
        "shift": {
            "ks_total_tokens": {
                "lower": ks.lower,
                "upper": ks.upper,
                "estimate": ks.estimate,
                "resolution": ks.resolution,
                "exact": ks.exact,
            },
            "tokens": tokens,
            "mean_total_tokens": _change(planned.mean_total_tokens, current.mean_total_tokens),
            "alpha": _change(planned.alpha, current.alpha),
            "beta": _change(planned.beta, current.beta),
            "arrival_rate_per_s": _change(inputs["arrival_rate_per_s"], options.mean_rate_per_s),
            "sizing_rate_per_s": _change(
                inputs.get("sizing_rate_per_s", inputs["arrival_rate_per_s"]), result.arrival_rate_per_s
            ),
            "interarrival_scv": _change(planned.interarrival_scv, current.interarrival_scv),
        },
    }


# --------------------------------------------------------------------------------------------- text


def _ttft(pool: Mapping[str, Any]) -> str:
    return "unbounded" if pool["unstable"] else fmt_seconds(pool["p99_ttft_s"])


def _verdict_line(data: Mapping[str, Any]) -> str:
    if data["verdict"] == "fits":
        return "FITS: the planned fleet still fits today's workload within tolerance (exit 0)"
    count = len(data["reasons"])
    return f"DRIFT: {count} reason{'s' if count != 1 else ''} (exit 1)"


def _context_line(data: Mapping[str, Any]) -> str:
    plan, today = data["plan"], data["today"]
    origin = {"given": "--rate", "observed": "observed in the log", "planned": "the planned rate"}
    fleet = (
        "one homogeneous pool"
        if plan["b_short_tokens"] is None
        else f"B_short {plan['b_short_tokens']:,}, γ {plan['gamma']:g}"
    )
    sized = ""
    if plan.get("rate_basis", "mean") != "mean":
        sized = f", sized on its {plan['rate_basis']} at {fmt_num(today['sizing_rate_per_s'])} req/s"
    return (
        f"plan {plan['file']} ({plan['workload']}, {fmt_num(plan['arrival_rate_per_s'])} req/s, {fleet}, "
        f"{plan['total_gpus']:,} GPUs) vs {today['workload']} at "
        f"{fmt_num(today['arrival_rate_per_s'])} req/s "
        f"({origin.get(today['arrival_rate_origin'], today['arrival_rate_origin'])}{sized})"
    )


def _replan_line(data: Mapping[str, Any]) -> str | None:
    replan, plan = data["replan"], data["plan"]
    if replan is None:
        return None
    if not replan["feasible"]:
        return "re-plan today: no fleet meets the SLO and the cap"

    def shape(b: int | None, gamma: float | None) -> str:
        return "homogeneous" if b is None else f"B* {b:,}, γ* {gamma:g}"

    return (
        f"re-plan today: {replan['total_gpus']:,} GPUs ({replan['gpu_change']:+,d}), "
        f"{fmt_usd(replan['cost_per_year_usd'])}/year ({fmt_pct(replan['cost_change'], True)} vs planned "
        f"{fmt_usd(plan['cost_per_year_usd'])}), {shape(plan['b_short_tokens'], plan['gamma'])} → "
        f"{shape(replan['b_short_tokens'], replan['gamma'])}"
    )


def _shift_rows(data: Mapping[str, Any]) -> list[tuple[str, str, str, str]]:
    shift = data["shift"]
    ks = shift["ks_total_tokens"]
    ks_text = (
        "0 (identical data)"
        if ks["exact"]
        else f"{ks['estimate']:.4f} ± {ks['resolution'] / 2:.4f} (≥ {ks['lower']:.3f})"
    )
    rows = [("KS distance, total tokens", "", "", ks_text)]
    for label, values in shift["tokens"].get("total", {}).items():
        rows.append(
            (f"total tokens {label}", fmt_num(values["planned"]), fmt_num(values["today"]),
             fmt_pct(values["change"], True))
        )  # fmt: skip
    for key, label in (("alpha", "α = F(B_short)"), ("beta", "β = F(γB) − F(B)")):
        values = shift[key]
        if values["planned"] is None and values["today"] is None:
            continue
        delta = (
            None
            if values["planned"] is None or values["today"] is None
            else values["today"] - values["planned"]
        )
        rows.append(
            (label, fmt_num(values["planned"]), fmt_num(values["today"]),
             "–" if delta is None else f"{delta:+.3f}")
        )  # fmt: skip
    for key, label in (
        ("arrival_rate_per_s", "rate, req/s"),
        ("sizing_rate_per_s", "rate sized for, req/s"),
        ("interarrival_scv", "inter-arrival SCV"),
    ):
        values = shift[key]
        rows.append(
            (label, fmt_num(values["planned"]), fmt_num(values["today"]), fmt_pct(values["change"], True))
        )
    return rows


def draw_drift(console: Console, data: Mapping[str, Any]) -> None:
    """The short human summary: verdict, reasons, pools, re-plan, workload shift."""
    from fleetopt.render.layout import FitTable, bullets

    console.print(_verdict_line(data), markup=False)
    console.print(_context_line(data), markup=False)
    if data["reasons"]:
        console.print(bullets(reason["message"] for reason in data["reasons"]))
    fit = data["fit"]
    if fit is not None:
        table = FitTable(title="The planned fleet under today's traffic")
        for column in ("pool", "instances × slots", "req/s", "utilization (cap)", "P99 TTFT (SLO)", "status"):
            table.add_column(column, justify="left" if column in ("pool", "status") else "right")
        for name, pool in fit["pools"].items():
            table.add_row(
                name,
                f"{pool['instances']:,} × {pool['slots_per_instance']}",
                fmt_num(pool["arrival_rate_per_s"]),
                f"{fmt_num(pool['utilization'], 3)} ({pool['max_utilization']:g})",
                f"{_ttft(pool)} ({fmt_seconds(pool['ttft_slo_s'])})",
                "ok" if pool["fits"] else "BROKEN",
            )
        console.print(table)
    line = _replan_line(data)
    if line:
        console.print(line, markup=False)
    shift = FitTable(title="How the workload moved")
    for column in ("", "planned", "today", "change"):
        shift.add_column(column, justify="left" if not column else "right", wrap=not column)
    for row in _shift_rows(data):
        shift.add_row(*row)
    console.print(shift)


def drift_markdown(data: Mapping[str, Any]) -> str:
    """A compact pull-request comment: verdict first, the reasons, a table of pools, the shift."""
    lines = [f"### fleetopt drift — **{_verdict_line(data)}**", "", _context_line(data), ""]
    if data["reasons"]:
        lines += md_bullets(r["message"] for r in data["reasons"]) + [""]
    fit = data["fit"]
    if fit is not None:
        headers = ("pool", "instances × slots", "req/s", "utilization (cap)", "P99 TTFT (SLO)")
        headers += ("TTFT headroom", "status")
        rows = [
            (
                name,
                f"{pool['instances']:,} × {pool['slots_per_instance']}",
                fmt_num(pool["arrival_rate_per_s"]),
                f"{fmt_num(pool['utilization'], 3)} ({pool['max_utilization']:g})",
                f"{_ttft(pool)} ({fmt_seconds(pool['ttft_slo_s'])})",
                fmt_seconds(pool["ttft_headroom_s"]),
                "ok" if pool["fits"] else "**broken**",
            )
            for name, pool in fit["pools"].items()
        ]
        lines += md_table(headers, rows, align="lrrrrrl") + [""]
    line = _replan_line(data)
    if line:
        lines += [line[0].upper() + line[1:], ""]
    lines += md_table(("workload", "planned", "today", "change"), _shift_rows(data))
    return "\n".join(lines) + "\n"
