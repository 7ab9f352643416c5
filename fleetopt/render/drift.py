"""The ``fleetopt drift`` report for people: a table and a markdown PR comment, drawn from the
drift document (:class:`~fleetopt.io.documents.drift.DriftDocument`, the same document as
``--format json|yaml``, built below the API by :mod:`fleetopt.io.documents.build_drift`). A
report on live metrics (``--prometheus``) ends with the observed pools (:mod:`fleetopt.render.observe`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from fleetopt.io.documents.drift import DriftDocument, PoolFitDocument
from fleetopt.io.documents.typed import from_document
from fleetopt.io.units import fmt_num, fmt_pct, fmt_seconds, fmt_usd
from fleetopt.render.markdown import md_bullets, md_table

if TYPE_CHECKING:  # rich is imported when a table is drawn, not for --format json|yaml
    from rich.console import Console


def _typed(data: DriftDocument | Mapping[str, Any]) -> DriftDocument:
    """The drift document, typed (plain data is read through its schema)."""
    if isinstance(data, DriftDocument):
        return data
    return from_document(DriftDocument, dict(data), "drift report")


def _ttft(pool: PoolFitDocument) -> str:
    return "unbounded" if pool.unstable else fmt_seconds(pool.p99_ttft_s)


def _verdict_line(data: DriftDocument) -> str:
    if data.verdict == "fits":
        return "FITS: the planned fleet still fits today's workload within tolerance (exit 0)"
    count = len(data.reasons)
    return f"DRIFT: {count} reason{'s' if count != 1 else ''} (exit 1)"


def _context_line(data: DriftDocument) -> str:
    plan, today = data.plan, data.today
    origin = {"given": "--rate", "observed": "observed in the log", "planned": "the planned rate"}
    if data.live is not None:
        origin["observed"] = "observed in the metrics"
    fleet = (
        "one homogeneous pool"
        if plan.b_short_tokens is None
        else f"B_short {plan.b_short_tokens:,}, γ {plan.gamma:g}"
    )
    sized = ""
    if plan.rate_basis != "mean":
        sized = f", sized on its {plan.rate_basis} at {fmt_num(today.sizing_rate_per_s)} req/s"
    return (
        f"plan {plan.file} ({plan.workload}, {fmt_num(plan.arrival_rate_per_s)} req/s, {fleet}, "
        f"{plan.total_gpus:,} GPUs) vs {today.workload} at "
        f"{fmt_num(today.arrival_rate_per_s)} req/s "
        f"({origin.get(today.arrival_rate_origin, today.arrival_rate_origin)}{sized})"
    )


def _replan_line(data: DriftDocument) -> str | None:
    replan, plan = data.replan, data.plan
    if replan is None:
        return None
    if not replan.feasible:
        return "re-plan today: no fleet meets the SLO and the cap"

    def shape(b: int | None, gamma: float | None) -> str:
        return "homogeneous" if b is None else f"B* {b:,}, γ* {gamma:g}"

    return (
        f"re-plan today: {replan.total_gpus:,} GPUs ({replan.gpu_change:+,d}), "
        f"{fmt_usd(replan.cost_per_year_usd)}/year ({fmt_pct(replan.cost_change, True)} vs planned "
        f"{fmt_usd(plan.cost_per_year_usd)}), {shape(plan.b_short_tokens, plan.gamma)} → "
        f"{shape(replan.b_short_tokens, replan.gamma)}"
    )


def _shift_rows(data: DriftDocument) -> list[tuple[str, str, str, str]]:
    shift = data.shift
    ks = shift.ks_total_tokens
    ks_text = (
        "0 (identical data)"
        if ks.exact
        else f"{ks.estimate:.4f} ± {ks.resolution / 2:.4f} (≥ {ks.lower:.3f})"
    )
    rows = [("KS distance, total tokens", "", "", ks_text)]
    total = shift.tokens.get("total")
    if total is not None:
        for label in ("p50", "p90", "p99"):
            values = getattr(total, label)
            rows.append(
                (f"total tokens {label}", fmt_num(values.planned), fmt_num(values.today),
                 fmt_pct(values.change, True))
            )  # fmt: skip
    for values, label in ((shift.alpha, "α = F(B_short)"), (shift.beta, "β = F(γB) − F(B)")):
        if values.planned is None and values.today is None:
            continue
        delta = None if values.planned is None or values.today is None else values.today - values.planned
        rows.append(
            (label, fmt_num(values.planned), fmt_num(values.today),
             "–" if delta is None else f"{delta:+.3f}")
        )  # fmt: skip
    for values, label in (
        (shift.arrival_rate_per_s, "rate, req/s"),
        (shift.sizing_rate_per_s, "rate sized for, req/s"),
        (shift.interarrival_scv, "inter-arrival SCV"),
    ):
        rows.append((label, fmt_num(values.planned), fmt_num(values.today), fmt_pct(values.change, True)))
    return rows


def draw_drift(console: Console, data: DriftDocument | Mapping[str, Any]) -> None:
    """The short human summary: verdict, reasons, pools, re-plan, workload shift."""
    from fleetopt.render.layout import FitTable, bullets

    data = _typed(data)
    console.print(_verdict_line(data), markup=False)
    console.print(_context_line(data), markup=False)
    if data.reasons:
        console.print(bullets(reason.message for reason in data.reasons))
    fit = data.fit
    if fit is not None:
        table = FitTable(title="The planned fleet under today's traffic")
        for column in ("pool", "instances × slots", "req/s", "utilization (cap)", "P99 TTFT (SLO)", "status"):
            table.add_column(column, justify="left" if column in ("pool", "status") else "right")
        for name, pool in fit.pools.items():
            table.add_row(
                name,
                f"{pool.instances:,} × {pool.slots_per_instance}",
                fmt_num(pool.arrival_rate_per_s),
                f"{fmt_num(pool.utilization, 3)} ({pool.max_utilization:g})",
                f"{_ttft(pool)} ({fmt_seconds(pool.ttft_slo_s)})",
                "ok" if pool.fits else "BROKEN",
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
    if data.live is not None:
        from fleetopt.render.observe import draw_live

        draw_live(console, data.live)


def drift_markdown(data: DriftDocument | Mapping[str, Any]) -> str:
    """A compact pull-request comment: verdict first, the reasons, a table of pools, the shift."""
    data = _typed(data)
    lines = [f"### fleetopt drift — **{_verdict_line(data)}**", "", _context_line(data), ""]
    if data.reasons:
        lines += md_bullets(r.message for r in data.reasons) + [""]
    fit = data.fit
    if fit is not None:
        headers = ("pool", "instances × slots", "req/s", "utilization (cap)", "P99 TTFT (SLO)")
        headers += ("TTFT headroom", "status")
        rows = [
            (
                name,
                f"{pool.instances:,} × {pool.slots_per_instance}",
                fmt_num(pool.arrival_rate_per_s),
                f"{fmt_num(pool.utilization, 3)} ({pool.max_utilization:g})",
                f"{_ttft(pool)} ({fmt_seconds(pool.ttft_slo_s)})",
                fmt_seconds(pool.ttft_headroom_s),
                "ok" if pool.fits else "**broken**",
            )
            for name, pool in fit.pools.items()
        ]
        lines += md_table(headers, rows, align="lrrrrrl") + [""]
    line = _replan_line(data)
    if line:
        lines += [line[0].upper() + line[1:], ""]
    lines += md_table(("workload", "planned", "today", "change"), _shift_rows(data))
    if data.live is not None:
        from fleetopt.render.observe import LIVE_HEADERS, LIVE_TITLE, live_notes, live_rows

        lines += ["", f"**{LIVE_TITLE}**", ""] + md_table(LIVE_HEADERS, live_rows(data.live))
        notes = live_notes(data.live)
        if notes:
            lines += [""] + md_bullets(notes)
    return "\n".join(lines) + "\n"
