"""``fleetopt calibrate``: the fitted calibration, or a profile checked against measurements.

The document (``--format json|yaml``) is built here once; the table is drawn from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from fleetopt.io.units import fmt_num


def _summary(errors_pct: np.ndarray) -> dict[str, float]:
    absolute = np.abs(np.asarray(errors_pct, dtype=np.float64))
    return {
        "median_abs_pct_error": round(float(np.median(absolute)), 2),
        "max_abs_pct_error": round(float(absolute.max()), 2),
    }


def _rows(measurements: Any, tpot_s: np.ndarray, ttft_s: np.ndarray) -> list[dict[str, Any]]:
    b = measurements.benchmark
    return [
        {
            "row": measurements.labels[k],
            "concurrency": float(b.concurrency[k]),
            "input_tokens": float(b.input_tokens[k]),
            "output_tokens": float(b.output_tokens[k]),
            "tpot_measured_ms": float(b.tpot_s[k] * 1e3),
            "tpot_predicted_ms": float(tpot_s[k] * 1e3),
            "ttft_measured_ms": float(b.ttft_s[k] * 1e3),
            "ttft_predicted_ms": float(ttft_s[k] * 1e3),
        }
        for k in range(b.rows)
    ]


def calibration_document(run: Any) -> dict[str, Any]:
    """The fitted parameters (ms/µs as in a profile), the errors and the per-row predictions."""
    from fleetopt.core.calibrate import predict

    fit, measurements = run.fit, run.measurements
    tpot, ttft = predict(fit.parameters, measurements.benchmark, fit.prefill_chunk_tokens)
    document: dict[str, Any] = {
        "kind": "fleetopt-calibration",
        "sources": list(measurements.sources),
        "formats": sorted(set(measurements.formats)),
        "filter": measurements.row_filter.describe(),
        "rows": fit.rows,
        "prefill_chunk_tokens": fit.prefill_chunk_tokens,
        "parameters": {
            "iteration_base_ms": fit.iteration_base_s * 1e3,
            "iteration_per_slot_ms": fit.iteration_per_slot_s * 1e3,
            "prefill_per_token_us": fit.prefill_per_token_s * 1e6,
            "iteration_per_kv_token_ns": fit.iteration_per_kv_token_s * 1e9,
            "ttft_overhead_ms": fit.ttft_overhead_s * 1e3,
            "benchmark_prefill_overlap_us": fit.benchmark_prefill_overlap_s * 1e6,
        },
        "tpot": _summary(fit.tpot_pct_errors),
        "ttft": _summary(fit.ttft_pct_errors),
        "leave_one_out": None
        if run.leave_one_out is None
        else {"tpot": _summary(run.leave_one_out[0]), "ttft": _summary(run.leave_one_out[1])},
        "output": run.output,
        "per_row": _rows(measurements, tpot, ttft),
    }
    return document


def check_document(check: Any) -> dict[str, Any]:
    """A profile's predictions against measured rows, with the error summary."""
    b = check.measurements.benchmark
    tpot_errors = (check.predicted_tpot_s / b.tpot_s - 1.0) * 100.0
    ttft_errors = (check.predicted_ttft_s / b.ttft_s - 1.0) * 100.0
    return {
        "kind": "fleetopt-calibration-check",
        "profile": check.profile,
        "sources": list(check.measurements.sources),
        "filter": check.measurements.row_filter.describe(),
        "rows": b.rows,
        "tpot": _summary(tpot_errors),
        "ttft": _summary(ttft_errors),
        "per_row": _rows(check.measurements, check.predicted_tpot_s, check.predicted_ttft_s),
    }


def _row_table(document: Mapping[str, Any]) -> Any:
    from fleetopt.render.layout import FitTable

    table = FitTable(title="Measured vs predicted")
    for column in ("row", "c", "in", "out", "TPOT meas.", "TPOT pred.", "TTFT meas.", "TTFT pred."):
        table.add_column(column, justify="left" if column == "row" else "right", wrap=column == "row")
    for row in document["per_row"]:
        table.add_row(
            row["row"], fmt_num(row["concurrency"]), fmt_num(row["input_tokens"]),
            fmt_num(row["output_tokens"]),
            f"{row['tpot_measured_ms']:.2f} ms", f"{row['tpot_predicted_ms']:.2f} ms",
            f"{row['ttft_measured_ms']:.1f} ms", f"{row['ttft_predicted_ms']:.1f} ms",
        )  # fmt: skip
    return table


def _errors_line(document: Mapping[str, Any], label: str = "") -> str:
    tpot, ttft = document["tpot"], document["ttft"]
    return (
        f"{label}|error| TPOT median {tpot['median_abs_pct_error']:.1f}% "
        f"(max {tpot['max_abs_pct_error']:.1f}%), "
        f"TTFT median {ttft['median_abs_pct_error']:.1f}% (max {ttft['max_abs_pct_error']:.1f}%)"
    )


def draw_calibration(console: Any, document: Mapping[str, Any]) -> None:
    """The fit for people: parameters, errors, per-row table."""
    p = document["parameters"]
    console.print(
        f"fleetopt calibrate — {document['rows']} rows "
        f"({', '.join(document['formats'])}; {document['filter']}), "
        f"chunk {document['prefill_chunk_tokens']:,} tokens"
    )
    console.print(
        f"W = {p['iteration_base_ms']:.3f} ms, "
        f"H = {p['iteration_per_slot_ms']:.4f} ms per decoding sequence, "
        f"τ = {p['prefill_per_token_us']:.2f} µs per prompt token, T0 = {p['ttft_overhead_ms']:.1f} ms "
        f"(benchmark prefill overlap ζ = {p['benchmark_prefill_overlap_us']:.3g} µs, not used in planning)"
    )
    console.print(_errors_line(document, "fitted rows: "))
    if document["leave_one_out"] is not None:
        console.print(_errors_line(document["leave_one_out"], "leave-one-out: "))
    console.print(_row_table(document))
    if document["output"]:
        console.print(f"wrote {document['output']}")


def draw_check(console: Any, document: Mapping[str, Any]) -> None:
    """A profile checked against measurements, for people."""
    console.print(
        f"fleetopt calibrate --check — profile {document['profile']} against {document['rows']} rows "
        f"({document['filter']})"
    )
    console.print(_errors_line(document))
    console.print(_row_table(document))
