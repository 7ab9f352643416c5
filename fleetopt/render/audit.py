"""``fleetopt audit`` as one plain dictionary per mode, and drawn for people: the words live here.

Core returns numbers and enums (:class:`fleetopt.core.savings.AuditResult`,
:class:`fleetopt.core.audit.WorkloadAudit`); this module words them — each estimate's source and
assumptions, why the estimates differ, the order, the lever, the notes.
:func:`numbers_audit_document` / :func:`workload_audit_document` build the dictionary that
``--format json|yaml`` prints; :func:`draw_numbers_audit` / :func:`draw_workload_audit` draw the
same dictionary as tables (so the terminal and the machine formats carry the same figures).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from fleetopt.core.audit import (
    AuditNote,
    Lever,
    LeverAdvice,
    RateSweepScope,
    SlotsBasis,
    WorkloadAudit,
    WorkloadFinding,
)
from fleetopt.core.savings import AuditResult, EstimateKind, SavingsEstimate, SavingsFinding
from fleetopt.core.service import PoolHardware
from fleetopt.core.sizing import PoolSizing
from fleetopt.defaults import HOURS_PER_YEAR
from fleetopt.io.documents.words import SPLIT_ASSUMED_NOTE, fleet_reason, plan_notes, pool_reason
from fleetopt.io.units import fmt_count, fmt_num, fmt_pct, fmt_seconds, fmt_usd
from fleetopt.render.output import to_jsonable


def _hardware(hw: PoolHardware) -> dict[str, Any]:
    return {
        "serving_profile": hw.serving_name,
        "model": hw.model_name,
        "gpu": hw.gpu_name,
        "gpus_per_instance": hw.gpus_per_instance,
        "gpu_hour_usd": hw.gpu_hour_usd,
    }


def workload_audit_document(
    audit: WorkloadAudit,
    *,
    workload_label: str,
    arrival_rate_origin: str,
    plot_path: str | None = None,
    split_assumed: bool = False,
) -> dict[str, Any]:
    """Every figure of the audit as a JSON-ready dictionary (the ``--format json`` output)."""
    o = audit.options
    p = o.plan
    mu = audit.throughputs
    current = None
    if audit.current is not None:
        sizing = audit.current.sizing
        current = {
            "gpus": audit.current.gpus,
            "instances": audit.current.instances,
            "context_tokens": audit.current.context_tokens,
            "slots_per_instance": audit.current.slots_per_instance,
            "feasible": sizing.feasible,
            "reason": pool_reason(sizing),
            "utilization": sizing.utilization,
            "p99_wait_s": sizing.p99_wait_s,
            "p99_ttft_s": sizing.p99_ttft_s,
            "cost_per_year_usd": audit.current.gpus * audit.plan.long_hardware.gpu_hour_usd * HOURS_PER_YEAR,
        }
    best = audit.plan.best
    document = {
        "mode": "workload",
        "inputs": {
            "workload": workload_label,
            "arrival_rate_per_s": p.sizing_rate_per_s,
            "arrival_rate_origin": arrival_rate_origin,
            "ttft_slo_s": p.ttft_slo_s,
            "service_model": p.service_model,
            "max_utilization": p.max_utilization,
            "compressibility": p.compressibility,
            "long_context_tokens": p.long_context_tokens,
            "b_short_candidates": list(p.b_short_candidates or ()),
            "gammas": list(p.gammas),
            "b_short_tokens": o.b_short_tokens,
            "gamma": o.gamma,
            "current_gpus": o.current_gpus,
            "current_context_tokens": o.current_context_tokens,
            "profiles": {
                "short": _hardware(audit.plan.short_hardware),
                "long": _hardware(audit.plan.long_hardware),
            },
        },
        "b_short_tokens": audit.b_short_tokens,
        "b_short_origin": "given" if o.b_short_tokens is not None else "pool-routing optimum",
        "gamma": audit.gamma,
        "gamma_origin": "given" if o.gamma is not None else "cheapest γ at this B",
        "alpha": audit.alpha,
        "beta": audit.beta,
        "compressibility": audit.compressibility,
        "throughputs": {
            **dataclasses.asdict(mu),
            "throughput_ratio": mu.throughput_ratio,
            "throughput_ratio_kv": mu.throughput_ratio_kv,
            "cliff_ratio": mu.cliff_ratio,
        },
        "estimates": [_workload_estimate(audit, e) for e in audit.estimates],
        "order": order_text(audit),
        "why_they_differ": workload_reasons(audit),
        "archetype": audit.archetype,
        "lever": _lever_document(audit.lever),
        "current": current,
        "best_plan": None
        if best is None
        else {"b_short_tokens": best.b_short_tokens, "gamma": best.gamma, "total_gpus": best.total_gpus},
        "savings_vs_b_short": [_threshold_document(figure) for figure in audit.thresholds],
        "savings_vs_b_short_rows": list(audit.threshold_rows),
        "fleet_vs_rate": list(audit.rate_rows),
        "fleet_vs_rate_note": None if audit.rate_sweep is None else rate_sweep_note(audit.rate_sweep),
        "plot": plot_path,
        "pricing": {"hours_per_year": HOURS_PER_YEAR},
        "notes": ([SPLIT_ASSUMED_NOTE] if split_assumed else [])
        + [audit_setting_note(audit.options.plan.service_model, audit.plan.short_hardware.serving_name)]
        + plan_notes(audit.plan)
        + [_note(audit, note) for note in audit.notes],
    }
    return to_jsonable(document)


def audit_setting_note(service_model: str, serving: str) -> str:
    """Why an audit's planner rows differ from ``fleetopt plan``'s fleet with the same flags."""
    from fleetopt.defaults import DEFAULT_SERVICE_MODEL, DEFAULT_SERVING

    setting = f"service model {service_model} and serving profile {serving}" + (
        " (the papers' setting: Eq. 3 and their A100 calibration)" if service_model == "lockstep" else ""
    )
    differs = service_model != DEFAULT_SERVICE_MODEL or serving != DEFAULT_SERVING
    return (
        f"the audit prices the papers' estimates with {setting}, at the mean rate; fleetopt plan sizes with "
        f"the {DEFAULT_SERVICE_MODEL} model and {DEFAULT_SERVING} unless told otherwise, and a log at its "
        "busiest minute (--rate-basis), so "
        + (
            "its GPU counts differ from these (give --service-model and --serving here for that setting)"
            if differs
            else "its GPU counts differ from these on a log with timestamps"
        )
    )


def _profile(hardware: Mapping[str, Any]) -> str:
    return (
        f"{hardware['serving_profile']} (TP {hardware['gpus_per_instance']}, "
        f"${hardware['gpu_hour_usd']:g}/GPU-h)"
    )


def draw_workload_audit(console, data: Mapping[str, Any]) -> None:
    """Draw :func:`workload_audit_document`'s dictionary as text and tables."""
    from fleetopt.render.layout import FitTable, bullets
    from fleetopt.render.plots import fleet_vs_rate_table, savings_vs_threshold_table

    inputs = data["inputs"]
    console.print(
        f"fleetopt audit — workload {inputs['workload']}, {fmt_num(inputs['arrival_rate_per_s'])} req/s "
        f"({inputs['arrival_rate_origin']}), P99 TTFT SLO {fmt_seconds(inputs['ttft_slo_s'])}, service model "
        f"{inputs['service_model']}, utilization cap {inputs['max_utilization']:.0%}, "
        f"p_c = {inputs['compressibility']:g}"
    )
    short, long = inputs["profiles"]["short"], inputs["profiles"]["long"]
    profiles = f"short pool {_profile(short)}" + ("" if long == short else f"; long pool {_profile(long)}")
    console.print(f"profiles — {profiles}; long context {inputs['long_context_tokens']:,} tokens")
    console.print(
        f"At B_short = {data['b_short_tokens']:,} ({data['b_short_origin']}) and γ = {data['gamma']:g} "
        f"({data['gamma_origin']}): α = F(B) = {data['alpha']:.4f}, β = F(γB) − F(B) = {data['beta']:.4f}"
    )
    mu = data["throughputs"]
    basis = "at the slot counts the planner chose" if mu["slots_basis"] == "planner" else "at the KV limits"
    long_text = "–" if mu["long_per_s"] is None else f"{mu['long_per_s']:.4g} ({mu['long_slots']} slots)"
    console.print(
        f"Throughput per instance, req/s ({basis}): μ_homo {mu['homogeneous_per_s']:.4g} "
        f"({mu['homogeneous_slots']} slots), μ_s {mu['short_per_s']:.4g} ({mu['short_slots']} slots), "
        f"μ_l {long_text} → ρ = μ_s/μ_homo = {mu['throughput_ratio']:.3g} "
        f"({mu['throughput_ratio_kv']:.3g} at the KV limits); cliff ratio n_max(B)/n_max(long) = "
        f"{mu['short_kv_slots']}/{mu['homogeneous_kv_slots']} = {mu['cliff_ratio']:.4g} "
        "(slots, not throughput)"
    )

    has_current = data["current"] is not None
    table = FitTable(title="The estimates")
    table.add_column("Estimate", justify="left", wrap=True)
    headers = ["Short + long", "Instances", "GPUs", "$/yr", "Savings (stated)"]
    headers += ["vs current"] if has_current else []
    headers += ["Saved/yr", "vs planner"]
    for header in headers:
        table.add_column(header, justify="right")
    for row in data["estimates"]:
        short_i, long_i = row["short_instances"], row["long_instances"]
        pools = "–" if short_i is None or long_i is None else f"{fmt_count(short_i)} + {fmt_count(long_i)}"
        instances = row["instances"]
        instance_text = fmt_count(instances)
        if (
            row["whole_instances"] is not None
            and instances is not None
            and row["whole_instances"] != instances
        ):
            instance_text = f"{instances:,.1f} → {row['whole_instances']:,}"
        factor = row["over_prediction_factor"]
        cells = [
            row["name"] + ("" if row["feasible"] else " ✗"),
            pools,
            instance_text,
            fmt_count(row["gpus"]),
            fmt_usd(row["cost_per_year_usd"]),
            fmt_pct(row["savings_fraction"]),
        ]
        cells += [fmt_pct(row["savings_vs_current"])] if has_current else []
        cells += [fmt_usd(row["saved_usd_per_year"]), "–" if factor is None else f"{factor:.2f}×"]
        table.add_row(*cells)
    console.print(table)
    baseline = "the current fleet" if has_current else "the homogeneous fleet"
    console.print(
        f"Saved/yr is against {baseline}; 'vs planner' = stated savings ÷ the planner's savings for the "
        "same fleet shape (pool routing for Eq. 7/8, C&R for the C&R rows): > 1 over-predicts."
    )
    console.print(f"Order of the three estimates (closed form, Eq. 8, planner): {data['order']}")
    console.print("Why they differ:")
    console.print(bullets(data["why_they_differ"]))
    console.print("Assumptions:")
    console.print(
        bullets(
            f"{row['name']} ({row['source']}): {row['assumptions']}"
            + ("" if row["feasible"] else f" Infeasible: {row['reason']}.")
            for row in data["estimates"]
        )
    )
    archetype = data["archetype"]
    console.print(
        f"Archetype {archetype['archetype']} at B = {archetype['b_short_tokens']:,} "
        f"(α = {archetype['alpha']:.3f}; {archetype['rule']}; FleetOpt §2.4)."
    )
    console.print(f"Lever: {data['lever']['lever']} — {data['lever']['text']}")
    current = data["current"]
    if current is not None:
        state = (
            f"utilization {current['utilization']:.1%}, P99 TTFT {fmt_seconds(current['p99_ttft_s'])}"
            if current["utilization"] is not None
            else "not evaluable"
        )
        verdict = "meets the SLO and cap" if current["feasible"] else f"does NOT fit: {current['reason']}"
        console.print(
            f"Current fleet: {fmt_count(current['gpus'])} GPUs = {current['instances']} instances at "
            f"{current['context_tokens']:,} tokens ({current['slots_per_instance']} slots each): "
            f"{state}; {verdict}."
        )
    if data["savings_vs_b_short_rows"]:
        console.print(savings_vs_threshold_table(data["savings_vs_b_short_rows"]))
        infeasible = [f for f in data["savings_vs_b_short"] if not f["routed_feasible"]]
        if infeasible:
            console.print(
                "Left out (no feasible pool-routing fleet): B = "
                + ", ".join(f"{f['b_short_tokens']:,}" for f in infeasible)
            )
    if data["fleet_vs_rate"]:
        console.print(fleet_vs_rate_table(data["fleet_vs_rate"]))
        console.print(f"({data['fleet_vs_rate_note']})")
    if data["notes"]:
        console.print(bullets(data["notes"], marker="Note: "))
    if data["plot"]:
        console.print(f"plot written to {data['plot']}")


# --- the words of the workload audit ----------------------------------------------------------------


def _pct(fraction: float | None) -> str:
    return "–" if fraction is None else f"{100.0 * fraction:.1f}%"


def _workload_source(audit: WorkloadAudit, kind: EstimateKind) -> str:
    if kind is EstimateKind.PLANNER_CR:
        return f"fleetopt planner, γ = {audit.gamma:g}"
    return _WORKLOAD_SOURCES[kind]


_WORKLOAD_SOURCES = {
    EstimateKind.PLANNER_HOMOGENEOUS: "fleetopt planner, one pool",
    EstimateKind.CURRENT: "given",
    EstimateKind.CLOSED_FORM: "pool-routing Eq. 7",
    EstimateKind.CLOSED_FORM_CLIFF: "FleetOpt §2.2 reading of Eq. 7",
    EstimateKind.EQ8: "pool-routing Eq. 8",
    EstimateKind.PLANNER_PR: "fleetopt planner, γ = 1",
    EstimateKind.CLOSED_FORM_CR: "pool-routing Eq. 7 + FleetOpt Eq. 14",
    EstimateKind.EQ8_CR: "pool-routing Eq. 8 with FleetOpt Eq. 14",
    EstimateKind.PLANNER_BEST: "fleetopt planner, full sweep",
}


def workload_assumptions(audit: WorkloadAudit, kind: EstimateKind) -> str:
    """What the method behind estimate ``kind`` takes for granted, with the audit's numbers."""
    p, mu = audit.options.plan, audit.throughputs
    alpha, gamma, cap = audit.alpha, audit.gamma, p.max_utilization
    if kind is EstimateKind.PLANNER_HOMOGENEOUS:
        return (
            f"One pool at {p.long_context_tokens:,} tokens taking all traffic, sized like every planner pool."
        )
    if kind is EstimateKind.CURRENT:
        current = audit.current
        sizing = current.sizing
        state = (
            f"utilization {sizing.utilization:.1%}, P99 TTFT {sizing.p99_ttft_s * 1e3:.1f} ms"
            if math.isfinite(sizing.utilization)
            else "no usable figures"
        )
        return (
            f"Homogeneous at {current.context_tokens:,} tokens, {current.slots_per_instance} slots per "
            f"instance; under this workload: {state}."
        )
    if kind is EstimateKind.CLOSED_FORM:
        slots_text = (
            "each pool at the slot count the planner chose"
            if mu.slots_basis is SlotsBasis.PLANNER
            else "each pool at its KV limit (the planner has no feasible pool here)"
        )
        return (
            f"α = {alpha:.4g}, ρ = μ_s/μ_homo = {mu.short_per_s:.4g}/{mu.homogeneous_per_s:.4g} = "
            f"{mu.throughput_ratio:.4g} ({slots_text}); the long pool is assumed to run at μ_homo. "
            "Applied to the homogeneous fleet."
        )
    if kind is EstimateKind.CLOSED_FORM_CLIFF:
        return (
            f"ρ = n_max(B)/n_max(long) = {mu.short_kv_slots}/{mu.homogeneous_kv_slots} = "
            f"{mu.cliff_ratio:.4g}: a slot ratio taken for a throughput ratio, as the papers do."
        )
    if kind is EstimateKind.EQ8:
        mu_long_text = "–" if mu.long_per_s is None else f"{mu.long_per_s:.4g}"
        return (
            f"G = αλ/μ_s + (1 − α)λ/μ_l with μ_s = {mu.short_per_s:.4g}, μ_l = {mu_long_text} req/s per "
            f"instance (μ_l on the requests above B), each pool divided by ρ_max = {cap:g}; no queueing, "
            "no SLO. Savings against λ/(μ_homo·ρ_max)."
        )
    if kind is EstimateKind.PLANNER_PR:
        return (
            f"Both pools sized exactly (M/G/c, P99 TTFT ≤ SLO, utilization ≤ {cap:g}) "
            f"at B = {audit.b_short_tokens:,}."
        )
    if kind is EstimateKind.CLOSED_FORM_CR:
        return (
            f"α' = α + β·p_c = {alpha:.4g} + {audit.beta:.4g}·{audit.compressibility:g} = "
            f"{audit.compressed_short_fraction:.4g} at γ = {gamma:g}; adds "
            f"β·p_c·(1 − 1/ρ) = {_pct(audit.compress_increment_fraction)} at an unchanged ρ."
        )
    if kind is EstimateKind.EQ8_CR:
        return (
            f"Eq. 8 at α' = {audit.compressed_cell.short_traffic_fraction:.4g} with the planner's μ on the "
            "post-compression pools (the long pool keeps only requests above γB)."
        )
    if kind is EstimateKind.PLANNER_CR:
        return (
            f"C&R band (B, {gamma:g}B] compressed with p_c = {audit.compressibility:g}; "
            "long pool recalibrated on what is left."
        )
    best = audit.plan.best
    if best is None:
        return ""
    where = "one pool" if best.b_short_tokens is None else f"B = {best.b_short_tokens:,}, γ = {best.gamma:g}"
    count_b, count_gamma = len(p.b_short_candidates or ()), len(p.gammas)
    return f"The cheapest feasible cell over {count_b} boundaries × {count_gamma} γ ({where})."


def _workload_estimate(audit: WorkloadAudit, e: SavingsEstimate) -> dict[str, Any]:
    reason = infeasibility_reason(e.infeasible)
    if e.kind is EstimateKind.PLANNER_BEST and audit.plan.best is None:
        reason = "no fleet meets the SLO and the utilization cap"
    return {
        "name": e.name,
        "source": _workload_source(audit, e.kind),
        "short_instances": e.short_instances,
        "long_instances": e.long_instances,
        "instances": e.instances,
        "whole_instances": e.whole_instances,
        "gpus": e.gpus,
        "cost_per_year_usd": e.cost_per_year_usd,
        "savings_fraction": e.savings_fraction,
        "savings_vs_current": e.savings_vs_current,
        "saved_usd_per_year": e.saved_usd_per_year,
        "reference": None if e.reference is None else e.reference.value,
        "over_prediction_factor": e.over_prediction_factor,
        "feasible": e.feasible,
        "reason": reason,
        "assumptions": workload_assumptions(audit, e.kind),
    }


def order_text(audit: WorkloadAudit) -> str:
    """ "A (x%) > B (y%) ≥ C (z%)": the three estimates by stated savings, '≥' for near ties."""
    parts = []
    for ranked in audit.order:
        text = f"{ranked.kind.value} ({_pct(ranked.savings_fraction)})"
        parts.append(text if not parts else f"{'≥' if ranked.close_to_previous else '>'} {text}")
    return " ".join(parts)


def workload_reasons(audit: WorkloadAudit) -> list[str]:
    """Why the estimates differ, one sentence per :class:`WorkloadFinding`, from the audit's numbers."""
    return [_workload_reason(audit, finding) for finding in audit.findings]


def _workload_reason(audit: WorkloadAudit, finding: WorkloadFinding) -> str:
    mu = audit.throughputs
    if finding is WorkloadFinding.NO_LONG_TRAFFIC:
        return "Every request fits below B: no long pool, so Eq. 7 and Eq. 8 agree."
    if finding is WorkloadFinding.LONG_POOL_SPEED:
        homo, long = mu.homogeneous_per_s, mu.long_per_s
        slower, gap = long < homo, audit.long_pool_gap_fraction
        return (
            f"Closed form vs Eq. 8: Eq. 7 assumes the long pool runs at μ_homo = {homo:.4g} "
            f"req/s per instance, but on the requests above B it runs at μ_l = {long:.4g} "
            f"({max(homo / long, long / homo):.3g}× {'slower' if slower else 'faster'}"
            + (" per request" if slower else ": these requests need fewer iterations than the average one")
            + "); "
            f"the closed form is off by (1 − α)(μ_homo/μ_l − 1) = {_pct(gap)} "
            f"({'over' if gap > 0 else 'under'}-prediction)."
        )
    if finding is WorkloadFinding.RHO_VS_CLIFF:
        cliff_savings = audit.estimate(EstimateKind.CLOSED_FORM_CLIFF).savings_fraction
        return (
            f"ρ = μ_s/μ_homo = {mu.throughput_ratio:.3g} is a throughput ratio "
            f"(slots {mu.short_slots} vs {mu.homogeneous_slots}, "
            f"{'as the planner chose them' if mu.slots_basis is SlotsBasis.PLANNER else 'at the KV limit'}; "
            f"{mu.throughput_ratio_kv:.3g} with every pool at its KV limit); the cliff ratio "
            f"{mu.short_kv_slots}/{mu.homogeneous_kv_slots} = {mu.cliff_ratio:.4g} counts slots, not "
            f"throughput (FACTS §2 item 1): read as ρ it gives {_pct(cliff_savings)}."
        )
    if finding is WorkloadFinding.PLANNER_OVER_EQ8:
        cell = audit.routed_cell
        binding = f"short pool {cell.short.binding_constraint}, long pool {cell.long.binding_constraint}"
        return (
            f"Eq. 8 vs planner: Eq. 8 at ρ_max is the planner's fluid limit (same μ's); the planner adds "
            f"{audit.planner_extra_short_instances:.2f} short and {audit.planner_extra_long_instances:.2f} "
            f"long instances for whole instances and the P99 TTFT SLO (what binds: {binding}) and compares "
            "with its own homogeneous fleet."
        )
    if finding is WorkloadFinding.PLANNER_INFEASIBLE:
        reason = infeasibility_reason(audit.estimate(EstimateKind.PLANNER_PR).infeasible)
        return f"The planner finds no feasible pool-routing fleet at this B: {reason}."
    return (
        f"C&R at γ = {audit.gamma:g}, p_c = {audit.compressibility:g}: the closed-form increment "
        f"β·p_c·(1 − 1/ρ) = {_pct(audit.compress_increment_fraction)} keeps ρ and μ_l fixed; the planner, "
        f"which recalibrates both pools, finds {_pct(audit.planner_compress_increment_fraction)}."
    )


def lever_text(advice: LeverAdvice) -> str:
    """The lever advice as one sentence, with its gains."""
    b, best_b, threshold = advice.b_short_tokens, advice.best_b_short_tokens, advice.threshold_fraction
    if best_b is None:
        return "No boundary gives a feasible pool-routing fleet: no lever applies."
    if not advice.routed_feasible:
        return (
            f"Pool routing at B = {b:,} is infeasible ({infeasibility_reason(advice.routed_fleet)}); "
            f"{advice.lever.value} to {best_b:,}, where it saves "
            f"{_pct(advice.best_savings_fraction)} of the homogeneous cost."
        )
    move, compress = advice.move_b_gain_fraction or 0.0, advice.compress_gain_fraction or 0.0
    at_best = advice.compress_gain_at_best_b_fraction
    compress_text = f"adding C&R at B = {b:,} saves {_pct(compress)} more" + (
        "" if at_best is None or best_b == b else f" ({_pct(at_best)} at B = {best_b:,})"
    )
    if best_b == b:
        move_text = f"B = {b:,} is already the cheapest boundary for pool routing"
    else:
        move_text = f"moving B from {b:,} to {best_b:,} saves {_pct(move)} at γ = 1"
    if advice.lever is Lever.NEITHER:
        verdict = f"neither lever saves {_pct(threshold)} of the homogeneous cost"
    elif advice.lever is Lever.ADD_CR:
        verdict = "add C&R" + (f" (moving B to {best_b:,} helps too)" if advice.also_other_lever else "")
    else:
        verdict = f"{advice.lever.value} first" + (", then add C&R" if advice.also_other_lever else "")
    return f"{move_text}; {compress_text}: {verdict}."


def _lever_document(advice: LeverAdvice) -> dict[str, Any]:
    return {
        "lever": advice.lever.value,
        "text": lever_text(advice),
        "move_b_gain_fraction": advice.move_b_gain_fraction,
        "best_b_short_tokens": advice.best_b_short_tokens,
        "compress_gain_fraction": advice.compress_gain_fraction,
        "compress_gain_at_best_b_fraction": advice.compress_gain_at_best_b_fraction,
        "threshold_fraction": advice.threshold_fraction,
    }


def rate_sweep_note(scope: RateSweepScope) -> str:
    """How the rate sweep was restricted, in words."""
    routed_b, best_b = scope.routed_b_short_tokens, scope.best_b_short_tokens
    if routed_b:
        note = f"re-planned at each rate with B fixed: pool routing at B = {routed_b:,}"
    else:
        note = "re-planned at each rate"
    if best_b is not None:
        note += f" (γ = 1); best = the cheapest γ of the grid at B = {best_b:,}"
    if scope.skipped_rates_per_s:
        skipped = ", ".join(f"{r:g}" for r in scope.skipped_rates_per_s)
        note += f"; no feasible fleet at {skipped} req/s (omitted)"
    return note


def _note(audit: WorkloadAudit, note: AuditNote) -> str:
    b = audit.b_short_tokens
    if note is AuditNote.NO_FEASIBLE_BOUNDARY:
        return f"no boundary gives a feasible pool-routing fleet; auditing B = {b:,}"
    if note is AuditNote.KV_LIMIT_THROUGHPUTS:
        return (
            f"the planner has no feasible pool-routing fleet at B = {b:,}: μ_homo, μ_s and μ_l are "
            "taken at the KV limits, so the formula rows' GPUs are not on the planner's homogeneous "
            "fleet's footing (which may need fewer slots per instance to meet the SLO)"
        )
    per_instance = audit.plan.long_hardware.gpus_per_instance
    return (
        f"current fleet: {audit.current.gpus:g} GPUs is not a whole number of {per_instance}-GPU "
        f"instances; evaluated as {audit.current.instances} instance(s)"
    )


# --- the numbers audit (back-of-envelope mode) -------------------------------------------------------

_NUMBERS_SOURCES = {
    EstimateKind.CURRENT: "given",
    EstimateKind.HOMOGENEOUS: "pool-routing §3",
    EstimateKind.TWO_POOLS: "pool-routing Eq. 8",
    EstimateKind.PROPOSED: "given",
    EstimateKind.CLOSED_FORM: "pool-routing Eq. 7",
    EstimateKind.CLOSED_FORM_LOCKSTEP: "pool-routing Eq. 7",
    EstimateKind.CLOSED_FORM_CLIFF: "FleetOpt §2.2 reading of Eq. 7",
    EstimateKind.CLOSED_FORM_CR: "pool-routing Eq. 7 + FleetOpt Eq. 14",
}


def numbers_assumptions(result: AuditResult, kind: EstimateKind) -> str:
    """What the formula behind estimate ``kind`` takes for granted, with the given numbers."""
    i = result.inputs
    if kind is EstimateKind.CURRENT:
        return "The fleet you run today."
    if kind is EstimateKind.HOMOGENEOUS:
        return (
            f"One pool at the longest context, μ_homo = {i.homogeneous_throughput_per_s:g} req/s "
            f"per instance on the full mix; headroom β_homo = {i.headroom_homogeneous:g}."
        )
    if kind is EstimateKind.TWO_POOLS:
        mu_long_text = "–" if i.long_throughput_per_s is None else f"{i.long_throughput_per_s:g}"
        return (
            f"μ_short = {i.short_throughput_per_s:g} and μ_long = {mu_long_text} req/s per "
            "instance, each measured on the traffic its pool receives after routing; "
            f"headroom β_short = {i.headroom_short:g}, β_long = {i.headroom_long:g}."
        )
    if kind is EstimateKind.PROPOSED:
        return "A fleet size from elsewhere (a planner, a paper, a quote), priced on the same terms."
    if kind is EstimateKind.CLOSED_FORM:
        text = (
            f"α = {i.short_fraction:g}, ρ = {result.throughput_ratio:.4g} "
            f"({result.throughput_ratio_source.value}); the long pool is assumed to run at μ_homo, "
            "i.e. to serve the same mix as a homogeneous pool."
        )
    elif kind is EstimateKind.CLOSED_FORM_LOCKSTEP:
        text = (
            f"ρ = {result.lockstep_throughput_ratio:.4g} from {i.short_slots} vs {i.long_slots} slots under "
            "t(n) = W + H·n on the same mix; the long pool is assumed to run at μ_homo."
        )
    elif kind is EstimateKind.CLOSED_FORM_CLIFF:
        text = (
            f"ρ = n_s/n_l = {i.short_slots}/{i.long_slots} = {result.cliff_ratio:.4g}: a slot ratio taken "
            "for a throughput ratio (as the papers do)."
        )
    else:
        text = (
            f"α' = α + β·p_c = {i.short_fraction:g} + {i.borderline_fraction:g}"
            f"·{i.compressible_fraction:g} = {result.compressed_short_fraction:.4g}; "
            f"adds β·p_c·(1 − 1/ρ) = {_pct(result.compress_increment_fraction)} at an unchanged ρ."
        )
    if result.baseline is EstimateKind.HOMOGENEOUS:
        return text + " Applied to the homogeneous fleet."
    if result.baseline is not None:
        return text + f" Applied to the {result.baseline.value} as if it were a homogeneous fleet."
    return text


def numbers_reasons(result: AuditResult) -> list[str]:
    """Why the estimates differ, one sentence per :class:`SavingsFinding`, from the given numbers."""
    return [_numbers_reason(result, finding) for finding in result.findings]


def _numbers_reason(result: AuditResult, finding: SavingsFinding) -> str:
    i = result.inputs
    if finding is SavingsFinding.NO_BASELINE:
        return (
            "No baseline fleet (give --current-gpus, or --rate with --mu-homo): the closed form's savings "
            "are a fraction of an unspecified homogeneous fleet."
        )
    if finding is SavingsFinding.CLOSED_FORM_VS_EQ8:
        eq7, eq8 = result.estimate(EstimateKind.CLOSED_FORM), result.estimate(EstimateKind.TWO_POOLS)
        text = (
            f"Eq. 7 predicts {_pct(eq7.savings_fraction)} but the routed fleet of Eq. 8 saves "
            f"{_pct(eq8.savings_fraction)}"
        )
        if eq7.over_prediction_factor is not None:
            text += f" ({eq7.over_prediction_factor:.2f}× over-prediction)"
        mu_homo, mu_long = i.homogeneous_throughput_per_s, i.long_throughput_per_s
        if mu_homo is not None and mu_long is not None:
            return text + (
                f": Eq. 7 assumes the long pool runs at μ_homo = {mu_homo:g} req/s per instance, but on the "
                f"routed long requests it runs at μ_long = {mu_long:g}, {mu_homo / mu_long:.3g}× slower."
            )
        return text + ": Eq. 7 assumes the long pool runs at μ_homo; routed long requests are slower."
    if finding is SavingsFinding.CLIFF_RATIO_COUNTS_SLOTS:
        return (
            f"The cliff ratio n_s/n_l = {result.cliff_ratio:.4g} counts "
            f"slots, not throughput: an iteration over {i.short_slots} slots takes "
            f"{result.short_iteration_s * 1e3:.4g} ms vs {result.long_iteration_s * 1e3:.4g} ms over "
            f"{i.long_slots}, so the throughput ratio on the same mix is "
            f"{result.lockstep_throughput_ratio:.3g}× (lock-step t(n) = W + H·n; FACTS §2 item 1)."
        )
    if finding is SavingsFinding.CR_KEEPS_RHO:
        return (
            "C&R's increment β·p_c·(1 − 1/ρ) keeps ρ fixed; the long pool then keeps only its heaviest "
            "requests, so its throughput falls and the real increment is smaller (the planner re-derives "
            "μ_long)."
        )
    return "Each pool is rounded up to whole instances (Eq. 6's ceilings)."


def _numbers_estimate(result: AuditResult, e: SavingsEstimate) -> dict[str, Any]:
    return {
        "name": e.name,
        "source": _NUMBERS_SOURCES[e.kind],
        "instances": e.instances,
        "short_instances": e.short_instances,
        "long_instances": e.long_instances,
        "gpus": e.gpus,
        "cost_per_year_usd": e.cost_per_year_usd,
        "savings_fraction": e.savings_fraction,
        "savings_usd_per_year": e.saved_usd_per_year,
        "over_prediction_factor": e.over_prediction_factor,
        "is_baseline": e.is_baseline,
        "assumptions": numbers_assumptions(result, e.kind),
    }


def numbers_audit_document(result: AuditResult) -> dict[str, Any]:
    """Every figure of a numbers audit as a JSON-ready dictionary (the ``--format json`` output)."""
    i = result.inputs
    slots_given, beta_given = i.short_slots is not None, i.borderline_fraction is not None
    document = {
        "mode": "numbers",
        "inputs": {
            "short_fraction": i.short_fraction,
            "throughput_ratio": i.throughput_ratio,
            "arrival_rate_per_s": i.arrival_rate_per_s,
            "short_throughput_per_s": i.short_throughput_per_s,
            "long_throughput_per_s": i.long_throughput_per_s,
            "homogeneous_throughput_per_s": i.homogeneous_throughput_per_s,
            "short_slots": i.short_slots,
            "long_slots": i.long_slots,
            "iteration_base_s": i.iteration_base_s if slots_given else None,
            "iteration_per_slot_s": i.iteration_per_slot_s if slots_given else None,
            "headroom_short": i.headroom_short,
            "headroom_long": i.headroom_long,
            "headroom_homogeneous": i.headroom_homogeneous,
            "whole_instances": i.round_up,
            "borderline_fraction": i.borderline_fraction,
            "compressible_fraction": i.compressible_fraction if beta_given else None,
            "current_gpus": i.current_gpus,
            "proposed_gpus": i.proposed_gpus,
        },
        "pricing": {
            "gpu_hour_usd": i.gpu_hour_usd,
            "gpus_per_instance": i.gpus_per_instance,
            "hours_per_year": HOURS_PER_YEAR,
        },
        "throughput_ratio": result.throughput_ratio,
        "throughput_ratio_source": result.throughput_ratio_source,
        "baseline": result.baseline,
        "estimates": [_numbers_estimate(result, e) for e in result.estimates],
        "why_they_differ": numbers_reasons(result),
    }
    return to_jsonable(document)


def draw_numbers_audit(console, data: Mapping[str, Any]) -> None:
    """Draw :func:`numbers_audit_document`'s dictionary as a table and notes."""
    from fleetopt.render.layout import FitTable, bullets

    pricing = data["pricing"]
    table = FitTable(title="fleetopt audit (numbers)")
    table.add_column("Estimate", justify="left", wrap=True)
    for header in ("Short + long", "Instances", "GPUs", "$/yr", "Savings", "Saved/yr", "Over-pred."):
        table.add_column(header, justify="right")
    for row in data["estimates"]:
        short, long = row["short_instances"], row["long_instances"]
        pools = "–" if short is None else f"{fmt_count(short)} + {fmt_count(long)}"
        factor = row["over_prediction_factor"]
        table.add_row(
            row["name"] + (" *" if row["is_baseline"] else ""),
            pools,
            fmt_count(row["instances"]),
            fmt_count(row["gpus"]),
            fmt_usd(row["cost_per_year_usd"]),
            fmt_pct(row["savings_fraction"]),
            fmt_usd(row["savings_usd_per_year"]),
            "–" if factor is None else f"{factor:.2f}×",
        )
    console.print(table)
    rho = data["throughput_ratio"]
    rho_text = "–" if rho is None else f"{rho:.4g} ({data['throughput_ratio_source']})"
    console.print(
        f"ρ = {rho_text}; ${pricing['gpu_hour_usd']:g}/GPU-hour × {pricing['hours_per_year']:,.0f} h/yr, "
        f"{pricing['gpus_per_instance']} GPU(s) per instance."
    )
    if data["baseline"] is not None:
        console.print(f"* baseline: savings are measured against the {data['baseline']}.")
    console.print("Why they differ:")
    console.print(bullets(data["why_they_differ"]))
    console.print("Assumptions:")
    console.print(
        bullets(f"{row['name']} ({row['source']}): {row['assumptions']}" for row in data["estimates"])
    )


def infeasibility_reason(infeasible: Any) -> str | None:
    """Why an infeasible planner fleet or pool breaks its targets, in words (None if there is none)."""
    if infeasible is None:
        return None
    return pool_reason(infeasible) if isinstance(infeasible, PoolSizing) else fleet_reason(infeasible)


def _threshold_document(figure: Mapping[str, Any]) -> dict[str, Any]:
    """One B's figures with the infeasible routed fleet worded (``routed_reason``)."""
    return {
        ("routed_reason" if key == "routed_fleet" else key): (
            infeasibility_reason(value) if key == "routed_fleet" else value
        )
        for key, value in figure.items()
    }
