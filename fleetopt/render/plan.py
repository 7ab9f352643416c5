"""The ``fleetopt plan`` report for people, drawn from the plan document (the same dict as --format json)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from fleetopt.render.output import fmt_num, fmt_pct, fmt_seconds, fmt_usd

if TYPE_CHECKING:  # rich is imported when a table is drawn, not for --format json|yaml
    from rich.console import Console
    from rich.table import Table


def explain_pool(name: str, pool: Mapping[str, Any], slo_s: float) -> str:
    """One sentence on what sized this pool and why it runs the slots it does."""
    if not pool["feasible"]:
        best = pool.get("min_achievable_ttft_s")
        extra = f" (the smallest achievable P99 TTFT is {fmt_seconds(best)})" if best else ""
        return f"{name}: infeasible — {pool['reason']}{extra}."
    if pool["instances"] == 0:
        return f"{name}: receives no traffic."
    util, cap_text = pool["utilization"], f"{pool['utilization']:.1%}"
    compute = pool.get("compute_utilization")
    if compute is not None and compute > util:
        cap_text = f"{compute:.1%} of its compute, {util:.1%} of its slots"
    if pool["binding_constraint"] == "minimum":
        count = f"one instance is the minimum and is enough (utilization {cap_text})"
    elif pool["binding_constraint"] == "utilization":
        count = f"the utilization cap sets {pool['instances']:,} instance(s) (running at {cap_text})"
    else:
        count = (
            f"the SLO sets {pool['instances']:,} instances: with fewer, queueing or busier (slower) "
            f"iterations would push the P99 TTFT past the {fmt_seconds(slo_s)} SLO (utilization {cap_text})"
        )
    slots, limit, ctx = pool["slots_per_instance"], pool["kv_slot_limit"], pool["context_tokens"]
    binding = pool["slots_binding"]
    if binding == "kv":
        why = f"{slots} slots per instance, the KV limit at {ctx:,} tokens"
    elif binding == "ttft":
        why = (
            f"{slots} of the {limit} slots the KV cache allows at {ctx:,} tokens: "
            "every slot adds to the iteration "
            f"time ({fmt_seconds(pool['iteration_s'])} now), and more slots would break the SLO through the "
            f"P99 prefill ({fmt_seconds(pool['p99_prefill_s'])}) or need more instances"
        )
    elif binding == "tpot":
        why = f"{slots} of {limit} KV slots: more would break the TPOT SLO"
    else:
        why = f"{slots} slots per instance (fixed)"
    headroom = slo_s - pool["p99_ttft_s"]
    del util
    ttft = fmt_seconds(pool["p99_ttft_s"])
    return f"{name}: {count}; {why}. P99 TTFT {ttft}, {fmt_seconds(headroom)} under the SLO."


def _pool_table(fleet: Mapping[str, Any]) -> Table:
    """Metrics as rows, pools as columns (stays narrow however many metrics there are)."""
    from rich.table import Table

    pools = fleet["pools"]
    table = Table(title="Pools", title_justify="left")
    table.add_column("")
    for name in pools:
        table.add_column(name, justify="right")
    rows = (
        ("context window (max_model_len)", lambda p: f"{p['context_tokens']:,} tokens"),
        ("instances × GPUs each", lambda p: f"{p['instances']:,} × {p['gpus_per_instance']}"),
        ("GPUs", lambda p: fmt_num(p["gpus"])),
        (
            "slots per instance (max_num_seqs)",
            lambda p: f"{p['slots_per_instance']} of {p['kv_slot_limit']} (KV)",
        ),
        ("arrival rate", lambda p: f"{fmt_num(p['arrival_rate_per_s'])} req/s"),
        ("service rate μ per instance", lambda p: f"{fmt_num(p['service_rate_per_instance_per_s'])} req/s"),
        ("service-time SCV C_s²", lambda p: fmt_num(p["service_scv"], 3)),
        ("utilization (slots)", lambda p: fmt_pct(p["utilization"])),
        (
            "compute utilization",
            lambda p: "–" if p.get("compute_utilization") is None else fmt_pct(p["compute_utilization"]),
        ),
        ("P99 slot wait", lambda p: fmt_seconds(p["p99_wait_s"])),
        ("P99 prefill", lambda p: fmt_seconds(p["p99_prefill_s"])),
        ("P99 TTFT", lambda p: fmt_seconds(p["p99_ttft_s"])),
        ("iteration time (TPOT)", lambda p: fmt_seconds(p["iteration_s"])),
        ("binding constraint", lambda p: p["binding_constraint"]),
        ("slot count set by", lambda p: p["slots_binding"]),
        ("$/year", lambda p: fmt_usd(p["cost_per_year_usd"])),
    )
    for label, cell in rows:
        table.add_row(
            label,
            *(
                cell(p) if p["feasible"] or label == "context window (max_model_len)" else "–"
                for p in pools.values()
            ),
        )
    return table


def _boundaries(fleet: Mapping[str, Any]) -> str:
    """B_short, or every boundary of a fleet of more than two pools ("1,024 / 6,144")."""
    bounds = (fleet.get("routing") or {}).get("boundaries_tokens") or [fleet["b_short_tokens"]]
    return " / ".join(fmt_num(b) for b in bounds)


def _pool_count_table(document: Mapping[str, Any]) -> Table | None:
    """The cheapest fleet with exactly k pools, k = 1 … --pools (shown when --pools > 2)."""
    from rich.table import Table

    rows = document.get("best_by_pool_count") or []
    if len(rows) <= 2:
        return None
    table = Table(title="The cheapest fleet of each pool count (--pools)", title_justify="left")
    for column in ("pools", "boundaries", "γ", "GPUs", "$/year"):
        table.add_column(column, justify="right")
    for row in rows:
        if not row["feasible"]:
            table.add_row(str(row["pool_count"]), "✗", "–", "✗", "✗")
            continue
        bounds = " / ".join(fmt_num(b) for b in row["boundaries_tokens"]) or "–"
        gamma = f"{row['gamma']:.1f}" if row["boundaries_tokens"] else "–"
        table.add_row(
            str(row["pool_count"]),
            bounds,
            gamma,
            fmt_num(row["total_gpus"]),
            fmt_usd(row["cost_per_year_usd"]),
        )
    return table


def _baseline_table(document: Mapping[str, Any]) -> Table:
    from rich.table import Table

    table = Table(title="Against the baselines", title_justify="left")
    for column in ("fleet", "B_short", "γ", "instances", "GPUs", "$/year", "saving vs homogeneous"):
        table.add_column(column, justify="left" if column == "fleet" else "right")
    homogeneous = document["baselines"]["homogeneous"]
    base_cost = homogeneous["cost_per_year_usd"]
    rows = [
        ("homogeneous", homogeneous),
        ("pool routing (γ = 1)", document["baselines"]["pool_routing"]),
        ("PR + C&R retrofit", document["baselines"]["retrofit"]),
        ("fleetopt (best)", document["best"]),
    ]
    for label, fleet in rows:
        if fleet is None:
            table.add_row(label, "–", "–", "–", "–", "–", "–")
            continue
        cost = fleet["cost_per_year_usd"]
        saving = (base_cost - cost) / base_cost if cost is not None and base_cost else None
        table.add_row(
            label,
            _boundaries(fleet) if fleet["b_short_tokens"] else "–",
            f"{fleet['gamma']:.1f}" if fleet["b_short_tokens"] else "–",
            fmt_num(fleet["total_instances"]) if fleet["feasible"] else "✗",
            fmt_num(fleet["total_gpus"]) if fleet["feasible"] else "✗",
            fmt_usd(cost) if fleet["feasible"] else f"✗ {fleet['reason']}",
            fmt_pct(saving),
        )
    return table


def _grid_table(document: Mapping[str, Any]) -> Table:
    from rich.table import Table

    cells = document["grid"]
    gammas = sorted({c["gamma"] for c in cells})
    table = Table(title="GPUs over the (B_short, γ) grid (✗ = infeasible, * = best)", title_justify="left")
    table.add_column("B_short \\ γ", justify="right")
    for gamma in gammas:
        table.add_column(f"{gamma:.1f}", justify="right")
    best = document["best"]
    by_key = {(c["b_short_tokens"], c["gamma"]): c for c in cells}
    for b in sorted({c["b_short_tokens"] for c in cells}):
        row = [f"{b:,}"]
        for gamma in gammas:
            cell = by_key.get((b, gamma))
            if cell is None:
                row.append("")
            elif not cell["feasible"]:
                row.append("✗")
            else:
                two_pool_best = best and best.get("pool_count", 2) == 2
                mark = "*" if two_pool_best and best["b_short_tokens"] == b and best["gamma"] == gamma else ""
                row.append(f"{cell['total_gpus']:,}{mark}")
        table.add_row(*row)
    return table


def draw_plan(console: Console, document: Mapping[str, Any]) -> None:
    """The whole report: inputs, the best fleet and its pools, why, baselines, grid, notes."""
    inputs = document["inputs"]
    short, long = inputs["profiles"]["short"], inputs["profiles"]["long"]
    console.print(
        f"[bold]fleetopt plan[/bold] — workload {inputs['workload']}, "
        f"{fmt_num(inputs['arrival_rate_per_s'])} req/s ({inputs['arrival_rate_origin']}), "
        f"P99 TTFT SLO {fmt_seconds(inputs['ttft_slo_s'])}, utilization cap {inputs['max_utilization']:.0%}, "
        f"service model {inputs['service_model']}, compressibility p_c = {inputs['compressibility']:g}"
    )
    price = f"${short['gpu_hour_usd']}/GPU-h"
    profiles = f"short pool: {short['serving_name']} (TP {short['gpus_per_instance']}, {price})"
    if long["serving_name"] != short["serving_name"]:
        profiles += f"; long pool: {long['serving_name']} (TP {long['gpus_per_instance']})"
    console.print(f"profiles — {profiles}; long context {inputs['long_context_tokens']:,} tokens")
    best = document["best"]
    if best is None:
        console.print("[bold red]No fleet meets the SLO and the utilization cap.[/bold red]")
        homogeneous = document["baselines"]["homogeneous"]
        for name, pool in homogeneous["pools"].items():
            console.print("  " + explain_pool(name, pool, inputs["ttft_slo_s"]))
    else:
        savings = document["savings"]
        if not best["b_short_tokens"]:
            where = "one homogeneous pool"
        elif best.get("pool_count", 2) > 2:
            where = f"{best['pool_count']} pools, boundaries {_boundaries(best)}, γ = {best['gamma']:.1f}"
        else:
            where = f"B_short = {best['b_short_tokens']:,}, γ = {best['gamma']:.1f}"
        console.print(
            f"\n[bold]Best fleet:[/bold] {where}: {best['total_gpus']:,} GPUs in {best['total_instances']:,} "
            f"instances, {fmt_usd(best['cost_per_year_usd'])}/year "
            f"({fmt_pct(savings['vs_homogeneous'])} below homogeneous, "
            f"{fmt_pct(savings['vs_pool_routing'])} below pool routing)"
        )
        if best["routing"]:
            console.print(f"routing: {best['routing']['rule']}")
        console.print(_pool_table(best))
        console.print("[bold]Why[/bold]")
        for name, pool in best["pools"].items():
            console.print("  " + explain_pool(name, pool, inputs["ttft_slo_s"]))
    console.print(_baseline_table(document))
    by_count = _pool_count_table(document)
    if by_count is not None:
        console.print(by_count)
    console.print(_grid_table(document))
    for note in document["notes"]:
        console.print(f"note: {note}")
    console.print(
        "GPUs = instances × GPUs per instance; $/year = GPUs × $/GPU-hour × 8,760. "
        "TTFT = P99 slot wait + prefill + first decode under the service model."
    )
