"""The ``fleetopt observe`` report and the live part of ``fleetopt drift --prometheus``: one
dictionary (JSON/YAML) and tables for people."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from fleetopt.core.histograms import Bounded, quantile
from fleetopt.core.observed import P99, attainment, rate_profile
from fleetopt.io.units import fmt_num, fmt_pct, fmt_seconds

if TYPE_CHECKING:
    from rich.console import Console

OBSERVE_KIND = "fleetopt-observe"


def _iso(moment_s: float) -> str:
    import numpy as np

    return str(np.datetime64(int(moment_s), "s")) + "Z"


def bounded(value: Bounded | None) -> dict[str, Any] | None:
    """A bounded figure as {estimate, lower, upper, exact} (None for +Inf)."""
    if value is None:
        return None

    def finite(x: float) -> float | None:
        return x if math.isfinite(x) else None

    return {
        "estimate": finite(value.estimate),
        "lower": finite(value.lower),
        "upper": finite(value.upper),
        "exact": value.exact,
    }


def _token_figures(histogram: Any) -> dict[str, Any] | None:
    if histogram is None:
        return None
    return {
        "mean": histogram.mean,
        "p50": bounded(quantile(histogram, 0.5)),
        "p90": bounded(quantile(histogram, 0.9)),
        "p99": bounded(quantile(histogram, P99)),
        "buckets_le": [None if math.isinf(e) else e for e in histogram.upper_edges.tolist()],
    }


def pool_document(pool: Any, run: Any) -> dict[str, Any]:
    """One pool's figures (or the fleet's)."""
    profile = rate_profile(pool)
    result = run.attainment.get(pool.pool)
    if result is None and run.ttft_slo_s is not None and pool.ttft is not None:
        result = attainment(pool, run.ttft_slo_s, run.tpot_slo_s)
    workload = run.workloads.get(pool.pool)
    return {
        "instances": pool.instances,
        "requests": pool.requests,
        "rate_per_s": pool.request_rate_per_s,
        "rate_profile": None
        if profile is None
        else {
            "window_s": profile.window_s,
            "windows": profile.windows,
            "mean_per_s": profile.mean_per_s,
            "p50_per_s": profile.p50_per_s,
            "p99_per_s": profile.p99_per_s,
            "peak_per_s": profile.peak_per_s,
        },
        "ttft_s": None
        if pool.ttft is None
        else {"mean": pool.ttft.mean, "p99": bounded(quantile(pool.ttft, P99))},
        "tpot_s": None
        if pool.tpot is None
        else {
            "mean": pool.tpot.mean,
            "p99": bounded(quantile(pool.tpot, P99)),
            "per": "request" if pool.tpot_per_request else "output token",
        },
        "queue_time_mean_s": None if pool.queue_time is None else pool.queue_time.mean,
        "running_mean": pool.running_mean,
        "waiting_mean": pool.waiting_mean,
        "waiting_max": pool.waiting_max,
        "kv_usage_mean": pool.kv_usage_mean,
        "kv_usage_max": pool.kv_usage_max,
        "preemptions_per_s": pool.preemption_rate_per_s,
        "attainment": None
        if result is None
        else {
            "ttft_within_slo": bounded(result.ttft_share),
            "tpot_within_slo": bounded(result.tpot_share),
            "tpot_share_per": "request" if result.tpot_per_request else "output token",
            "both_within": bounded(result.both),
            "goodput_per_s": bounded(result.goodput_per_s),
            "goodput_ignores_tpot": result.goodput_ignores_tpot,
        },
        "prompt_tokens": _token_figures(pool.prompt_tokens),
        "generation_tokens": _token_figures(pool.generation_tokens),
        "workload_placement": None
        if workload is None
        else {
            "prompt_position_in_bucket": workload.prompt.position,
            "generation_position_in_bucket": workload.generation.position,
            "means_matched": workload.prompt.mean_matched and workload.generation.mean_matched,
            "outputs_shortened_to_context": workload.capped_requests,
        },
        "missing": list(pool.missing),
        "notes": list(pool.notes),
    }


def observe_document(run: Any, summary_file: str | None = None) -> dict[str, Any]:
    """The ``fleetopt observe`` report as one plain dictionary (docs/observe.md)."""
    summary = run.summary
    return {
        "kind": OBSERVE_KIND,
        "source": run.source,
        "span": {
            "start": _iso(run.start_s),
            "end": _iso(run.end_s),
            "seconds": run.end_s - run.start_s,
            "window_s": run.window_s,
        },
        "metrics": dict(run.metrics),
        "slo": {"ttft_s": run.ttft_slo_s, "tpot_s": run.tpot_slo_s},
        "plan": None if run.plan is None else run.plan.source.removeprefix("plan "),
        "pools": {pool.pool: pool_document(pool, run) for pool in run.pools},
        "fleet": pool_document(run.fleet, run),
        "workload_summary": None
        if summary is None
        else {
            "file": summary_file,
            "requests": summary.request_count,
            "distinct_lengths": int(summary.counts.size),
            "windows": int(summary.window_counts.size),
            "window_s": None if summary.window_us is None else summary.window_us / 1e6,
        },
        "warnings": list(run.warnings),
    }


def _bounded_seconds(value: Mapping[str, Any] | None) -> str:
    if value is None:
        return "–"
    if value["exact"]:
        return fmt_seconds(value["estimate"])
    upper = "∞" if value["upper"] is None else fmt_seconds(value["upper"])
    return f"{fmt_seconds(value['estimate'])} ({fmt_seconds(value['lower'])}–{upper})"


def _bounded_share(value: Mapping[str, Any] | None) -> str:
    if value is None:
        return "–"
    if value["exact"]:
        return fmt_pct(value["estimate"])
    return f"{fmt_pct(value['estimate'])} ({fmt_pct(value['lower'])}–{fmt_pct(value['upper'])})"


def _bounded_rate(value: Mapping[str, Any] | None) -> str:
    if value is None:
        return "–"
    if value["exact"]:
        return fmt_num(value["estimate"])
    return f"{fmt_num(value['estimate'])} ({fmt_num(value['lower'])}–{fmt_num(value['upper'])})"


def _rows(data: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    rows = list(data["pools"].items())
    if len(rows) > 1:
        rows.append(("fleet", data["fleet"]))
    return rows


def draw_observe(console: Console, data: Mapping[str, Any]) -> None:
    """Per pool: load, latency, SLO attainment and goodput, engine state; then the warnings."""
    from fleetopt.render.layout import FitTable, bullets

    span = data["span"]
    console.print(
        f"{data['source']}: {fmt_num(span['seconds'] / 3600, 3)} h, {len(data['pools'])} pool(s)",
        markup=False,
    )
    slo = data["slo"]
    load = FitTable(title=f"Load (finished requests; rates per window of {fmt_num(span['window_s'])} s)")
    for column in ("pool", "instances", "requests", "mean req/s", "p99 window", "peak window", "preempt/s"):
        load.add_column(column, justify="left" if column == "pool" else "right")
    for name, pool in _rows(data):
        profile = pool["rate_profile"] or {}
        load.add_row(
            name, fmt_num(pool["instances"]), fmt_num(int(pool["requests"])), fmt_num(pool["rate_per_s"]),
            fmt_num(profile.get("p99_per_s")), fmt_num(profile.get("peak_per_s")),
            fmt_num(pool["preemptions_per_s"]),
        )  # fmt: skip
    console.print(load)
    title = "Latency: P99 from the buckets (estimate, and the bucket it lies in)"
    if slo["ttft_s"] is not None:
        title += f"; SLO TTFT {fmt_seconds(slo['ttft_s'])}"
        if slo["tpot_s"] is not None:
            title += f", TPOT {fmt_seconds(slo['tpot_s'])}"
    latency = FitTable(title=title)
    columns = ["pool", "P99 TTFT", "mean TTFT", "P99 TPOT"]
    if slo["ttft_s"] is not None:
        columns += ["within TTFT SLO", "within both", "goodput req/s"]
    for column in columns:
        latency.add_column(column, justify="left" if column == "pool" else "right")
    for name, pool in _rows(data):
        ttft, tpot, met = pool["ttft_s"] or {}, pool["tpot_s"] or {}, pool["attainment"] or {}
        row = [name, _bounded_seconds(ttft.get("p99")), fmt_seconds(ttft.get("mean")),
               _bounded_seconds(tpot.get("p99"))]  # fmt: skip
        if slo["ttft_s"] is not None:
            row += [_bounded_share(met.get("ttft_within_slo")), _bounded_share(met.get("both_within")),
                    _bounded_rate(met.get("goodput_per_s"))]  # fmt: skip
        latency.add_row(*row)
    console.print(latency)
    state = FitTable(
        title="Engines (time averages summed over instances; waiting max: the longest queue of one engine)"
    )
    for column in ("pool", "running (mean)", "waiting (mean / max)", "KV usage (mean / max)"):
        state.add_column(column, justify="left" if column == "pool" else "right")
    for name, pool in _rows(data):
        state.add_row(
            name, fmt_num(pool["running_mean"]),
            f"{fmt_num(pool['waiting_mean'])} / {fmt_num(pool['waiting_max'])}",
            f"{fmt_pct(pool['kv_usage_mean'])} / {fmt_pct(pool['kv_usage_max'])}",
        )  # fmt: skip
    console.print(state)
    summary = data["workload_summary"]
    if summary is not None:
        where = f", written to {summary['file']}" if summary["file"] else " (--output FILE writes it)"
        console.print(
            f"workload summary: {summary['requests']:,} requests, {summary['distinct_lengths']:,} "
            f"(prompt, output) lengths from the token buckets, {summary['windows']:,} windows{where}",
            markup=False,
        )
    notes = [f"{name}: {note}" for name, pool in data["pools"].items() for note in pool["notes"]]
    if data["warnings"] or notes:
        console.print("Warnings:", markup=False)
        console.print(bullets([*data["warnings"], *notes]))


# -- live drift -----------------------------------------------------------------------------------


def finding_sentence(finding: Any, ttft_slo_s: float, tpot_slo_s: float | None, min_load: float) -> str:
    """A live finding in words."""
    if finding.kind in ("slo_missed", "tpot_missed"):
        what, limit = ("TTFT", ttft_slo_s) if finding.kind == "slo_missed" else ("TPOT", tpot_slo_s or 0.0)
        return (
            f"{finding.pool} pool misses its SLO now: at most {fmt_pct(finding.observed)} of its requests "
            f"had a {what} within {fmt_seconds(limit)} (P99 needs 99%)"
        )
    return (
        f"{finding.pool} pool runs well below its plan: {fmt_num(finding.observed)} req/s observed, "
        f"{fmt_num(finding.planned)} req/s planned (under {min_load:.0%})"
    )


def live_drift_document(run: Any, base: dict[str, Any], prometheus_url: str) -> dict[str, Any]:
    """The drift report (:func:`fleetopt.render.drift.drift_document`) with the live findings added
    to its reasons and verdict, and a ``live`` section (the observation)."""
    observed = run.observed
    reasons = list(base["reasons"])
    for finding in run.findings:
        reasons.append(
            {
                "check": finding.kind,
                "pool": finding.pool,
                "message": finding_sentence(finding, observed.ttft_slo_s, observed.tpot_slo_s, run.min_load),
            }
        )
    data = dict(base)
    data["reasons"] = reasons
    data["verdict"] = "drift" if reasons else "fits"
    data["exit_code"] = 1 if reasons else 0
    shift = dict(data["shift"])
    shift["ks_total_tokens"] = dict(
        shift["ks_total_tokens"],
        note="not checked on live data: bucketed token histograms do not determine total tokens",
    )
    data["shift"] = shift
    data["live"] = {
        "prometheus": prometheus_url,
        "min_load": run.min_load,
        "undecided": list(run.undecided),
        **{k: v for k, v in observe_document(observed).items() if k in ("span", "metrics", "pools", "fleet")},
        "warnings": list(observed.warnings),
    }
    return data


def draw_live(console: Console, data: Mapping[str, Any]) -> None:
    """The observed pools under the drift report."""
    from fleetopt.render.layout import FitTable, bullets

    live = data["live"]
    table = FitTable(title="Observed now (Prometheus)")
    for column in ("pool", "req/s", "P99 TTFT", "within TTFT SLO", "goodput req/s", "KV usage"):
        table.add_column(column, justify="left" if column == "pool" else "right")
    for name, pool in live["pools"].items():
        met = pool["attainment"] or {}
        table.add_row(
            name, fmt_num(pool["rate_per_s"]), _bounded_seconds((pool["ttft_s"] or {}).get("p99")),
            _bounded_share(met.get("ttft_within_slo")), _bounded_rate(met.get("goodput_per_s")),
            fmt_pct(pool["kv_usage_mean"]),
        )  # fmt: skip
    console.print(table)
    notes = list(live["warnings"])
    if live["undecided"]:
        notes.append(
            f"the buckets cannot decide whether {', '.join(live['undecided'])} meet(s) the SLO (it lies "
            "inside a bucket and the share straddles 99%)"
        )
    notes += [f"{name}: {note}" for name, pool in live["pools"].items() for note in pool["notes"]]
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
