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
            "protocol": b.protocol[k],
            "statistic": b.statistic[k],
            "concurrency": float(b.concurrency[k]) if np.isfinite(b.concurrency[k]) else None,
            "request_rate_per_s": float(b.request_rate_per_s[k]) if b.protocol[k] == "open" else None,
            "input_tokens": float(b.input_tokens[k]),
            "output_tokens": float(b.output_tokens[k]),
            "tpot_measured_ms": float(b.tpot_s[k] * 1e3),
            "tpot_predicted_ms": float(tpot_s[k] * 1e3),
            "ttft_measured_ms": float(b.ttft_s[k] * 1e3),
            "ttft_predicted_ms": float(ttft_s[k] * 1e3),
        }
        for k in range(b.rows)
    ]


#: The isolated-prefill TTFT error (median over concurrency-1 rows) above which --check warns.
ISOLATED_PREFILL_WARNING_PCT = 10.0
#: (key in the document, unit factor from seconds, unit) of each parameter.
_UNITS = (
    ("iteration_base_ms", 1e3), ("iteration_per_slot_ms", 1e3), ("prefill_per_token_us", 1e6),
    ("iteration_per_kv_token_ns", 1e9), ("ttft_overhead_ms", 1e3),
)  # fmt: skip


def calibration_document(run: Any) -> dict[str, Any]:
    """The fitted parameters (ms/µs as in a profile) with their intervals, the errors and the per-row
    predictions."""
    from fleetopt.core.calibrate import PARAMETERS

    fit, measurements = run.fit, run.measurements
    b = measurements.benchmark
    tpot = b.tpot_s * (1.0 + fit.tpot_pct_errors / 100.0)
    ttft = b.ttft_s * (1.0 + fit.ttft_pct_errors / 100.0)
    parameters, intervals, errors = {}, {}, {}
    for name, (key, factor) in zip(PARAMETERS, _UNITS, strict=True):
        k = PARAMETERS.index(name)
        parameters[key] = float(fit.parameters[k] * factor)
        if name in fit.fitted:
            intervals[key] = [float(v * factor) for v in fit.intervals_s[k]]
            errors[key] = float(fit.standard_errors_s[k] * factor)
    document: dict[str, Any] = {
        "kind": "fleetopt-calibration",
        "sources": list(measurements.sources),
        "formats": sorted(set(measurements.formats)),
        "filter": measurements.row_filter.describe(),
        "rows": fit.rows,
        "protocols": sorted(set(b.protocol)),
        "prefill_chunk_tokens": fit.prefill_chunk_tokens,
        "parameters": parameters,
        "intervals_p10_p90": intervals,
        "standard_errors": errors,
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
    """A profile's predictions against measured rows: the error summary overall, per protocol and
    input length, on the concurrency-1 rows, and a warning when their TTFT (an isolated prefill) is
    off by more than :data:`ISOLATED_PREFILL_WARNING_PCT`."""
    b = check.measurements.benchmark
    tpot_errors = (check.predicted_tpot_s / b.tpot_s - 1.0) * 100.0
    ttft_errors = (check.predicted_ttft_s / b.ttft_s - 1.0) * 100.0
    groups = []
    protocols = np.asarray(b.protocol)
    for protocol in sorted(set(b.protocol)):
        for tokens in sorted(set(np.round(b.input_tokens[protocols == protocol]))):
            rows = (protocols == protocol) & (np.round(b.input_tokens) == tokens)
            groups.append(
                {"protocol": protocol, "input_tokens": float(tokens), "rows": int(rows.sum()),
                 "tpot": _summary(tpot_errors[rows]), "ttft": _summary(ttft_errors[rows])}
            )  # fmt: skip
    alone = (b.concurrency == 1) & (protocols != "open")
    isolated = None
    warnings = []
    if alone.any():
        isolated = {
            "rows": int(alone.sum()),
            "tpot": _summary(tpot_errors[alone]),
            "ttft": _summary(ttft_errors[alone]),
        }
        if isolated["ttft"]["median_abs_pct_error"] > ISOLATED_PREFILL_WARNING_PCT:
            warnings.append(
                "the isolated-prefill TTFT (concurrency 1) is off by "
                f"{isolated['ttft']['median_abs_pct_error']:.1f}% "
                f"(median), more than {ISOLATED_PREFILL_WARNING_PCT:g}%: the profile's τ or T0 does not "
                "describe this engine; refit with these rows"
            )
    else:
        warnings.append(
            "no concurrency-1 rows: the isolated prefill (τ and T0 alone) is not checked; add one run at "
            "concurrency 1 per input length"
        )
    return {
        "kind": "fleetopt-calibration-check",
        "profile": check.profile,
        "sources": list(check.measurements.sources),
        "filter": check.measurements.row_filter.describe(),
        "rows": b.rows,
        "tpot": _summary(tpot_errors),
        "ttft": _summary(ttft_errors),
        "by_protocol_and_input": groups,
        "concurrency_1": isolated,
        "warnings": warnings,
        "per_row": _rows(check.measurements, check.predicted_tpot_s, check.predicted_ttft_s),
    }


def _row_table(document: Mapping[str, Any]) -> Any:
    from fleetopt.render.layout import FitTable

    table = FitTable(title="Measured vs predicted")
    for column in ("row", "c", "in", "out", "TPOT meas.", "TPOT pred.", "TTFT meas.", "TTFT pred."):
        table.add_column(column, justify="left" if column == "row" else "right", wrap=column == "row")
    for row in document["per_row"]:
        table.add_row(
            row["row"],
            fmt_num(row["concurrency"])
            if row["protocol"] != "open"
            else f"{fmt_num(row['request_rate_per_s'])}/s",
            fmt_num(row["input_tokens"]),
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
    intervals = document["intervals_p10_p90"]

    def shown(key: str, unit: str, digits: str) -> str:
        text = f"{p[key]:{digits}} {unit}"
        if key in intervals:
            low, high = intervals[key]
            text += f" [{low:{digits}}–{high:{digits}}]"
        return text

    console.print(
        f"W = {shown('iteration_base_ms', 'ms', '.3f')}, "
        f"H = {shown('iteration_per_slot_ms', 'ms', '.4f')} per decoding sequence, "
        f"τ = {shown('prefill_per_token_us', 'µs', '.2f')} per prompt token, "
        f"T0 = {shown('ttft_overhead_ms', 'ms', '.1f')}"
        + (
            f", κ = {shown('iteration_per_kv_token_ns', 'ns', '.4f')} per KV token"
            if "iteration_per_kv_token_ns" in intervals
            else ""
        )
        + f" ([10th–90th percentile] over a bootstrap of rows; protocols: {', '.join(document['protocols'])})"
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
    for group in document["by_protocol_and_input"]:
        label = f"{group['protocol']}, {fmt_num(group['input_tokens'])}-token inputs ({group['rows']} rows): "
        console.print(_errors_line(group, label))
    if document["concurrency_1"] is not None:
        console.print(
            _errors_line(
                document["concurrency_1"], f"concurrency 1 ({document['concurrency_1']['rows']} rows): "
            )
        )
    for warning in document["warnings"]:
        console.print(f"warning: {warning}")
    console.print(_row_table(document))
