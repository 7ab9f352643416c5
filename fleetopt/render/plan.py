"""The ``fleetopt plan`` report for people, drawn from the plan document (the same document as
--format json, read through its schema: :class:`~fleetopt.io.documents.plan.PlanDocument`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from fleetopt.io.documents.plan import (
    FleetDocument,
    PlanDocument,
    PoolDocument,
    ScheduleDocument,
    read_plan_document,
)
from fleetopt.io.units import NOT_APPLICABLE, fmt_num, fmt_pct, fmt_seconds, fmt_usd
from fleetopt.render.words import basis_sentence, duration_words

if TYPE_CHECKING:  # rich is imported when a table is drawn, not for --format json|yaml
    from rich.console import Console

    from fleetopt.render.layout import FitTable


def explain_pool(name: str, pool: PoolDocument, slo_s: float) -> str:
    """One sentence on what sized this pool and why it runs the slots it does."""
    if not pool.feasible:
        best = pool.min_achievable_ttft_s
        extra = f" (the smallest achievable P99 TTFT is {fmt_seconds(best)})" if best else ""
        return f"{name}: infeasible — {pool.reason}{extra}."
    if pool.instances == 0:
        return f"{name}: receives no traffic."
    util, cap_text = pool.utilization, f"{pool.utilization:.1%}"
    compute = pool.compute_utilization
    if compute is not None and compute > util:
        cap_text = f"{compute:.1%} of its compute, {util:.1%} of its slots"
    if pool.binding_constraint == "minimum":
        count = f"one instance is the minimum and is enough (utilization {cap_text})"
    elif pool.binding_constraint == "utilization":
        count = f"the utilization cap sets {pool.instances:,} instance(s) (running at {cap_text})"
    else:
        count = (
            f"the SLO sets {pool.instances:,} instances: with fewer, queueing or busier (slower) "
            f"iterations would push the P99 TTFT past the {fmt_seconds(slo_s)} SLO (utilization {cap_text})"
        )
    slots, limit, ctx = pool.slots_per_instance, pool.kv_slot_limit, pool.context_tokens
    binding = pool.slots_binding
    if binding == "kv":
        why = f"{slots} slots per instance, the KV limit at {ctx:,} tokens"
    elif binding == "ttft":
        why = (
            f"{slots} of the {limit} slots the KV cache allows at {ctx:,} tokens: "
            "every slot adds to the iteration "
            f"time ({fmt_seconds(pool.iteration_s)} now), and more slots would break the SLO through the "
            f"P99 prefill ({fmt_seconds(pool.p99_prefill_s)}) or need more instances"
        )
    elif binding == "tpot":
        why = f"{slots} of {limit} KV slots: more would break the TPOT SLO"
    else:
        why = f"{slots} slots per instance (fixed)"
    headroom = slo_s - pool.p99_ttft_s
    del util
    ttft = fmt_seconds(pool.p99_ttft_s)
    return f"{name}: {count}; {why}. P99 TTFT {ttft}, {fmt_seconds(headroom)} under the SLO."


def _serves(pool: PoolDocument) -> bool:
    """A feasible pool that receives traffic (an empty pool has no service time, TTFT or TPOT)."""
    return bool(pool.feasible) and pool.instances > 0 and (pool.arrival_rate_per_s or 0) > 0


def _headroom(value_s: float | None, fraction: float | None) -> str:
    return NOT_APPLICABLE if value_s is None else f"{fmt_seconds(value_s)} ({fmt_pct(fraction)})"


def _tpot_label(pools: Mapping[str, PoolDocument]) -> str:
    pool = next(iter(pools.values()))
    limit_s = pool.tpot_limit_s
    limit = NOT_APPLICABLE if limit_s is None else f"{limit_s * 1e3:g} ms"
    if pool.tpot_limit_kind == "tpot_slo":
        return f"TPOT headroom to the {limit} TPOT SLO"
    return f"TPOT headroom to {limit} (chat reading pace)"


def _arrival_scv(pool: PoolDocument) -> float:
    return 1.0 if pool.arrival_scv is None else pool.arrival_scv


#: Rows of the pool table: (label, cell, shown for a pool that serves no traffic).
_POOL_ROWS: tuple[tuple[str, Callable[[PoolDocument], str], bool], ...] = (
    ("context window (max_model_len)", lambda p: f"{p.context_tokens:,} tokens", True),
    (
        "instances × GPUs each",
        lambda p: (
            f"{p.instances:,} × {p.gpus_per_instance}"
            + (f" ({p.spare_instances} spare)" if p.spare_instances else "")
        ),
        True,
    ),
    ("GPUs", lambda p: fmt_num(p.gpus), True),
    (
        "slots per instance (max_num_seqs)",
        lambda p: f"{p.slots_per_instance} of {p.kv_slot_limit} (KV)",
        False,
    ),
    ("arrival rate", lambda p: f"{fmt_num(p.arrival_rate_per_s)} req/s", True),
    ("service rate μ per instance", lambda p: f"{fmt_num(p.service_rate_per_instance_per_s)} req/s", False),
    ("service-time SCV C_s²", lambda p: fmt_num(p.service_scv, 3), False),
    ("arrival SCV C_a²", lambda p: fmt_num(_arrival_scv(p), 3), False),
    ("utilization (slots)", lambda p: fmt_pct(p.utilization), False),
    ("compute utilization", lambda p: fmt_pct(p.compute_utilization), False),
    ("P99 slot wait", lambda p: fmt_seconds(p.p99_wait_s), False),
    ("P99 prefill", lambda p: fmt_seconds(p.p99_prefill_s), False),
    ("P99 TTFT", lambda p: fmt_seconds(p.p99_ttft_s), False),
    ("TTFT headroom to the SLO", lambda p: _headroom(p.ttft_headroom_s, p.ttft_headroom_fraction), False),
    ("iteration time (TPOT)", lambda p: fmt_seconds(p.iteration_s), False),
    ("TPOT headroom", lambda p: _headroom(p.tpot_headroom_s, p.tpot_headroom_fraction), False),
    ("binding constraint", lambda p: p.binding_constraint, False),
    ("slot count set by", lambda p: p.slots_binding, False),
    ("$/year", lambda p: fmt_usd(p.cost_per_year_usd), True),
)


def refined_reasons(document: PlanDocument) -> list[str]:
    """For a refined plan: which of the best fleet's counts the simulation set, and what it measured
    (the analytic figures above are the model's at those counts)."""
    if document.refinement is None:
        return []
    chosen = next((f for f in document.refinement.fleets if f.chosen), None)
    if chosen is None:
        return []
    return [
        f"{pool.pool}: --refine set {pool.refined_instances:,} instances "
        f"(analytic {pool.analytic_instances:,}): "
        f"simulated P99 TTFT {fmt_seconds(pool.simulated_p99_ttft_s)} (95% interval up to "
        f"{fmt_seconds(pool.p99_ttft_high_s)}); the analytic figures above are the model's at that count."
        for pool in chosen.pools
        if pool.outcome == "refined"
        and pool.simulated_p99_ttft_s is not None
        and pool.p99_ttft_high_s is not None
    ]


def draw_refinement(console: Console, document: PlanDocument) -> None:
    """The dispatch policy the plan states and, with ``--refine``, what the simulation decided."""
    refinement = document.refinement
    if refinement is None:
        console.print(
            f"dispatch: {document.dispatch} (the router policy this plan states; the counts are the analytic "
            "model's, not checked by simulation: --refine K re-sizes them)",
            markup=False,
        )
        return
    from fleetopt.render.layout import FitTable

    console.print(
        f"[bold]Refined by simulation[/bold] (--refine {refinement.candidates}): the "
        f"{len(refinement.fleets)} cheapest fleets, each pool on its own stream under "
        f"{refinement.dispatch} dispatch "
        f"({refinement.service_model} engine, {refinement.scheduler} scheduler); a count passes when "
        f"{refinement.rule}; search seed {refinement.search_seed}, confirmed on seeds "
        f"{', '.join(map(str, refinement.confirm_seeds))}",
        highlight=False,
    )
    table = FitTable(title="Refined fleets (* = the plan's best)")
    for column in ("fleet", "pool", "analytic n", "refined n", "simulated P99 TTFT [95%]", "outcome", "GPUs"):
        table.add_column(column)
    for fleet in refinement.fleets:
        label = ("* " if fleet.chosen else "") + (
            "B = " + ", ".join(f"{b:,}" for b in fleet.boundaries_tokens)
            if fleet.boundaries_tokens
            else "homogeneous"
        )
        gpus = f"{fleet.analytic_gpus:,} → " + (
            "✗" if fleet.refined_gpus is None else f"{fleet.refined_gpus:,}"
        )
        for index, pool in enumerate(fleet.pools):
            p99 = NOT_APPLICABLE
            if pool.simulated_p99_ttft_s is not None:
                low, high = pool.p99_ttft_low_s, pool.p99_ttft_high_s
                interval = (
                    "" if low is None or high is None else f" [{fmt_seconds(low)}, {fmt_seconds(high)}]"
                )
                p99 = fmt_seconds(pool.simulated_p99_ttft_s) + interval
            outcome = pool.outcome.replace("_", " ") + (
                "" if pool.confirmed or pool.outcome != "refined" else " (1 seed)"
            )
            if pool.outcome == "unreachable" and pool.best_instances is not None:
                outcome += f" (best at n = {pool.best_instances})"
            table.add_row(
                label if index == 0 else "", pool.pool, str(pool.analytic_instances),
                str(pool.refined_instances), p99, outcome, gpus if index == 0 else "",
            )  # fmt: skip
    console.print(table)
    if any(p.outcome == "too_large" for f in refinement.fleets for p in f.pools):
        console.print(
            f"too large: a pool whose simulation would take more than {refinement.max_requests_per_seed:,} "
            "requests per seed keeps its analytic count, unchecked",
            markup=False,
        )


def _pool_table(fleet: FleetDocument, hardware_rows: bool = False) -> FitTable:
    """Metrics as rows, pools as columns (stacks pools into more tables when they do not fit);
    ``hardware_rows``: first the GPU and tensor-parallel size of each pool (pools on mixed hardware)."""
    from fleetopt.render.layout import FitTable

    pools = fleet.pools
    table = FitTable(title="Pools")
    table.add_column("", justify="left", wrap=True)
    for name in pools:
        table.add_column(name)
    if hardware_rows:
        table.add_row("hardware (GPU, TP)", *(f"{p.gpu} TP{p.gpus_per_instance}" for p in pools.values()))
    for label, cell, when_empty in _POOL_ROWS:
        if label == "TPOT headroom":
            label = _tpot_label(pools)
        cells = []
        for pool in pools.values():
            if label.startswith("context window") or (_serves(pool) or (when_empty and pool.feasible)):
                cells.append(cell(pool))
            else:
                cells.append(NOT_APPLICABLE)
        table.add_row(label, *cells)
    return table


def schedule_table(schedule: ScheduleDocument) -> FitTable:
    """Instances per pool in every window of the schedule (offsets from its origin)."""
    from fleetopt.render.layout import FitTable

    table = FitTable(title="Schedule: instances per window")
    table.add_column("window")
    table.add_column("rate sized for")
    for name in schedule.pools:
        table.add_column(name)
    table.add_column("GPUs")
    for window in schedule.windows:
        table.add_row(
            f"{_clock(window.start_s)}–{_clock(window.end_s)}",
            f"{fmt_num(window.arrival_rate_per_s)} req/s",
            *(fmt_num(window.instances[name]) for name in schedule.pools),
            fmt_num(window.gpus),
        )
    return table


def schedule_heading(schedule: ScheduleDocument) -> str:
    """What the schedule's windows are: their length, the period, the basis and the origin."""
    origin = schedule.origin_utc
    period = (
        "periodic over " + _period_words(schedule.period_s) if schedule.periodic else "over the log's span"
    )
    return (
        f"schedule: {duration_words(schedule.window_s)} windows {period}, each sized on its "
        f"{schedule.rate_basis} rate with the routing fixed; offsets from {origin or 'the first arrival'}"
    )


def schedule_summary(schedule: ScheduleDocument) -> str:
    """GPU-hours of the schedule against the static (peak) fleet, per period."""
    dynamic, static = schedule.gpu_hours_per_period, schedule.static_gpu_hours_per_period
    saving = (static - dynamic) / static if static > 0 else None
    period = _period_words(schedule.period_s).removeprefix("a ")  # "per day", not "per a day"
    return (
        f"schedule: {dynamic:,.2f} GPU-hours per {period} against "
        f"{static:,.2f} for the static fleet ({fmt_pct(saving)} fewer); every window's instances are "
        "at most the static fleet's"
    )


def _period_words(seconds: float) -> str:
    if seconds == 86400.0:
        return "a day"
    if seconds == 604800.0:
        return "a week"
    return f"{seconds:,.0f} s"


def _clock(offset_s: float) -> str:
    """An offset as [d ]hh:mm[:ss] (``1d 09:00``, ``00:58:00``)."""
    whole = round(offset_s)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    text = f"{hours:02d}:{minutes:02d}" + (f":{seconds:02d}" if seconds else "")
    return f"{days}d {text}" if days else text


def _boundaries(fleet: FleetDocument) -> str:
    """B_short, or every boundary of a fleet of more than two pools ("1,024 / 6,144")."""
    bounds = (fleet.routing.boundaries_tokens if fleet.routing else None) or [fleet.b_short_tokens]
    return " / ".join(fmt_num(b) for b in bounds)


def _pool_count_table(document: PlanDocument) -> FitTable | None:
    """The cheapest fleet with exactly k pools, k = 1 … --pools (shown when --pools > 2)."""
    from fleetopt.render.layout import FitTable

    rows = document.best_by_pool_count
    if len(rows) <= 2:
        return None
    table = FitTable(title="The cheapest fleet of each pool count (--pools)")
    for column in ("pools", "boundaries", "γ", "GPUs", "$/year"):
        table.add_column(column, justify="right")
    for row in rows:
        if not row.feasible:
            table.add_row(str(row.pool_count), "✗", "–", "✗", "✗")
            continue
        bounds = " / ".join(fmt_num(b) for b in row.boundaries_tokens) or "–"
        gamma = f"{row.gamma:.1f}" if row.boundaries_tokens else "–"
        table.add_row(
            str(row.pool_count),
            bounds,
            gamma,
            fmt_num(row.total_gpus),
            fmt_usd(row.cost_per_year_usd),
        )
    return table


def _baseline_table(document: PlanDocument) -> FitTable:
    from fleetopt.render.layout import FitTable

    table = FitTable(title="Against the baselines ($/M: per million input tokens, output tokens, requests)")
    columns = ("fleet", "B_short", "γ", "instances", "GPUs", "$/year", "saving vs homogeneous")
    for column in (*columns, "$/M in", "$/M out", "$/M req"):
        table.add_column(column, justify="left" if column == "fleet" else "right", wrap=column == "fleet")
    baselines = document.baselines
    base_cost = baselines.homogeneous.cost_per_year_usd
    rows = [
        ("homogeneous", baselines.homogeneous),
        ("pool routing (γ = 1)", baselines.pool_routing),
        ("PR + C&R retrofit", baselines.retrofit),
    ]
    if document.hardware_search is not None:
        rows.append(("best single hardware", baselines.best_single_hardware))
    rows.append(("fleetopt (best)", document.best))
    if document.compression is not None:
        rows.append(("without compression (γ = 1)", document.compression.without_compression))
    for label, fleet in rows:
        if fleet is None:
            table.add_row(label, *("–" for _ in range(9)))
            continue
        cost = fleet.cost_per_year_usd
        saving = (base_cost - cost) / base_cost if cost is not None and base_cost else None
        table.add_row(
            label,
            _boundaries(fleet) if fleet.b_short_tokens else "–",
            f"{fleet.gamma:.1f}" if fleet.b_short_tokens else "–",
            fmt_num(fleet.total_instances) if fleet.feasible else "✗",
            fmt_num(fleet.total_gpus) if fleet.feasible else "✗",
            fmt_usd(cost) if fleet.feasible else f"✗ {fleet.reason}",
            fmt_pct(saving),
            *(
                _usd_cents(value)
                for value in (
                    fleet.cost_per_million_input_tokens_usd,
                    fleet.cost_per_million_output_tokens_usd,
                    fleet.cost_per_million_requests_usd,
                )
            ),
        )
    return table


def _usd_cents(value: float | None) -> str:
    """$ to the cent (three significant figures below $1), or – when unknown."""
    if value is None:
        return "–"
    return f"${value:,.2f}" if value >= 1 else f"${value:.3g}"


def _hardware_table(document: PlanDocument) -> FitTable | None:
    """``plan --hardware``: each pool of the best fleet on every profile of the catalog (* = chosen)."""
    from fleetopt.render.layout import FitTable

    search = document.hardware_search
    if search is None:
        return None
    table = FitTable(
        title="Hardware per pool (--hardware; * = chosen: the cheapest that meets the SLO and cap)"
    )
    table.add_column("serving profile", justify="left", wrap=True)
    for name in search.pools:
        table.add_column(name, justify="right")
    for index, profile in enumerate(search.catalog):
        cells = []
        for options in search.pools.values():
            option = options[index]
            if not option.feasible:
                cells.append(f"✗ {option.binding_constraint}")
                continue
            mark = "*" if option.chosen else ""
            cost = f"${option.cost_per_hour_usd:,.0f}/h"
            cells.append(f"{fmt_num(option.gpus)} GPUs {cost} {option.binding_constraint}{mark}")
        table.add_row(profile, *cells)
    return table


def _grid_table(document: PlanDocument) -> FitTable:
    from fleetopt.render.layout import FitTable

    cells = document.grid
    gammas = sorted({c.gamma for c in cells})
    table = FitTable(title="GPUs over the (B_short, γ) grid (✗ = infeasible, * = best)")
    table.add_column("B_short \\ γ")
    for gamma in gammas:
        table.add_column(f"{gamma:.1f}", justify="right")
    best = document.best
    by_key = {(c.b_short_tokens, c.gamma): c for c in cells}
    for b in sorted({c.b_short_tokens for c in cells}):
        row = [f"{b:,}"]
        for gamma in gammas:
            cell = by_key.get((b, gamma))
            if cell is None:
                row.append("")
            elif not cell.feasible:
                row.append("✗")
            else:
                two_pool_best = best is not None and best.pool_count == 2
                mark = "*" if two_pool_best and best.b_short_tokens == b and best.gamma == gamma else ""
                row.append(f"{cell.total_gpus:,}{mark}")
        table.add_row(*row)
    return table


def draw_plan(console: Console, document: PlanDocument | Mapping[str, Any]) -> None:
    """The whole report: inputs, the best fleet and its pools, why, baselines, grid, notes.

    ``document``: a :class:`PlanDocument`, or its plain data (read through the schema first)."""
    from rich.markup import escape

    from fleetopt.render.layout import bullets

    if not isinstance(document, PlanDocument):
        document = read_plan_document(dict(document), "plan")
    inputs = document.inputs
    short, long = inputs.profiles.short, inputs.profiles.long
    console.print(
        f"[bold]fleetopt plan[/bold] — workload {inputs.workload}, mean "
        f"{fmt_num(inputs.arrival_rate_per_s)} req/s ({inputs.arrival_rate_origin}), "
        f"P99 TTFT SLO {fmt_seconds(inputs.ttft_slo_s)}, utilization cap {inputs.max_utilization:.0%}, "
        f"service model {inputs.service_model}, compressibility p_c = {inputs.compressibility:g}"
    )
    if inputs.rate_basis is not None:
        basis = inputs.rate_basis
        console.print(f"rate basis ({basis.basis}): {basis_sentence(basis)}", markup=False)
    price = f"${short.gpu_hour_usd}/GPU-h"
    profiles = f"short pool: {short.serving_name} (TP {short.gpus_per_instance}, {price})"
    if long.serving_name != short.serving_name:
        profiles += f"; long pool: {long.serving_name} (TP {long.gpus_per_instance})"
    if inputs.profiles.pools:  # chosen per pool by --hardware
        profiles = "chosen per pool (--hardware): " + "; ".join(
            f"{name}: {h.serving_name} (${h.gpu_hour_usd:g}/GPU-h)"
            for name, h in inputs.profiles.pools.items()
        )
    console.print(f"profiles — {profiles}; long context {inputs.long_context_tokens:,} tokens")
    best = document.best
    if best is None:
        console.print("[bold red]No fleet meets the SLO and the utilization cap.[/bold red]")
        pools = document.baselines.homogeneous.pools.items()
        reasons = (explain_pool(name, pool, inputs.ttft_slo_s) for name, pool in pools)
        console.print(bullets(reasons, marker="  "))
    else:
        savings = document.savings
        if not best.b_short_tokens:
            where = "one homogeneous pool"
        elif best.pool_count > 2:
            where = f"{best.pool_count} pools, boundaries {_boundaries(best)}, γ = {best.gamma:.1f}"
        else:
            where = f"B_short = {best.b_short_tokens:,}, γ = {best.gamma:.1f}"
        console.print(
            f"\n[bold]Best fleet:[/bold] {where}: {best.total_gpus:,} GPUs in {best.total_instances:,} "
            f"instances, {fmt_usd(best.cost_per_year_usd)}/year "
            f"({fmt_pct(savings.vs_homogeneous)} below homogeneous, "
            f"{fmt_pct(savings.vs_pool_routing)} below pool routing"
            + (
                f", {fmt_pct(savings.vs_best_single_hardware)} below the best single hardware)"
                if document.hardware_search is not None
                else ")"
            )
        )
        if best.routing:
            console.print(f"routing: {best.routing.rule}", markup=False)
        if document.compression is not None:
            console.print(f"[bold yellow]{escape(document.compression.message)}[/bold yellow]")
        console.print(_pool_table(best, hardware_rows=document.hardware_search is not None))
        console.print("[bold]Why[/bold]")
        reasons = [explain_pool(name, pool, inputs.ttft_slo_s) for name, pool in best.pools.items()]
        console.print(bullets(reasons + refined_reasons(document), marker="  "))
        if document.warnings:
            console.print("[bold]Headroom warnings[/bold]")
            console.print(bullets(w.message for w in document.warnings))
        if document.prefix_caching is not None:
            from fleetopt.render.prefix import draw_plan_caching

            draw_plan_caching(console, document.prefix_caching)
        draw_refinement(console, document)
    console.print(_baseline_table(document))
    hardware = _hardware_table(document)
    if hardware is not None:
        console.print(hardware)
    by_count = _pool_count_table(document)
    if by_count is not None:
        console.print(by_count)
    console.print(_grid_table(document))
    if document.schedule:
        console.print(schedule_heading(document.schedule), markup=False)
        console.print(schedule_table(document.schedule))
        console.print(schedule_summary(document.schedule), markup=False)
    if document.notes:
        console.print(bullets(document.notes, marker="note: "))
    inputs = document.inputs
    if inputs.spare_instances or inputs.ttft_headroom_fraction:
        console.print(
            f"Failure headroom: {inputs.spare_instances} spare instance(s) per pool (every latency and load "
            f"figure is with them lost); pools sized to a P99 TTFT of "
            f"{fmt_seconds(inputs.ttft_slo_s * (1 - inputs.ttft_headroom_fraction))} "
            f"({inputs.ttft_headroom_fraction:.0%} below the SLO).",
            markup=False,
        )
    console.print(
        "GPUs = instances × GPUs per instance; $/year = GPUs × $/GPU-hour × 8,760. "
        "TTFT = P99 slot wait + prefill up to the first token under the service model. "
        "(fleetopt audit prices the papers' estimates in their setting — the lockstep model, the A100 "
        "calibration, the mean rate — unless told otherwise, so its GPU counts differ from these.)"
    )
