"""The workload audit (``fleetopt audit --cdf``) as one plain dictionary, and drawn for people.

:func:`workload_audit_document` turns a :class:`fleetopt.core.audit.WorkloadAudit` into the
dictionary that ``--format json|yaml`` prints; :func:`draw_workload_audit` draws the same
dictionary as tables (so the terminal and the machine formats carry the same figures).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from fleetopt.core.audit import WorkloadAudit
from fleetopt.core.service import PoolHardware
from fleetopt.defaults import HOURS_PER_YEAR
from fleetopt.render.output import fmt_count, fmt_num, fmt_pct, fmt_seconds, fmt_usd, to_jsonable


def _hardware(hw: PoolHardware) -> dict[str, Any]:
    return {
        "serving_profile": hw.serving_name,
        "model": hw.model_name,
        "gpu": hw.gpu_name,
        "gpus_per_instance": hw.gpus_per_instance,
        "gpu_hour_usd": hw.gpu_hour_usd,
    }


def workload_audit_document(
    audit: WorkloadAudit, *, workload_label: str, arrival_rate_origin: str, plot_path: str | None = None
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
            "reason": sizing.reason,
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
            "arrival_rate_per_s": p.arrival_rate_per_s,
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
        "estimates": [dataclasses.asdict(e) for e in audit.estimates],
        "order": audit.order,
        "why_they_differ": list(audit.reasons),
        "archetype": audit.archetype,
        "lever": dataclasses.asdict(audit.lever),
        "current": current,
        "best_plan": None
        if best is None
        else {"b_short_tokens": best.b_short_tokens, "gamma": best.gamma, "total_gpus": best.total_gpus},
        "savings_vs_b_short": list(audit.thresholds),
        "savings_vs_b_short_rows": list(audit.threshold_rows),
        "fleet_vs_rate": list(audit.rate_rows),
        "fleet_vs_rate_note": audit.rate_sweep_note,
        "plot": plot_path,
        "pricing": {"hours_per_year": HOURS_PER_YEAR},
        "notes": list(audit.notes),
    }
    return to_jsonable(document)


def _profile(hardware: Mapping[str, Any]) -> str:
    return (
        f"{hardware['serving_profile']} (TP {hardware['gpus_per_instance']}, "
        f"${hardware['gpu_hour_usd']:g}/GPU-h)"
    )


def draw_workload_audit(console, data: Mapping[str, Any]) -> None:
    """Draw :func:`workload_audit_document`'s dictionary as text and tables."""
    from rich.table import Table

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
    table = Table(title="The estimates", title_justify="left")
    table.add_column("Estimate", no_wrap=True)
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
    for line in data["why_they_differ"]:
        console.print(f"  - {line}")
    console.print("Assumptions:")
    for row in data["estimates"]:
        reason = "" if row["feasible"] else f" Infeasible: {row['reason']}."
        console.print(f"  - {row['name']} ({row['source']}): {row['assumptions']}{reason}")
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
    for note in data["notes"]:
        console.print(f"Note: {note}")
    if data["plot"]:
        console.print(f"plot written to {data['plot']}")
