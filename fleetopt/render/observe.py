"""The ``fleetopt observe`` report for people, drawn from its document
(:class:`~fleetopt.io.documents.observe.ObserveDocument`, the same document as
``--format json|yaml``, built below the API by :mod:`fleetopt.io.documents.build_observe`), and
the observed pools of a drift report on live metrics (its ``live`` section). ``fleetopt calibrate
--prometheus``'s report is still a plain dictionary made here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from fleetopt.io.documents.observe import BoundedFigure, ObserveDocument, ObservedPool
from fleetopt.io.documents.typed import from_document
from fleetopt.io.units import fmt_num, fmt_pct, fmt_seconds

if TYPE_CHECKING:
    from rich.console import Console

    from fleetopt.io.documents.drift import LiveDocument


def _typed(data: ObserveDocument | Mapping[str, Any]) -> ObserveDocument:
    """The observe document, typed (plain data is read through its schema)."""
    if isinstance(data, ObserveDocument):
        return data
    return from_document(ObserveDocument, dict(data), "observe report")


def _bounded_seconds(value: BoundedFigure | None) -> str:
    if value is None:
        return "–"
    if value.exact:
        return fmt_seconds(value.estimate)
    upper = "∞" if value.upper is None else fmt_seconds(value.upper)
    return f"{fmt_seconds(value.estimate)} ({fmt_seconds(value.lower)}–{upper})"


def _bounded_share(value: BoundedFigure | None) -> str:
    if value is None:
        return "–"
    if value.exact:
        return fmt_pct(value.estimate)
    return f"{fmt_pct(value.estimate)} ({fmt_pct(value.lower)}–{fmt_pct(value.upper)})"


def _bounded_rate(value: BoundedFigure | None) -> str:
    if value is None:
        return "–"
    if value.exact:
        return fmt_num(value.estimate)
    return f"{fmt_num(value.estimate)} ({fmt_num(value.lower)}–{fmt_num(value.upper)})"


def _rows(data: ObserveDocument) -> list[tuple[str, ObservedPool]]:
    rows = list(data.pools.items())
    if len(rows) > 1:
        rows.append(("fleet", data.fleet))
    return rows


def _p99(figures: Any) -> BoundedFigure | None:
    return None if figures is None else figures.p99


def draw_observe(console: Console, data: ObserveDocument | Mapping[str, Any]) -> None:
    """Per pool: load, latency, SLO attainment and goodput, engine state; then the warnings."""
    from fleetopt.render.layout import FitTable, bullets

    data = _typed(data)
    span, slo = data.span, data.slo
    console.print(
        f"{data.source}: {fmt_num(span.seconds / 3600, 3)} h, {len(data.pools)} pool(s)",
        markup=False,
    )
    load = FitTable(title=f"Load (finished requests; rates per window of {fmt_num(span.window_s)} s)")
    for column in ("pool", "instances", "requests", "mean req/s", "p99 window", "peak window", "preempt/s"):
        load.add_column(column, justify="left" if column == "pool" else "right")
    for name, pool in _rows(data):
        profile = pool.rate_profile
        load.add_row(
            name, fmt_num(pool.instances), fmt_num(int(pool.requests)), fmt_num(pool.rate_per_s),
            fmt_num(None if profile is None else profile.p99_per_s),
            fmt_num(None if profile is None else profile.peak_per_s), fmt_num(pool.preemptions_per_s),
        )  # fmt: skip
    console.print(load)
    title = "Latency: P99 from the buckets (estimate, and the bucket it lies in)"
    if slo.ttft_s is not None:
        title += f"; SLO TTFT {fmt_seconds(slo.ttft_s)}"
        if slo.tpot_s is not None:
            title += f", TPOT {fmt_seconds(slo.tpot_s)}"
    latency = FitTable(title=title)
    columns = ["pool", "P99 TTFT", "mean TTFT", "P99 TPOT"]
    if slo.ttft_s is not None:
        columns += ["within TTFT SLO", "within both", "goodput req/s"]
    for column in columns:
        latency.add_column(column, justify="left" if column == "pool" else "right")
    for name, pool in _rows(data):
        row = [name, _bounded_seconds(_p99(pool.ttft_s)),
               fmt_seconds(None if pool.ttft_s is None else pool.ttft_s.mean),
               _bounded_seconds(_p99(pool.tpot_s))]  # fmt: skip
        if slo.ttft_s is not None:
            met = pool.attainment
            row += [_bounded_share(None if met is None else met.ttft_within_slo),
                    _bounded_share(None if met is None else met.both_within),
                    _bounded_rate(None if met is None else met.goodput_per_s)]  # fmt: skip
        latency.add_row(*row)
    console.print(latency)
    state = FitTable(
        title="Engines (time averages summed over instances; waiting max: the longest queue of one engine)"
    )
    for column in ("pool", "running (mean)", "waiting (mean / max)", "KV usage (mean / max)"):
        state.add_column(column, justify="left" if column == "pool" else "right")
    for name, pool in _rows(data):
        state.add_row(
            name, fmt_num(pool.running_mean), f"{fmt_num(pool.waiting_mean)} / {fmt_num(pool.waiting_max)}",
            f"{fmt_pct(pool.kv_usage_mean)} / {fmt_pct(pool.kv_usage_max)}",
        )  # fmt: skip
    console.print(state)
    summary = data.workload_summary
    if summary is not None:
        where = f", written to {summary.file}" if summary.file else " (--output FILE writes it)"
        console.print(
            f"workload summary: {summary.requests:,} requests, {summary.distinct_lengths:,} "
            f"(prompt, output) lengths from the token buckets, {summary.windows:,} windows{where}",
            markup=False,
        )
    notes = [f"{name}: {note}" for name, pool in data.pools.items() for note in pool.notes]
    if data.warnings or notes:
        console.print("Warnings:", markup=False)
        console.print(bullets([*data.warnings, *notes]))


# -- live drift -----------------------------------------------------------------------------------

#: The columns of the observed pools under a drift report on live metrics.
LIVE_TITLE = "Observed now (Prometheus)"
LIVE_HEADERS = ("pool", "req/s", "P99 TTFT", "within TTFT SLO", "goodput req/s", "KV usage")


def live_rows(live: LiveDocument) -> list[tuple[str, ...]]:
    """One row per observed pool (:data:`LIVE_HEADERS`)."""
    rows = []
    for name, pool in live.pools.items():
        met = pool.attainment
        rows.append(
            (name, fmt_num(pool.rate_per_s), _bounded_seconds(_p99(pool.ttft_s)),
             _bounded_share(None if met is None else met.ttft_within_slo),
             _bounded_rate(None if met is None else met.goodput_per_s), fmt_pct(pool.kv_usage_mean))
        )  # fmt: skip
    return rows


def live_notes(live: LiveDocument) -> list[str]:
    """The warnings, the undecided pools and the pools' notes of the live section."""
    notes = list(live.warnings)
    if live.undecided:
        notes.append(
            f"the buckets cannot decide whether {', '.join(live.undecided)} meet(s) the SLO (it lies "
            "inside a bucket and the share straddles 99%)"
        )
    notes += [f"{name}: {note}" for name, pool in live.pools.items() for note in pool.notes]
    return notes


def draw_live(console: Console, live: LiveDocument) -> None:
    """The observed pools under the drift report."""
    from fleetopt.render.layout import FitTable, bullets

    table = FitTable(title=LIVE_TITLE)
    for column in LIVE_HEADERS:
        table.add_column(column, justify="left" if column == "pool" else "right")
    for row in live_rows(live):
        table.add_row(*row)
    console.print(table)
    notes = live_notes(live)
    if notes:
        console.print(bullets(notes))


# -- calibration from production ------------------------------------------------------------------


def _median_abs(values: Any) -> float | None:
    import numpy as np

    return None if values is None or len(values) == 0 else float(np.median(np.abs(values)))


def production_calibration_document(result: Any) -> dict[str, Any]:
    """``fleetopt calibrate --prometheus`` as one plain dictionary."""
    pools = {}
    for name, check in result.checks.items():
        w = check.windows
        pools[name] = {
            "windows": w.rows,
            "concurrency_levels": check.concurrency_levels,
            "concurrency_range": [float(w.concurrency.min()), float(w.concurrency.max())],
            "tpot_median_abs_pct_error": _median_abs(check.tpot_pct_errors),
            "ttft_median_abs_pct_error": _median_abs(check.ttft_pct_errors),
            "refit": check.refit,
            "refit_tpot_median_abs_pct_error": _median_abs(check.refit_tpot_pct_errors),
            "refit_ttft_median_abs_pct_error": _median_abs(check.refit_ttft_pct_errors),
            "not_identified": check.not_identified,
            "rows": [
                {
                    "concurrency_per_instance": float(w.concurrency[k]),
                    "input_tokens_mean": float(w.input_tokens[k]),
                    "output_tokens_mean": float(w.output_tokens[k]),
                    "tpot_s": float(w.tpot_s[k]),
                    "predicted_tpot_s": float(check.predicted_tpot_s[k]),
                    "ttft_minus_queue_s": float(w.ttft_s[k]),
                    "predicted_ttft_minus_queue_s": float(check.predicted_ttft_s[k]),
                }
                for k in range(w.rows)
            ],
        }
    return {
        "kind": "fleetopt-calibrate-live",
        "profile": result.profile,
        "parameters": result.parameters,
        "prefill_chunk_tokens": result.prefill_chunk_tokens,
        "window_s": result.window_s,
        "pools": pools,
        "warnings": list(result.warnings),
    }


def draw_production_calibration(console: Console, data: Mapping[str, Any]) -> None:
    """Per pool: how far the profile's predictions are from the observed means, and the refit."""
    from fleetopt.render.layout import FitTable, bullets

    console.print(
        f"profile {data['profile']} against windows of {fmt_num(data['window_s'])} s of observed load",
        markup=False,
    )
    table = FitTable(title="Profile vs observed means (median |error| over windows)")
    for column in ("pool", "windows", "concurrency / instance", "TPOT", "TTFT − queue", "refit W, H, τ, T0"):
        table.add_column(column, justify="left" if column in ("pool", "refit W, H, τ, T0") else "right")
    for name, pool in data["pools"].items():
        low, high = pool["concurrency_range"]
        refit = pool["refit"]
        text = (
            pool["not_identified"]
            if refit is None
            else f"W {fmt_seconds(refit['iteration_base_s'])}, "
            f"H {fmt_seconds(refit['iteration_per_slot_s'])}, "
            f"τ {refit['prefill_per_token_s'] * 1e6:.3g} µs, T0 {fmt_seconds(refit['ttft_overhead_s'])} "
            f"(|error| {fmt_num(pool['refit_tpot_median_abs_pct_error'], 3)}% / "
            f"{fmt_num(pool['refit_ttft_median_abs_pct_error'], 3)}%)"
        )
        table.add_row(
            name, fmt_num(pool["windows"]), f"{fmt_num(low, 3)}–{fmt_num(high, 3)}",
            f"{fmt_num(pool['tpot_median_abs_pct_error'], 3)}%",
            f"{fmt_num(pool['ttft_median_abs_pct_error'], 3)}%",
            text,
        )  # fmt: skip
    console.print(table)
    if data["warnings"]:
        console.print(bullets(data["warnings"]))
